"""fn.filter, fn.laplacian, fn.experimental.median_blur / dilate / erode on the CPU.

References are computed here with SciPy (ndimage.correlate, median_filter) and OpenCV
(cv2.Laplacian, cv2.dilate / erode), on ragged batches with 1x1 images, per-sample
arguments and every border mode; bad arguments raise errors naming operator and argument.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from scipy import ndimage

from chute import fn, ops, pipeline_def

SIZES = [(1, 1), (5, 7), (12, 9), (2, 13)]
SCIPY_MODES = {
    "reflect_101": ("mirror", 0.0),
    "reflect_1001": ("reflect", 0.0),
    "reflect": ("reflect", 0.0),
    "clamp": ("nearest", 0.0),
    "replicate": ("nearest", 0.0),
    "wrap": ("wrap", 0.0),
    "constant": ("constant", 0.0),
}


def images(c: int | None = 3, dtype=np.uint8, sizes=SIZES, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for h, w in sizes:
        shape = (h, w) if c is None else (h, w, c)
        if np.dtype(dtype).kind == "f":
            out.append(rng.uniform(-10, 10, shape).astype(dtype))
        else:
            out.append(rng.integers(0, 256, shape).astype(dtype))
    return out


def run(make, data: list[np.ndarray], layout: str = "HWC", **sources) -> list[np.ndarray]:
    """Run ``make(x, **per_sample_sources)`` over ``data`` on the CPU; the output samples."""

    @pipeline_def(batch_size=len(data), num_threads=2, device_id=None, seed=3)
    def pipe():
        x = fn.external_source(source=lambda: data, layout=layout)
        extra = {k: fn.external_source(source=lambda v=v: v) for k, v in sources.items()}
        return make(x, **extra)

    p = pipe()
    p.build()
    (out,) = p.run()
    return [np.asarray(out.at(i)) for i in range(len(data))]


def saturate(values: np.ndarray, dtype) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return values.astype(dt)
    info = np.iinfo(dt)
    rounded = np.sign(values) * np.floor(np.abs(values) + 0.5)
    return np.clip(rounded, info.min, info.max).astype(dt)


def correlate_ref(img, kernel, anchor=(-1, -1), border="reflect_101", fill=0.0, dtype=None):
    """SciPy's correlate, ``origin`` placing the anchor, channel by channel."""
    kh, kw = kernel.shape
    ay = kh // 2 if anchor[0] == -1 else anchor[0]
    ax = kw // 2 if anchor[1] == -1 else anchor[1]
    # scipy: out[y] = sum k[i] in[y + i - size // 2 - origin]
    origin = (ay - kh // 2, ax - kw // 2)
    mode, _ = SCIPY_MODES[border]
    work = img.astype(np.float64)
    planes = [work] if work.ndim == 2 else [work[..., c] for c in range(work.shape[2])]
    res = [ndimage.correlate(p, kernel, mode=mode, cval=fill, origin=origin) for p in planes]
    out = res[0] if work.ndim == 2 else np.stack(res, axis=-1)
    return saturate(out, dtype or img.dtype)


def kernels_for(n: int, shapes, seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, shapes[i % len(shapes)]).astype(np.float32) for i in range(n)]


# ---- fn.filter ----------------------------------------------------------------------------
@pytest.mark.parametrize("border", sorted(SCIPY_MODES))
def test_filter_every_border_matches_scipy(border):
    data = images(3, np.float32)
    ks = kernels_for(len(data), [(3, 3), (5, 3), (1, 4), (4, 4)])
    fill = [np.float32(v) for v in (2.5, -1.0, 0.0, 7.0)]
    if border == "constant":
        out = run(lambda x, k, f: fn.filter(x, k, f, border=border), data, k=ks, f=fill)
    else:
        out = run(lambda x, k: fn.filter(x, k, border=border), data, k=ks)
    for img, k, f, o in zip(data, ks, fill, out):
        ref = correlate_ref(
            img, k.astype(np.float64), border=border, fill=float(f) if border == "constant" else 0.0
        )
        assert o.shape == img.shape and o.dtype == np.float32
        np.testing.assert_allclose(o, ref, atol=2e-4, rtol=1e-5)


