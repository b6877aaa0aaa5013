"""Color adjustments against formulas written out in float64 NumPy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from chute.ops.color.color_kernels import (
    brightness,
    brightness_contrast,
    color_twist,
    contrast,
    hsv,
    hue,
    lookup_table,
    saturation,
)

RNG = np.random.default_rng(7)
SHAPES = [(37, 53, 3), (1, 1, 3), (5, 9, 3)]

# NTSC YIQ, typed in independently of the implementation.
YIQ = np.array([[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]])


def _round_sat(x: np.ndarray, dtype: type) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.clip(np.sign(x) * np.floor(np.abs(x) + 0.5), info.min, info.max).astype(dtype)


def _image(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    if np.dtype(dtype).kind == "f":
        return RNG.random(shape).astype(dtype)
    info = np.iinfo(dtype)
    return RNG.integers(info.min, int(info.max) + 1, size=shape).astype(dtype)


def _twist_ref(x: np.ndarray, b: float, c: float, h: float, s: float, mid: float) -> np.ndarray:
    t = math.radians(h)
    rot = np.array([[1, 0, 0], [0, math.cos(t), math.sin(t)], [0, -math.sin(t), math.cos(t)]])
    m = np.linalg.inv(YIQ) @ (rot * np.array([1, s, s])[:, None]) @ YIQ
    rgb = x.astype(np.float64) @ m.T
    return b * (c * rgb + (1 - c) * mid)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize(
    ("in_t", "out_t"),
    [
        (np.uint8, np.uint8),
        (np.uint8, np.float32),
        (np.uint8, np.int8),
        (np.float32, np.float32),
        (np.float32, np.uint8),
        (np.int16, np.int16),
        (np.uint16, np.float32),
    ],
)
def test_brightness_contrast_matches_formula(shape: tuple, in_t: type, out_t: type) -> None:
    x = _image(shape, in_t)
    b, bs, c = 1.3, 0.05, 0.7
    got = brightness_contrast(x, b, bs, c, dtype=out_t)
    in_info = np.iinfo(in_t) if np.dtype(in_t).kind in "ui" else None
    out_range = float(np.iinfo(out_t).max) if np.dtype(out_t).kind in "ui" else 1.0
    center = float(1 << (8 * np.dtype(in_t).itemsize - (in_info.min < 0) - 1)) if in_info else 0.5
    # DALI's formula: no rescaling between the input and output types
    want = bs * out_range + b * (center + c * (x.astype(np.float64) - center))
    assert got.dtype == out_t and got.shape == x.shape
    if np.dtype(out_t).kind == "f":
        # float32 arithmetic on the non-uint8 path
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    elif in_t == np.uint8:
        np.testing.assert_array_equal(got, _round_sat(want, out_t))  # exact table
    else:
        assert np.abs(got.astype(np.int64) - _round_sat(want, out_t)).max() <= 1


def test_brightness_and_contrast_alone() -> None:
    x = _image((17, 23, 3), np.uint8)
    np.testing.assert_array_equal(brightness(x, 0.5), _round_sat(x * 0.5, np.uint8))
    # Ties (odd * 0.5) round away from zero: 3 * 0.5 = 1.5 -> 2.
    assert brightness(np.array([[[3]]], np.uint8), 0.5)[0, 0, 0] == 2
    np.testing.assert_array_equal(
        contrast(x, 2.0, contrast_center=100), _round_sat(100 + 2.0 * (x - 100.0), np.uint8)
    )
    # Negative image: brightness -1, shift 1.
    np.testing.assert_array_equal(brightness_contrast(x, -1.0, 1.0), 255 - x)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_color_twist_matches_yiq_formula(shape: tuple, dtype: type) -> None:
    x = _image(shape, dtype)
    b, c, h, s = 1.1, 0.8, 37.0, 1.4
    mid = 128.0 if dtype == np.uint8 else 0.5
    want = _twist_ref(x, b, c, h, s, mid)
    got = color_twist(x, brightness=b, contrast=c, hue=h, saturation=s)
    if dtype == np.uint8:
        # float32 matrix math: off by one only where the exact value sits within 1e-3 of a tie.
        diff = np.abs(got.astype(np.int64) - _round_sat(want, np.uint8))
        assert diff.max() <= 1
        assert (diff == 0).mean() > 0.99
    else:
        np.testing.assert_allclose(got, want, atol=2e-6)


def test_color_twist_bgr_is_rgb_reversed() -> None:
    x = _image((11, 13, 3), np.float32)
    rgb = color_twist(x[..., ::-1], hue=50, saturation=0.5)
    bgr = color_twist(x, hue=50, saturation=0.5, image_type="BGR")
    np.testing.assert_allclose(bgr, rgb[..., ::-1], atol=1e-6)


def test_identity_and_gray_properties() -> None:
    x = _image((15, 21, 3), np.uint8)
    np.testing.assert_array_equal(color_twist(x), x)
    np.testing.assert_array_equal(hue(x, 360.0), x)
    gray = saturation(x, 0.0)
    assert np.abs(gray[..., 0].astype(int) - gray[..., 2]).max() <= 1  # R == G == B
    luma = x.astype(np.float64) @ YIQ[0]
    assert np.abs(gray[..., 1] - luma).max() <= 1.0


def test_alpha_passes_and_gray_uses_luma() -> None:
    x = _image((9, 7, 4), np.uint8)
    got = color_twist(x, hue=90, saturation=2.0, brightness=0.7)
    np.testing.assert_array_equal(got[..., 3], x[..., 3])
    ref = _round_sat(_twist_ref(x[..., :3], 0.7, 1.0, 90, 2.0, 128.0), np.uint8)
    assert np.abs(got[..., :3].astype(int) - ref).max() <= 1
    g = _image((9, 7, 1), np.float32)
    np.testing.assert_allclose(color_twist(g, brightness=0.5, hue=80), 0.5 * g, atol=1e-6)


def test_hsv_matches_formula() -> None:
    x = _image((19, 29, 3), np.float32)
    t = math.radians(-120.0)
    rot = np.array([[1, 0, 0], [0, math.cos(t), math.sin(t)], [0, -math.sin(t), math.cos(t)]])
    m = 0.9 * np.linalg.inv(YIQ) @ (rot * np.array([1, 0.6, 0.6])[:, None]) @ YIQ
    want = x.astype(np.float64) @ m.T
    np.testing.assert_allclose(hsv(x, hue=-120.0, saturation=0.6, value=0.9), want, atol=2e-6)
    # Positive hue moves red towards yellow/green as in HSV.
    red = np.array([[[200, 0, 0]]], np.uint8)
    assert hsv(red, hue=60.0)[0, 0, 1] > 50


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="RGB or BGR"):
        color_twist(_image((3, 3, 3), np.uint8), image_type="HSV")
    with pytest.raises(ValueError, match="channels"):
        hsv(_image((3, 3, 2), np.uint8))


@pytest.mark.parametrize("in_t", [np.uint8, np.int16, np.uint16, np.int32])
def test_lookup_table(in_t: type) -> None:
    x = _image((13, 7, 3), in_t)
    if in_t != np.uint8:
        x = (x % 300).astype(in_t)
    keys = [0, 5, 17, 200, 255, 299]
    values = [1.5, -2.0, 300.0, 7.0, 0.4, 9.0]
    got = lookup_table(x, keys, values, default_value=42.0, dtype=np.float32)
    table = dict(zip(keys, values))
    want = np.vectorize(lambda v: table.get(int(v), 42.0))(x).astype(np.float32)
    np.testing.assert_array_equal(got, want)
    sat = lookup_table(x, keys, values, default_value=-3.0, dtype=np.uint8)
    want_sat = np.vectorize(lambda v: table.get(int(v), -3.0))(x)
    np.testing.assert_array_equal(sat, _round_sat(want_sat, np.uint8))
    with pytest.raises(TypeError):
        lookup_table(x.astype(np.float32), keys, values)


def test_sequences_use_the_last_axis_as_channels() -> None:
    frames = _image((2, 9, 11, 3), np.float32)
    got = color_twist(frames, hue=30.0, saturation=0.5)
    for f in range(2):
        np.testing.assert_allclose(
            got[f], color_twist(frames[f], hue=30.0, saturation=0.5), atol=1e-6
        )
    flat = _image((2, 9, 11, 3), np.uint8)
    np.testing.assert_array_equal(brightness(flat, 0.5)[1], brightness(flat[1], 0.5))


def test_brightness_contrast_keeps_values_across_types() -> None:
    # uint8 -> float32 is not normalised (DALI): 100 + 2 * (2 - 100) = -96, 128 + 2 * (2 - 128)
    x = np.array([[[2], [6], [35]]], np.uint8)
    got = brightness_contrast(x, contrast=2.0, contrast_center=100, dtype=np.float32)
    np.testing.assert_allclose(got[0, :, 0], [-96.0, -88.0, -30.0])
    got = brightness_contrast(x, contrast=2.0, dtype=np.float32)
    np.testing.assert_allclose(got[0, :, 0], [-124.0, -116.0, -58.0])
    # float -> uint8 keeps 0..1 (rounded), the shift is in output units
    f = np.array([[[0.2], [0.7]]], np.float32)
    got = brightness_contrast(f, brightness_shift=0.5, dtype=np.uint8)
    np.testing.assert_array_equal(got[0, :, 0], [128, 128])
