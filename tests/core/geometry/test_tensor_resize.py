"""fn.tensor_resize / fn.experimental.tensor_resize on the CPU.

Expected sizes and values are DALI 2.4's (seen on its CPU backend) written out, or come
from SciPy (ndimage.zoom with grid_mode=True is the same half-pixel linear upscaling)
and from fn.resize (the same resampler on images).
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.ndimage as ndi

from chute import fn, pipeline_def, types
from chute.runtime.errors import OperatorError

RNG = np.random.default_rng(0)
IMAGES = [
    RNG.integers(0, 256, (8, 10, 3), dtype=np.uint8),
    RNG.integers(0, 256, (6, 7, 3), dtype=np.uint8),
]
RAMP = [np.arange(5, dtype=np.float32)[:, None]]


def run(graph, data=IMAGES, layout="HWC", **sources):
    @pipeline_def(batch_size=len(data), num_threads=2, device_id=None)
    def pipe():
        x = fn.external_source(source=lambda: data, layout=layout)
        named = {k: fn.external_source(source=lambda v=v: v) for k, v in sources.items()}
        return graph(x, **named)

    p = pipe()
    p.build()
    (out,) = p.run()
    return [np.asarray(out.at(i)) for i in range(len(data))]


def shapes(graph, **kw):
    return [a.shape for a in run(graph, **kw)]


def test_sizes_by_axes_axis_names_and_negative_axes():
    expected = [(5, 4, 3), (5, 4, 3)]
    assert shapes(lambda x: fn.tensor_resize(x, sizes=[5, 4], axes=[0, 1])) == expected
    assert shapes(lambda x: fn.tensor_resize(x, sizes=[5, 4], axis_names="HW")) == expected
    assert shapes(lambda x: fn.tensor_resize(x, sizes=[5, 4], axes=[-3, -2])) == expected
    assert shapes(lambda x: fn.tensor_resize(x, sizes=[4, 5, 3])) == [(4, 5, 3)] * 2
    assert shapes(lambda x: fn.experimental.tensor_resize(x, sizes=[5, 4], axes=[0, 1])) == expected


@pytest.mark.parametrize(
    "rounding, expected",
    [
        ("round", [(4, 14, 3), (3, 9, 3)]),
        ("truncate", [(4, 13, 3), (3, 9, 3)]),
        ("ceil", [(5, 14, 3), (4, 10, 3)]),
    ],
)
def test_scales_and_size_rounding(rounding, expected):
    # 8 x 0.55 = 4.4, 10 x 1.35 = 13.5, 6 x 0.55 = 3.3, 7 x 1.35 = 9.45
    out = shapes(
        lambda x: fn.tensor_resize(x, scales=[0.55, 1.35], axes=[0, 1], size_rounding=rounding)
    )
    assert out == expected


def test_modes_count_unlisted_axes_at_scale_one_as_dali():
    def modes(**kw):
        return shapes(lambda x: fn.tensor_resize(x, axes=[0, 1], **kw))

    assert modes(sizes=[16, 16], mode="not_smaller") == [(16, 20, 6), (16, 19, 8)]
    assert modes(sizes=[4, 4], mode="not_larger") == [(3, 4, 1), (3, 4, 2)]
    # a missing extent takes the geometric mean of the other scales, the channels' 1 included
    assert modes(sizes=[16, 0]) == [(16, 14, 3), (16, 11, 3)]
    assert modes(sizes=[16, 0], mode="stretch") == [(16, 10, 3), (16, 7, 3)]
    assert modes(sizes=[16, 0], max_size=[12, 12]) == [(12, 12, 3), (12, 11, 3)]


def test_one_dimensional_linear_values():
    data = [np.arange(10, dtype=np.float32), np.arange(4, dtype=np.float32)]
    out = run(lambda x: fn.tensor_resize(x, sizes=[7]), data=data, layout="")
    # upscaling 4 -> 7: output centres (i + 0.5) * 4 / 7 - 0.5, clamped at the ends
    np.testing.assert_allclose(out[1], [0, 5 / 14, 13 / 14, 1.5, 29 / 14, 37 / 14, 3], atol=1e-6)
    # downscaling 10 -> 7 keeps the middle exact (antialiased triangle, symmetric there)
    assert out[0].shape == (7,) and abs(out[0][3] - 4.5) < 1e-6


@pytest.mark.parametrize(
    "kw, expected",
    [
        ({"alignment": [0.0]}, [0, 1, 1, 2, 3, 3, 4, 4]),
        ({"alignment": [1.0]}, [0, 0, 1, 2, 2, 3, 4, 4]),
        ({}, [0, 0, 1, 2, 2, 3, 4, 4]),
        ({"subpixel_scale": False}, [0, 0, 1, 2, 2, 3, 4, 4]),
        ({"roi_start": [5], "roi_end": [0], "scales": [1.0]}, [4, 3, 2, 1, 0]),
        ({"roi_start": [0.2], "roi_end": [0.6], "roi_relative": True, "sizes": [2]}, [1, 2]),
    ],
)
def test_nearest_alignment_regions_and_flips(kw, expected):
    kw = {"scales": [1.5], **kw}
    if "sizes" in kw:
        del kw["scales"]
    out = run(
        lambda x: fn.tensor_resize(x, axes=[0], interp_type=types.INTERP_NN, **kw),
        data=RAMP,
        layout="",
    )[0]
    np.testing.assert_array_equal(out.ravel(), expected)


def test_negative_size_flips():
    out = run(
        lambda x: fn.tensor_resize(x, sizes=[-5], axes=[0], interp_type=types.INTERP_NN),
        data=RAMP,
        layout="",
    )[0]
    np.testing.assert_array_equal(out.ravel(), [4, 3, 2, 1, 0])


def test_volume_upscaling_matches_scipy_zoom():
    vol = RNG.random((4, 6, 5, 2)).astype(np.float32)
    out = run(
        lambda x: fn.tensor_resize(x, scales=[2, 1.5, 3], axis_names="DHW"),
        data=[vol],
        layout="DHWC",
    )[0]
    ref = ndi.zoom(vol, (2, 1.5, 3, 1), order=1, grid_mode=True, mode="nearest")
    assert out.shape == (8, 9, 15, 2)
    np.testing.assert_allclose(out, ref, atol=1e-5)
    # more than three resized axes (DALI stops at three)
    five = RNG.random((3, 4, 6, 8, 2)).astype(np.float32)
    out = run(lambda x: fn.tensor_resize(x, scales=[2, 2, 2, 2, 1]), data=[five], layout="")[0]
    ref = ndi.zoom(five, (2, 2, 2, 2, 1), order=1, grid_mode=True, mode="nearest")
    assert out.shape == (6, 8, 12, 16, 2)
    np.testing.assert_allclose(out, ref, atol=1e-5)


def test_images_equal_fn_resize_and_float_output():
    by_tensor = run(lambda x: fn.tensor_resize(x, sizes=[5, 13], axes=[0, 1], dtype=types.FLOAT))
    by_resize = run(lambda x: fn.resize(x, size=[5, 13], dtype=types.FLOAT))
    for a, b in zip(by_tensor, by_resize):
        assert a.dtype == np.float32
        np.testing.assert_allclose(a, b, atol=1e-4)


def test_per_sample_sizes_and_empty_tensors():
    sizes = [np.array(s, np.float32) for s in ((3, 4), (5, 2))]
    out = shapes(lambda x, s: fn.tensor_resize(x, sizes=s, axes=[0, 1]), s=sizes)
    assert out == [(3, 4, 3), (5, 2, 3)]
    empty = [np.ones((0, 5), np.float32)]
    assert shapes(lambda x: fn.tensor_resize(x, sizes=[2, 3]), data=empty, layout="") == [(0, 3)]


def test_tensor_resize_argument_errors():
    with pytest.raises(ValueError, match="exactly one of 'sizes' and 'scales'"):
        run(lambda x: fn.tensor_resize(x, sizes=[4, 5], scales=[1, 1], axes=[0, 1]))
    with pytest.raises(ValueError, match="exactly one of 'sizes' and 'scales'"):
        run(lambda x: fn.tensor_resize(x, axes=[0, 1]))
    with pytest.raises(ValueError, match="'axes' and 'axis_names' cannot"):
        run(lambda x: fn.tensor_resize(x, sizes=[4, 5], axes=[0, 1], axis_names="HW"))
    with pytest.raises(ValueError, match="'roi_start' and 'roi_end'"):
        run(lambda x: fn.tensor_resize(x, sizes=[4, 5], axes=[0, 1], roi_start=[0, 0]))
    with pytest.raises(ValueError, match="'scales' cannot be combined with mode"):
        run(lambda x: fn.tensor_resize(x, scales=[2, 2], axes=[0, 1], mode="not_smaller"))
    with pytest.raises(OperatorError, match="axis 3 is out of range"):
        run(lambda x: fn.tensor_resize(x, sizes=[4], axes=[3]))
    with pytest.raises(OperatorError, match="'sizes' has 3 values for 2 axes"):
        run(lambda x: fn.tensor_resize(x, sizes=[4, 5, 6], axes=[0, 1]))
    with pytest.raises(TypeError, match="'dtype' must be the input's type or float32"):
        run(lambda x: fn.tensor_resize(x, sizes=[4, 5], axes=[0, 1], dtype=types.INT32))
    with pytest.raises(OperatorError, match="uint8, int16, uint16 or float32"):
        run(
            lambda x: fn.tensor_resize(x, sizes=[2, 3]), data=[np.ones((4, 5), np.int32)], layout=""
        )
    with pytest.raises(OperatorError, match="axis names \\['D'\\] are not in the layout"):
        run(lambda x: fn.tensor_resize(x, sizes=[2], axis_names="D"))
