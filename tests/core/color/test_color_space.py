"""color_space_conversion against cv2.cvtColor and the BT.601 (limited range) formulas."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from chute import types
from chute.ops.color.color_space_kernels import color_space_conversion

RNG = np.random.default_rng(11)


def _rgb(shape: tuple[int, ...] = (37, 53, 3), dtype: type = np.uint8) -> np.ndarray:
    if dtype == np.uint8:
        return RNG.integers(0, 256, size=shape, dtype=np.uint8)
    return RNG.random(shape).astype(dtype)


def _ycbcr_ref(rgb: np.ndarray, mid: float) -> np.ndarray:
    """BT.601 limited range in float64: black mid/8 (16 for uint8), chroma around mid."""
    r, g, b = (rgb[..., i].astype(np.float64) for i in range(3))
    y = 0.299 * r + 0.587 * g + 0.114 * b
    cb, cr = (b - y) / 1.772, (r - y) / 1.402
    return np.stack([mid / 8 + y * 219 / 255, mid + cb * 224 / 255, mid + cr * 224 / 255], -1)


def test_rgb_to_ycbcr_uint8_written_out() -> None:
    # BT.601 limited range: black (16, 128, 128), white (235, 128, 128), primaries' corners
    x = np.array(
        [[[0, 0, 0], [255, 255, 255], [255, 0, 0], [0, 255, 0], [0, 0, 255], [10, 200, 30]]],
        np.uint8,
    )
    got = color_space_conversion(x, types.RGB, types.YCbCr)
    want = [[16, 128, 128], [235, 128, 128], [81, 90, 240], [145, 54, 34], [41, 240, 110]]
    np.testing.assert_array_equal(got[0, :5], want)
    np.testing.assert_array_equal(got[0, 5], [122, 81, 57])


def test_rgb_to_ycbcr_uint8_matches_formula() -> None:
    x = _rgb()
    got = color_space_conversion(x, types.RGB, types.YCbCr)
    want = np.clip(np.floor(_ycbcr_ref(x, 128.0) + 0.5), 0, 255)
    # float32 sums as DALI's: equal to the float64 rounding but at exact .5 ties
    assert np.abs(got.astype(np.int64) - want).max() <= 1
    assert (got == want).mean() > 0.999


def test_rounding_ties_round_half_up_in_float32() -> None:
    # 0.299*219/255 * 0 + ... : Y of (0, 204, 68) is 125.49999... in float64 but 125.5 in
    # float32 sums (DALI's arithmetic), which rounds up to 126
    got = color_space_conversion(np.array([[[0, 204, 68]]], np.uint8), "RGB", "YCbCr")
    assert got[0, 0, 0] == 126


def test_ycbcr_to_rgb_gray_and_back_uint8() -> None:
    ycc = np.array([[[16, 128, 128], [235, 128, 128], [100, 50, 200], [16, 240, 16]]], np.uint8)
    rgb = color_space_conversion(ycc, "YCbCr", "RGB")
    # R = 1.164 (Y-16) + 1.596 (Cr-128), G = 1.164 (Y-16) - 0.392 (Cb-128) - 0.813 (Cr-128),
    # B = 1.164 (Y-16) + 2.017 (Cb-128), saturated
    np.testing.assert_array_equal(rgb[0], [[0, 0, 0], [255, 255, 255], [213, 70, 0], [0, 47, 226]])
    np.testing.assert_array_equal(color_space_conversion(ycc, "YCbCr", "BGR"), rgb[..., ::-1])
    gray = color_space_conversion(ycc, "YCbCr", "GRAY")  # 255/219 (Y - 16)
    np.testing.assert_array_equal(gray[0, :, 0], [0, 255, 98, 0])
    g = np.arange(256, dtype=np.uint8).reshape(16, 16, 1)
    to_ycc = color_space_conversion(g, "GRAY", "YCbCr")
    np.testing.assert_array_equal(
        to_ycc[..., 0], np.floor(16 + g[..., 0].astype(float) * 219 / 255 + 0.5)
    )
    assert (to_ycc[..., 1:] == 128).all()


def test_float_ycbcr_and_roundtrip() -> None:
    x = _rgb(dtype=np.float32)
    got = color_space_conversion(x, "RGB", "YCbCr")
    np.testing.assert_allclose(got, _ycbcr_ref(x, 0.5), atol=1e-6)
    back = color_space_conversion(got, "YCbCr", "RGB")
    np.testing.assert_allclose(back, x, atol=1e-5)
    bgr = color_space_conversion(got, "YCbCr", "BGR")
    np.testing.assert_allclose(bgr, x[..., ::-1], atol=1e-5)
    from_bgr = color_space_conversion(np.ascontiguousarray(x[..., ::-1]), "BGR", "YCbCr")
    np.testing.assert_allclose(from_bgr, got, atol=1e-6)


@pytest.mark.parametrize("src", ["RGB", "BGR"])
def test_gray(src: str) -> None:
    x = _rgb((21, 33, 3))
    rgb = x if src == "RGB" else x[..., ::-1]
    code = cv2.COLOR_RGB2GRAY if src == "RGB" else cv2.COLOR_BGR2GRAY
    got = color_space_conversion(x, src, "GRAY")
    assert got.shape == (21, 33, 1)
    np.testing.assert_array_equal(got[..., 0], cv2.cvtColor(x, code))  # DALI's, exactly
    back = color_space_conversion(got, "GRAY", src)
    np.testing.assert_array_equal(back, np.repeat(got, 3, axis=2))
    ycc = color_space_conversion(got, "GRAY", "YCbCr")
    np.testing.assert_array_equal(
        ycc[..., 0], np.floor(16 + got[..., 0].astype(float) * 219 / 255 + 0.5)
    )
    assert (ycc[..., 1:] == 128).all()
    del rgb


def test_rgb_bgr_swap_is_exact() -> None:
    x = _rgb((5, 7, 3))
    np.testing.assert_array_equal(color_space_conversion(x, "RGB", "BGR"), x[..., ::-1])
    np.testing.assert_array_equal(color_space_conversion(x, "BGR", "RGB"), x[..., ::-1])
    np.testing.assert_array_equal(color_space_conversion(x, "RGB", "RGB"), x)


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int16, np.float32, np.float64])
@pytest.mark.parametrize("shape", [(17, 29, 3), (1, 1, 3), (9, 1, 3), (2, 6, 5, 3), (0, 4, 3)])
def test_swap_and_gray_whole_rows(dtype: type, shape: tuple[int, ...]) -> None:
    # the OpenCV paths (whole rows) against NumPy, on views, 4-D and degenerate shapes
    x = (RNG.random(shape) * 250).astype(dtype)
    view = np.concatenate([x, x], axis=-2)[..., ::2, :]  # a non-contiguous input
    for image in (x, view):
        for src, dst in (("RGB", "BGR"), ("BGR", "RGB")):
            got = color_space_conversion(image, src, dst)
            assert got.dtype == image.dtype and got.flags.c_contiguous
            np.testing.assert_array_equal(got, image[..., ::-1])
    if dtype == np.uint8:
        r, g, b = (x[..., i].astype(np.float64) for i in range(3))
        ref = np.floor(0.299 * r + 0.587 * g + 0.114 * b + 0.5)
        for src, image in (("RGB", x), ("BGR", x[..., ::-1])):
            got = color_space_conversion(image, src, "GRAY")
            assert got.shape == (*shape[:-1], 1)
            assert np.abs(got[..., 0].astype(np.float64) - ref).max(initial=0) <= 1


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_hsv_matches_cv2(dtype: type) -> None:
    x = _rgb((23, 19, 3), dtype)
    got = color_space_conversion(x, types.RGB, types.HSV)
    np.testing.assert_array_equal(got, cv2.cvtColor(x, cv2.COLOR_RGB2HSV))
    from_bgr = color_space_conversion(x, "BGR", "HSV")
    np.testing.assert_array_equal(from_bgr, cv2.cvtColor(x, cv2.COLOR_BGR2HSV))
    back = color_space_conversion(got, "HSV", "RGB")
    np.testing.assert_array_equal(back, cv2.cvtColor(got, cv2.COLOR_HSV2RGB))
    ycc = color_space_conversion(got, "HSV", "YCbCr")
    ref = color_space_conversion(cv2.cvtColor(got, cv2.COLOR_HSV2RGB), "RGB", "YCbCr")
    np.testing.assert_array_equal(ycc, ref)


def test_other_dtypes_and_errors() -> None:
    x = _rgb((4, 6, 3), np.float32)
    half = color_space_conversion(x.astype(np.float16), "RGB", "YCbCr")
    assert half.dtype == np.float16
    np.testing.assert_allclose(half, _ycbcr_ref(x.astype(np.float16), 0.5), atol=2e-3)
    with pytest.raises(ValueError, match="channel"):
        color_space_conversion(x[..., :1], "RGB", "GRAY")
    with pytest.raises(ValueError, match="supports"):
        color_space_conversion(x, "RGB", "LAB")
    with pytest.raises(TypeError):
        color_space_conversion(x.astype(np.uint16), "RGB", "HSV")
