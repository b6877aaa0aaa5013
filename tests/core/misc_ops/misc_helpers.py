"""Run one expression over given batches in a pipeline (CPU, or GPU with device_id=0)."""

from __future__ import annotations

import io

import numpy as np

from chute import fn, pipeline_def


def run(expr, *batches, layout=None, num_threads=2, seed=0, device_id=None, batch_size=None):
    """Outputs of ``expr(*external_sources)`` for one batch per input, as host TensorLists.

    ``layout`` applies to the first input only (the others are argument inputs).
    """
    size = batch_size or (len(batches[0]) if batches else 2)

    @pipeline_def(batch_size=size, num_threads=num_threads, seed=seed, device_id=device_id)
    def pipe():
        nodes = [
            fn.external_source(source=lambda b=b: b, **({"layout": layout} if i == 0 else {}))
            for i, b in enumerate(batches)
        ]
        out = expr(*nodes)
        return tuple(out) if isinstance(out, (list, tuple)) else out

    p = pipe()
    p.build()
    outs = p.run()
    p.close()
    return [o.as_cpu() if hasattr(o, "as_cpu") else o for o in outs]


def npy_bytes(array: np.ndarray) -> np.ndarray:
    """The bytes of ``np.save(array)`` as a 1-D uint8 sample."""
    buf = io.BytesIO()
    np.save(buf, array)
    return np.frombuffer(buf.getvalue(), np.uint8)