@pytest.mark.parametrize("border", ["reflect_101", "reflect", "reflect_1001", "clamp", "constant"])
def test_filter_uint8_integer_kernels_equal_the_exact_sums(border):
    """uint8 images with integer kernels (sharpen, edges) take OpenCV's uint8 path: every
    output must be the exact integer sum, saturated, as SciPy computes it in float64."""
    from chute.ops.image import filters_kernels

    rng = np.random.default_rng(7)
    for t in range(60):
        h, w = (int(v) for v in rng.integers(1, 40, 2))
        channels = (1, 2, 3, 4)[t % 4]
        img = rng.integers(0, 256, (h, w, channels), dtype=np.uint8)
        kernel = rng.integers(-6, 7, tuple(int(v) for v in rng.integers(1, 7, 2)))
        kernel = kernel.astype(np.float32)
        anchor = (int(rng.integers(0, kernel.shape[0])), int(rng.integers(0, kernel.shape[1])))
        assert filters_kernels._exact_in_uint8(img, kernel, border, 0.0, np.dtype(np.uint8))
        out = filters_kernels.filter2d(img, kernel, anchor, border)
        ref = correlate_ref(
            img.astype(np.float64), kernel.astype(np.float64), border=border, anchor=anchor
        )
        np.testing.assert_array_equal(out, np.clip(ref, 0, 255).astype(np.uint8))
    # a fractional kernel, a non-zero fill or wrap keep the float path (rounding as DALI's)
    box = np.full((3, 3), 1 / 9, np.float32)
    assert not filters_kernels._exact_in_uint8(img, box, border, 0.0, np.dtype(np.uint8))
    assert not filters_kernels._exact_in_uint8(img, kernel, "wrap", 0.0, np.dtype(np.uint8))
    assert not filters_kernels._exact_in_uint8(img, kernel, "constant", 3.0, np.dtype(np.uint8))


def test_filter_is_a_correlation_not_a_convolution():
    img = np.zeros((5, 5), np.float32)
    img[2, 2] = 1
    k = np.arange(9, dtype=np.float32).reshape(3, 3)
    (out,) = run(lambda x, kk: fn.filter(x, kk, border="constant"), [img], layout="HW", kk=[k])
    # an impulse correlated with k gives k flipped around the centre
    np.testing.assert_array_equal(out[1:4, 1:4], k[::-1, ::-1])


def test_filter_anchor_per_sample_and_valid_mode():
    data = images(1, np.float32, sizes=[(6, 8), (9, 5)])
    ks = kernels_for(2, [(3, 4)])
    anchors = [np.array([0, 0], np.int32), np.array([2, 3], np.int32)]
    out = run(lambda x, k, a: fn.filter(x, k, anchor=a, border="clamp"), data, k=ks, a=anchors)
    for img, k, a, o in zip(data, ks, anchors, out):
        ref = correlate_ref(img, k.astype(np.float64), anchor=tuple(a), border="clamp")
        np.testing.assert_allclose(o, ref, atol=1e-4)
    valid = run(lambda x, k: fn.filter(x, k, mode="valid"), data, k=ks)
    for img, k, o in zip(data, ks, valid):
        assert o.shape == (img.shape[0] - 2, img.shape[1] - 3, 1)
        ref = ndimage.correlate(img[..., 0].astype(np.float64), k.astype(np.float64))
        # scipy centres the 3x4 window at (1, 2): valid outputs start there
        np.testing.assert_allclose(
            o[..., 0], ref[1 : 1 + o.shape[0], 2 : 2 + o.shape[1]], atol=1e-4
        )


def test_filter_uint8_saturates_and_dtype_float():
    data = images(3, np.uint8)
    k = [np.full((3, 3), 0.5, np.float32)] * len(data)  # sums to 4.5: saturates
    out = run(lambda x, kk: fn.filter(x, kk), data, kk=k)
    flt = run(lambda x, kk: fn.filter(x, kk, dtype=np.float32), data, kk=k)
    for img, o, f in zip(data, out, flt):
        ref = correlate_ref(img, k[0].astype(np.float64), dtype=np.float64)
        assert o.dtype == np.uint8 and f.dtype == np.float32
        np.testing.assert_allclose(f, ref, rtol=1e-5, atol=1e-3)
        assert np.abs(o.astype(int) - saturate(ref, np.uint8).astype(int)).max() <= 1


