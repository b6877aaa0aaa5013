"""GPU backends of the tensor operators, reductions and math functions against the CPU.

Each case runs one pipeline with the operator on ``x.gpu()`` (device_id=0) and the same
pipeline on the CPU, on a dense batch and on a ragged one; outputs must match within
1e-5 relative (exactly, in practice, for moves and integer results).
"""

from __future__ import annotations

import numpy as np
import pytest
from tensor_helpers import run

from chute import fn

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(1)
DENSE = [RNG.random((3, 4, 2)).astype(np.float32) for _ in range(4)]
RAGGED = [RNG.random((s, 4, 2)).astype(np.float32) for s in (3, 1, 5, 2)]


def _beside(x, y):
    """``y`` on ``x``'s device (the CPU pipeline must not copy to the GPU)."""
    return y.gpu() if x.device == "gpu" else y


CASES = {
    "squeeze": lambda x: fn.squeeze(fn.expand_dims(x, axes=[1]), axes=[1]),
    "expand_dims": lambda x: fn.expand_dims(x, axes=[0], new_axis_names="A"),
    "reinterpret": lambda x: fn.reinterpret(x, dtype=np.int32),
    "cast_like": lambda x: fn.cast_like(x * 300, _beside(x, fn.zeros(dtype=np.uint8))),
    "one_hot": lambda x: fn.one_hot(fn.cast(x * 4, dtype=np.int32), num_classes=3, axis=1),
    "element_extract": lambda x: fn.element_extract(x, element_map=[0]),
    "sequence_rearrange": lambda x: fn.sequence_rearrange(x, new_order=[0, 0]),
    "permute_batch": lambda x: fn.permute_batch(x, indices=[3, 0, 0, 1]),
    "sum": lambda x: fn.reductions.sum(x, axes=[0, 2]),
    "mean_keep": lambda x: fn.reductions.mean(x, axis_names="W", keep_dims=True),
    "max": lambda x: fn.reductions.max(x),
    "std_dev": lambda x: fn.reductions.std_dev(x, fn.reductions.mean(x, axes=0), axes=0),
    "variance": lambda x: fn.reductions.variance(x, 0.5, ddof=1),
    "rms": lambda x: fn.reductions.rms(x, axes=[1]),
    "atanh": lambda x: fn.math.atanh(x * 0.5),
    "cbrt": lambda x: fn.math.cbrt(x - 0.5),
    "log10": lambda x: fn.math.log10(x + 1),
    "fpow": lambda x: fn.math.fpow(x, 1.5),
}


@pytest.mark.parametrize("batch", [DENSE, RAGGED], ids=["dense", "ragged"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_gpu_matches_cpu(name, batch):
    expr = CASES[name]
    (cpu,) = run(expr, batch, layout="FWC")
    (gpu,) = run(lambda x: expr(x.gpu()), batch, layout="FWC", device_id=0)
    assert gpu.dtype == cpu.dtype and gpu.shape() == cpu.shape()
    assert gpu.layout() == cpu.layout()
    for i in range(len(batch)):
        np.testing.assert_allclose(gpu.at(i), cpu.at(i), rtol=1e-5, atol=1e-6)


def test_constant_on_gpu():
    (out,) = run(lambda: fn.constant(fdata=[1.5, 2.5], device="gpu"), batch_size=3, device_id=0)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out.at(2), [1.5, 2.5])
