"""fn.resize on the GPU for non-uint8 inputs (chute.ops.geometry.resize_any_gpu).

The weights are checked here without a GPU: two dense matrix products with
``axis_matrix`` reproduce the CPU backend's resize (within 1 level for integers: float
sums in another order). The gpu-marked tests compare the device path with the CPU
backend for int16, uint16, int32 and float32 images, 2-D and HWC, every filter.
"""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, pipeline_def, types
from chute.ops.geometry import resize_kernels
from chute.ops.geometry.resize_any_gpu import axis_matrix

RNG = np.random.default_rng(11)


def _matrices_resize(image, plan, fy, fx, antialias=True):
    (y0, y1), (x0, x1) = plan.roi_y, plan.roi_x
    wy = axis_matrix(image.shape[0], plan.out_h, y0, y1, fy, antialias)
    wx = axis_matrix(image.shape[1], plan.out_w, x0, x1, fx, antialias)
    src = image.astype(np.float32)
    out = np.einsum("oh,hwc->owc", wy, src)
    return np.einsum("pw,owc->opc", wx, out)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"size": [20, 30], "interp_type": types.INTERP_LINEAR},  # downscale, antialiased
        {"size": [90, 70], "interp_type": types.INTERP_CUBIC},  # upscale: edge taps clamp
        {"size": [25, 25], "interp_type": types.INTERP_LANCZOS3},
        {"size": [33, 51], "interp_type": types.INTERP_LINEAR, "antialias": False},
        {"size": [30, 30], "roi_start": [5.5, 3.0], "roi_end": [40.0, 50.5]},
        {"size": [30, 30], "roi_start": [40.0, 50.0], "roi_end": [5.0, 3.0]},  # flipped
        {"size": [40, 40], "interp_type": types.INTERP_NN},
    ],
)
def test_axis_matrices_reproduce_the_cpu_resize(kwargs):
    image = RNG.integers(-3000, 3000, (45, 61, 2), dtype=np.int16)
    expected = resize_kernels.resize(image, **kwargs)
    size_args = {k: v for k, v in kwargs.items() if k in ("size", "roi_start", "roi_end")}
    plan = resize_kernels.resize_plan(45, 61, **size_args)
    fy, fx = resize_kernels.axis_filters(plan, kwargs.get("interp_type", types.INTERP_LINEAR))
    got = _matrices_resize(image, plan, fy, fx, kwargs.get("antialias", True))
    got = np.clip(np.rint(got), -32768, 32767).astype(np.int16)
    assert got.shape == expected.shape
    assert np.abs(got.astype(np.int32) - expected).max() <= 1


def test_each_matrix_row_sums_to_one():
    for name in ("linear", "cubic", "lanczos3", "gaussian", "nn"):
        for out in (7, 40, 200):
            m = axis_matrix(50, out, 0.0, 50.0, name, True)
            np.testing.assert_allclose(m.sum(axis=1), 1.0, atol=1e-5, err_msg=name)


def _run(images, device, **kwargs):
    @pipeline_def(batch_size=len(images), num_threads=2, device_id=0 if device == "gpu" else None)
    def pipe():
        x = fn.external_source(source=lambda: images, layout="HWC"[: images[0].ndim])
        return fn.resize(x.gpu() if device == "gpu" else x, **kwargs)

    p = pipe()
    p.build()
    (out,) = p.run()
    out = out.as_cpu() if hasattr(out, "as_cpu") else out
    return [np.asarray(out.at(i)) for i in range(len(images))]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.int16, np.uint16, np.int32, np.float32])
@pytest.mark.parametrize("interp", [types.INTERP_NN, types.INTERP_LINEAR, types.INTERP_CUBIC])
@pytest.mark.parametrize("channels", [0, 1, 3])
def test_resize_gpu_matches_cpu_for_other_types(dtype, interp, channels):
    shapes = [(40, 52), (17, 33), (64, 20)]
    if np.dtype(dtype).kind == "f":
        images = [RNG.random(s + ((channels,) if channels else ())).astype(dtype) for s in shapes]
    else:
        hi = min(np.iinfo(dtype).max, 60000)
        lo = max(np.iinfo(dtype).min, -30000)
        images = [
            RNG.integers(lo, hi, s + ((channels,) if channels else ()), dtype=dtype) for s in shapes
        ]
    kwargs = {"resize_shorter": 30, "interp_type": interp}
    cpu, gpu = _run(images, "cpu", **kwargs), _run(images, "gpu", **kwargs)
    for c, g in zip(cpu, gpu):
        assert c.dtype == g.dtype and c.shape == g.shape
        if interp == types.INTERP_NN:
            np.testing.assert_array_equal(c, g)
        elif np.dtype(dtype).kind == "f":
            np.testing.assert_allclose(c, g, atol=1e-4)
        else:
            assert np.abs(c.astype(np.int64) - g).max() <= 1