def test_filter_sequence_with_a_filter_per_frame():
    seq = np.random.default_rng(4).uniform(0, 1, (3, 6, 7, 2)).astype(np.float32)
    ks = np.random.default_rng(5).uniform(-1, 1, (3, 3, 3)).astype(np.float32)
    (out,) = run(lambda x, k: fn.filter(x, k), [seq], layout="FHWC", k=[ks])
    for f in range(3):
        np.testing.assert_allclose(
            out[f], correlate_ref(seq[f], ks[f].astype(np.float64)), atol=1e-5
        )


def test_filter_bad_arguments_name_operator_and_argument():
    data = images(3, np.uint8, sizes=[(4, 4)])
    with pytest.raises(ValueError, match=r"fn.filter.*'border'"):
        run(lambda x, k: fn.filter(x, k, border="mirror"), data, k=kernels_for(1, [(3, 3)]))
    with pytest.raises(ValueError, match=r"fn.filter.*'mode'"):
        run(lambda x, k: fn.filter(x, k, mode="full"), data, k=kernels_for(1, [(3, 3)]))
    with pytest.raises(Exception, match=r"(?s)filter.*anchor"):
        run(lambda x, k: fn.filter(x, k, anchor=[5, 0]), data, k=kernels_for(1, [(3, 3)]))
    with pytest.raises(Exception, match=r"(?s)filter.*2-D"):
        run(lambda x, k: fn.filter(x, k), data, k=[np.ones(3, np.float32)])
    with pytest.raises(Exception, match=r"(?s)filter.*valid"):
        run(lambda x, k: fn.filter(x, k, mode="valid"), data, k=kernels_for(1, [(5, 5)]))
    with pytest.raises(TypeError, match=r"fn.filter takes 2 to 3 input"):
        run(lambda x: fn.filter(x), data)


# ---- fn.laplacian -------------------------------------------------------------------------
@pytest.mark.parametrize("window", [3, 5, 7])
def test_laplacian_matches_opencv(window):
    data = images(3, np.float32)
    out = run(lambda x: fn.laplacian(x, window_size=window), data)
    for img, o in zip(data, out):
        ref = cv2.Laplacian(img, cv2.CV_32F, ksize=window, borderType=cv2.BORDER_REFLECT_101)
        np.testing.assert_allclose(o, ref.reshape(img.shape), atol=1e-3 * window**2, rtol=1e-5)


def test_laplacian_without_smoothing_is_the_5_point_stencil():
    data = images(None, np.float32)
    out = run(lambda x: fn.laplacian(x, smoothing_size=1), data, layout="HW")
    stencil = np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], np.float64)
    for img, o in zip(data, out):
        ref = correlate_ref(img, stencil, border="reflect_101")
        np.testing.assert_allclose(o, ref, atol=1e-4)


def test_laplacian_per_sample_windows_scale_and_normalization():
    data = images(1, np.float32, sizes=[(9, 11), (14, 6)])
    wins = [np.array([3, 5], np.int32), np.array([5, 3], np.int32)]
    scales = [np.array([2.0, 0.5], np.float32), np.array([1.0, -1.0], np.float32)]
    out = run(lambda x, w, s: fn.laplacian(x, window_size=w, scale=s), data, w=wins, s=scales)
    for img, w, s, o in zip(data, wins, scales, out):
        # d2/dy2: derivative window of w[0] along H, smoothing window of w[1] along W
        ref = 0
        for axis in range(2):
            ky = _deriv(w[0]) if axis == 0 else _smooth(w[0])
            kx = _deriv(w[1]) if axis == 1 else _smooth(w[1])
            ref = ref + s[axis] * correlate_ref(
                img.astype(np.float64), np.outer(ky, kx), dtype=np.float64
            )
        np.testing.assert_allclose(o, ref, atol=1e-3, rtol=1e-5)
    norm = run(lambda x: fn.laplacian(x, window_size=5, normalized_kernel=True), data)
    plain = run(lambda x: fn.laplacian(x, window_size=5), data)
    for n, p in zip(norm, plain):
        # 2 ** -(5 + 5 - 2 - 2)
        np.testing.assert_allclose(n, p / 64.0, atol=1e-4)


