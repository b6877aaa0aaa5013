"""Small pipelines' inputs and outputs for the conditional tests."""

from __future__ import annotations

import numpy as np

from chute import fn


def per_sample(values, dtype=np.int32, declared=True):
    """An external_source whose sample i is ``values[i]`` (``declared``: its dtype is
    known at build time)."""
    return fn.external_source(
        source=lambda info: np.array(values[info.idx_in_batch], dtype),
        batch=False,
        dtype=dtype if declared else None,
    )


def samples(batch):
    """A batch's samples as Python values."""
    return [np.asarray(batch.at(i)).tolist() for i in range(len(batch))]


def run(pipe_fn, batch_size, **kwargs):
    """One batch of a @pipeline_def function, on the CPU with seed 7."""
    pipe = pipe_fn(batch_size=batch_size, num_threads=2, device_id=None, seed=7, **kwargs)
    return pipe.run()
