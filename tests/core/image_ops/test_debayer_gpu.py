"""GPU backend of fn.debayer against the CPU one (exact), and its table without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, pipeline_def
from chute.ops.image.debayer_gpu import IMAGE_DTYPE, debayer_table


def run_both(graph, data, layout="HW", **sources):
    results = []
    for device in ("cpu", "gpu"):

        @pipeline_def(batch_size=len(data), num_threads=2, device_id=0 if device == "gpu" else None)
        def pipe():
            x = fn.external_source(source=lambda: data, layout=layout)
            named = {k: fn.external_source(source=lambda v=v: v) for k, v in sources.items()}
            return graph(x.gpu() if device == "gpu" else x, **named)

        p = pipe()
        p.build()
        (out,) = p.run()
        out = out.as_cpu() if hasattr(out, "as_cpu") else out
        results.append([np.asarray(out.at(i)) for i in range(len(data))])
    return results


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_debayer_gpu_matches_cpu(dtype):
    rng = np.random.default_rng(0)
    hi = 256 if dtype == np.uint8 else 65536
    data = [rng.integers(0, hi, s).astype(dtype) for s in ((6, 8), (2, 2), (40, 30), (4, 2))]
    positions = [np.array(p, np.int32) for p in ((0, 0), (0, 1), (1, 0), (1, 1))]
    cpu, gpu = run_both(lambda x, b: fn.debayer(x, blue_position=b), data, b=positions)
    for c, g in zip(cpu, gpu):
        assert c.shape == g.shape and c.dtype == g.dtype
        np.testing.assert_array_equal(g, c)


@pytest.mark.gpu
def test_debayer_gpu_sequences():
    rng = np.random.default_rng(1)
    data = [rng.integers(0, 256, (f, 6, 8)).astype(np.uint8) for f in (1, 3, 0)]
    cpu, gpu = run_both(
        lambda x: fn.experimental.debayer(x, blue_position=[1, 0], algorithm="bilinear_ocv"),
        data,
        layout="FHW",
    )
    for c, g in zip(cpu, gpu):
        assert c.shape == g.shape
        np.testing.assert_array_equal(g, c)


def test_debayer_table_rows():
    table, offsets, total = debayer_table(
        np.array([7, 9], np.uint64), np.array([8, 4]), np.array([[6, 8], [2, 4]]), [[1, 0], [0, 1]]
    )
    assert table.dtype == IMAGE_DTYPE
    np.testing.assert_array_equal(table["out_off"], [0, 144])
    assert total == 144 + 24
    np.testing.assert_array_equal(table["by"], [1, 0])
    np.testing.assert_array_equal(table["bx"], [0, 1])
    np.testing.assert_array_equal(table["in_row"], [8, 4])