def _smooth(n: int) -> np.ndarray:
    from math import comb

    return np.array([comb(n - 1, i) for i in range(n)], np.float64)


def _deriv(n: int) -> np.ndarray:
    return np.convolve(_smooth(n - 2), [1.0, -2.0, 1.0])


def test_laplacian_uint8_saturates_and_1x1():
    data = images(3, np.uint8)
    out = run(lambda x: fn.laplacian(x), data)
    for img, o in zip(data, out):
        ref = cv2.Laplacian(img.astype(np.float32), cv2.CV_32F, ksize=3).reshape(img.shape)
        assert o.dtype == np.uint8
        assert np.abs(o.astype(int) - saturate(ref, np.uint8).astype(int)).max() <= 1
    assert np.all(out[0] == 0)  # a 1x1 image reflects onto itself: no curvature


def test_laplacian_bad_arguments():
    data = images(3, np.uint8, sizes=[(4, 4)])
    with pytest.raises(ValueError, match=r"fn.laplacian.*'window_size'"):
        run(lambda x: fn.laplacian(x, window_size=4), data)
    with pytest.raises(ValueError, match=r"fn.laplacian.*'smoothing_size'"):
        run(lambda x: fn.laplacian(x, smoothing_size=25), data)
    with pytest.raises(ValueError, match=r"fn.laplacian.*'scale'"):
        run(lambda x: fn.laplacian(x, scale=2.0, normalized_kernel=True), data)


# ---- median, dilate, erode ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_median_blur_matches_scipy(dtype):
    data = images(3, dtype)
    wins = [np.array(w, np.int32) for w in ([3, 3], [5, 5], [3, 5], [1, 3])]
    out = run(lambda x, w: fn.experimental.median_blur(x, window_size=w), data, w=wins)
    for img, w, o in zip(data, wins, out):
        # window_size is (width, height)
        ref = ndimage.median_filter(img, size=(int(w[1]), int(w[0]), 1), mode="nearest")
        np.testing.assert_array_equal(o, ref)


def test_median_blur_bad_window():
    with pytest.raises(ValueError, match=r"fn.experimental.median_blur.*'window_size'"):
        run(lambda x: fn.experimental.median_blur(x, window_size=4), images(3, sizes=[(4, 4)]))


