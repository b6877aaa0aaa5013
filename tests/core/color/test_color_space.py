"""color_space_conversion against cv2.cvtColor and the BT.601 formulas in float64."""

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
    r, g, b = (rgb[..., i].astype(np.float64) for i in range(3))
    y = 0.299 * r + 0.587 * g + 0.114 * b
    return np.stack([y, (b - y) / 1.772 + mid, (r - y) / 1.402 + mid], axis=-1)


def test_rgb_to_ycbcr_uint8_matches_formula_and_cv2() -> None:
    x = _rgb()
    got = color_space_conversion(x, types.RGB, types.YCbCr)
    want = np.clip(np.floor(_ycbcr_ref(x, 128.0) + 0.5), 0, 255)
    # uint8 runs OpenCV's fixed-point transform: within 1 of the exact rounding, mostly exact.
    assert np.abs(got.astype(np.int64) - want).max() <= 1
    assert (got == want).mean() > 0.95
    cv = cv2.cvtColor(x, cv2.COLOR_RGB2YCrCb)[..., [0, 2, 1]]  # OpenCV orders Y, Cr, Cb
    assert np.abs(got.astype(np.int64) - cv).max() <= 1  # OpenCV uses fixed-point


def test_float_ycbcr_and_roundtrip() -> None:
    x = _rgb(dtype=np.float32)
    got = color_space_conversion(x, "RGB", "YCbCr")
    np.testing.assert_allclose(got, _ycbcr_ref(x, 0.5), atol=1e-6)
    cv = cv2.cvtColor(x, cv2.COLOR_RGB2YCrCb)[..., [0, 2, 1]]
    np.testing.assert_allclose(got, cv, atol=1e-3)  # OpenCV rounds its coefficients
    back = color_space_conversion(got, "YCbCr", "RGB")
    np.testing.assert_allclose(back, x, atol=1e-5)
    bgr = color_space_conversion(got, "YCbCr", "BGR")
    np.testing.assert_allclose(bgr, x[..., ::-1], atol=1e-5)


@pytest.mark.parametrize("src", ["RGB", "BGR"])
def test_gray(src: str) -> None:
    x = _rgb((21, 33, 3))
    rgb = x if src == "RGB" else x[..., ::-1]
    code = cv2.COLOR_RGB2GRAY if src == "RGB" else cv2.COLOR_BGR2GRAY
    got = color_space_conversion(x, src, "GRAY")
    assert got.shape == (21, 33, 1)
    want = np.floor(_ycbcr_ref(x if src == "RGB" else x[..., ::-1], 128)[..., 0] + 0.5)
    assert np.abs(got[..., 0].astype(int) - want).max() <= 1
    assert np.abs(got[..., 0].astype(int) - cv2.cvtColor(x, code)).max() <= 1
    back = color_space_conversion(got, "GRAY", src)
    np.testing.assert_array_equal(back, np.repeat(got, 3, axis=2))
    ycc = color_space_conversion(got, "GRAY", "YCbCr")
    np.testing.assert_array_equal(ycc[..., 0], got[..., 0])
    assert (ycc[..., 1:] == 128).all()
    del rgb


def test_rgb_bgr_swap_is_exact() -> None:
    x = _rgb((5, 7, 3))
    np.testing.assert_array_equal(color_space_conversion(x, "RGB", "BGR"), x[..., ::-1])
    np.testing.assert_array_equal(color_space_conversion(x, "BGR", "RGB"), x[..., ::-1])
    np.testing.assert_array_equal(color_space_conversion(x, "RGB", "RGB"), x)


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