@pytest.mark.parametrize("op", ["dilate", "erode"])
@pytest.mark.parametrize("border", ["constant", "replicate", "reflect", "reflect_101", "wrap"])
def test_morphology_matches_opencv(op, border):
    data = images(3, np.uint8)
    sizes = [np.array(s, np.int32) for s in ([3, 3], [5, 3], [1, 4], [2, 2])]
    anchors = [np.array(a, np.int32) for a in ([-1, -1], [0, 2], [0, 0], [1, 1])]
    make = getattr(fn.experimental, op)
    out = run(
        lambda x, m, a: make(x, mask_size=m, anchor=a, iterations=2, border_mode=border),
        data,
        m=sizes,
        a=anchors,
    )
    cv_op = cv2.dilate if op == "dilate" else cv2.erode
    for img, m, a, o in zip(data, sizes, anchors, out):
        mw, mh = int(m[0]), int(m[1])
        ax = mw // 2 if a[0] == -1 else int(a[0])
        ay = mh // 2 if a[1] == -1 else int(a[1])
        # iterated twice = one rectangle 2 * (size - 1) + 1 at twice the anchor
        ew, eh = 2 * (mw - 1) + 1, 2 * (mh - 1) + 1
        pad = ((2 * ay, eh - 1 - 2 * ay), (2 * ax, ew - 1 - 2 * ax), (0, 0))
        if border == "constant":
            padded = np.pad(img, pad, constant_values=0 if op == "dilate" else 255)
        else:
            np_mode = {
                "replicate": "edge",
                "reflect": "symmetric",
                "reflect_101": "reflect",
                "wrap": "wrap",
            }[border]
            padded = np.pad(img, pad, mode=np_mode)
        ref = (ndimage.maximum_filter if op == "dilate" else ndimage.minimum_filter)(
            padded, size=(eh, ew, 1), origin=(-(eh // 2), -(ew // 2), 0), mode="nearest"
        )[: img.shape[0], : img.shape[1]]
        np.testing.assert_array_equal(o, ref)
        if border == "replicate":
            cv_ref = cv_op(
                img,
                np.ones((mh, mw), np.uint8),
                anchor=(ax, ay),
                iterations=2,
                borderType=cv2.BORDER_REPLICATE,
            )
            np.testing.assert_array_equal(o, cv_ref.reshape(img.shape))


def test_morphology_bad_arguments():
    data = images(3, sizes=[(4, 4)])
    with pytest.raises(ValueError, match=r"fn.experimental.dilate.*'iterations'"):
        run(lambda x: fn.experimental.dilate(x, iterations=0), data)
    with pytest.raises(ValueError, match=r"fn.experimental.erode.*'border_mode'"):
        run(lambda x: fn.experimental.erode(x, border_mode="mirror"), data)
    with pytest.raises(Exception, match=r"(?s)erode.*anchor"):
        run(lambda x: fn.experimental.erode(x, anchor=[3, 0]), data)


# ---- the experimental namespace -----------------------------------------------------------
def test_experimental_names_are_generated_from_the_schema():
    assert ops.experimental.MedianBlur.schema.name == "experimental.median_blur"
    assert ops.experimental.Dilate.schema.name == "experimental.dilate"
    assert ops.experimental.Erode.schema.name == "experimental.erode"
    assert ops.Laplacian.schema.name == "laplacian" and ops.Filter.schema.name == "filter"
    assert callable(fn.experimental.median_blur) and callable(fn.laplacian)
    assert "median_blur" in fn.experimental.__all__
    assert "MedianBlur" in ops.experimental.__all__
    data = images(1, sizes=[(6, 6)])

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def legacy():
        x = fn.external_source(source=lambda: data, layout="HWC")
        return ops.experimental.MedianBlur(window_size=3)(x)

    p = legacy()
    p.build()
    (out,) = p.run()
    np.testing.assert_array_equal(
        out.at(0), ndimage.median_filter(data[0], (3, 3, 1), mode="nearest")
    )


def test_chw_layout_is_filtered_per_plane():
    data = [np.moveaxis(img, -1, 0).copy() for img in images(3, np.float32)]
    k = kernels_for(len(data), [(3, 3)])
    out = run(lambda x, kk: fn.filter(x, kk), data, layout="CHW", kk=k)
    med = run(lambda x: fn.experimental.median_blur(x), data, layout="CHW")
    for img, kk, o, m in zip(data, k, out, med):
        hwc = np.moveaxis(img, 0, -1)
        ref = correlate_ref(hwc, kk.astype(np.float64))
        np.testing.assert_allclose(o, np.moveaxis(ref, -1, 0), atol=1e-4)
        ref_m = ndimage.median_filter(hwc, size=(3, 3, 1), mode="nearest")
        np.testing.assert_array_equal(m, np.moveaxis(ref_m, -1, 0))


@pytest.mark.parametrize("border", ["reflect_101", "reflect", "replicate", "wrap", "constant"])
@pytest.mark.parametrize("dtype", [np.uint8, np.int16])
def test_integer_images_padded_before_widening_filter_as_float32_copies(border, dtype):
    """fn.filter pads 8- and 16-bit images before converting them to float32: the results
    equal filtering the float32 image (the same values are padded either way)."""
    from chute.ops.image.convert_kernels import convert_saturate
    from chute.ops.image.filters_kernels import filter2d

    rng = np.random.default_rng(11)
    image = rng.integers(0, 250, (13, 17, 3)).astype(dtype)
    kernel = rng.normal(size=(3, 5)).astype(np.float32)
    for fill in (0.0, 7.0, 2.5):
        got = filter2d(image, kernel, border=border, fill_value=fill)
        wide = filter2d(image.astype(np.float32), kernel, border=border, fill_value=fill)
        np.testing.assert_array_equal(got, convert_saturate(wide, dtype))
