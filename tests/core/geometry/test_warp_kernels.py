"""warp_affine and rotate against a NumPy bilinear sampler, numpy.pad, OpenCV and np.rot90."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest

from chute.ops.geometry import transforms_kernels as transforms
from chute.ops.geometry._border import BORDER_MODES, NUMPY_PAD_MODES
from chute.ops.geometry.warp_kernels import (
    invert_affine,
    rotate,
    rotated_canvas_size,
    warp_affine,
)

BORDERS = sorted(BORDER_MODES)


def smooth_image(h: int = 37, w: int = 53, c: int = 3, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return cv2.GaussianBlur(rng.integers(0, 256, (h, w, c), dtype=np.uint8), (0, 0), 2.0)


def reference_warp(image, matrix, out_hw, border, fill=0.0, margin=80):
    """Bilinear sampling in float64 at M @ (x + .5, y + .5), borders through numpy.pad."""
    c = image.shape[2]
    planes = []
    for ch in range(c):
        plane = image[:, :, ch].astype(np.float64)
        if border == "constant":
            planes.append(np.pad(plane, margin, mode="constant", constant_values=fill))
        else:
            planes.append(np.pad(plane, margin, mode=NUMPY_PAD_MODES[border]))
    padded = np.stack(planes, axis=-1)
    ys, xs = np.mgrid[0 : out_hw[0], 0 : out_hw[1]] + 0.5
    m = np.asarray(matrix, dtype=np.float64)
    sx = m[0, 0] * xs + m[0, 1] * ys + m[0, 2] - 0.5 + margin
    sy = m[1, 0] * xs + m[1, 1] * ys + m[1, 2] - 0.5 + margin
    x0, y0 = np.floor(sx).astype(int), np.floor(sy).astype(int)
    fx, fy = (sx - x0)[..., None], (sy - y0)[..., None]
    top = padded[y0, x0] * (1 - fx) + padded[y0, x0 + 1] * fx
    bottom = padded[y0 + 1, x0] * (1 - fx) + padded[y0 + 1, x0 + 1] * fx
    return top * (1 - fy) + bottom * fy


def bordered(image: np.ndarray, fill: tuple, border: str) -> np.ndarray:
    """The image with one pixel of its border around it: what the sampler meets at edges."""
    x = image.astype(np.float64)
    if border != "constant":
        return np.pad(x, ((1, 1), (1, 1), (0, 0)), mode=NUMPY_PAD_MODES[border])
    planes = [np.pad(x[:, :, c], 1, constant_values=v) for c, v in enumerate(fill)]
    return np.stack(planes, axis=-1)


def tolerance(image: np.ndarray, fill: tuple = (0, 0, 0), border: str = "replicate") -> float:
    # OpenCV quantises sample positions to 1/32 px: error <= steepest step the sampler
    # meets (into the border too) / 32, plus rounding to uint8
    padded = bordered(image, fill, border)
    grad = max(np.abs(np.diff(padded, axis=a)).max() for a in (0, 1))
    return grad / 32 + 0.51


@pytest.mark.parametrize("border", BORDERS)
def test_warp_affine_matches_numpy_sampler(border):
    image = smooth_image()
    matrix = [[0.9, 0.3, -6.2], [-0.25, 1.1, 4.7]]
    ours = warp_affine(image, matrix, size=(41, 47), fill_value=(10, 20, 30), border=border)
    ref = reference_warp(image, matrix, (41, 47), border)
    if border == "constant":
        ref = np.stack(
            [
                reference_warp(image[:, :, [c]], matrix, (41, 47), border, fill)[..., 0]
                for c, fill in enumerate((10, 20, 30))
            ],
            axis=-1,
        )
    assert ours.shape == (41, 47, 3) and ours.dtype == np.uint8
    assert np.abs(ours - ref).max() <= tolerance(image, (10, 20, 30), border)


@pytest.mark.parametrize("border", BORDERS)
def test_integer_shift_with_every_border_is_exact(border):
    image = np.random.default_rng(4).integers(0, 256, (37, 53, 3), dtype=np.uint8)
    # output (x, y) reads input (x - 9, y - 5): a 9 px left / 5 px top border appears
    matrix = [[1, 0, -9], [0, 1, -5]]
    ours = warp_affine(image, matrix, size=(50, 70), interp_type="nn", fill_value=7, border=border)
    ref = cv2.copyMakeBorder(
        image, 5, 50 - 5 - 37, 9, 70 - 9 - 53, BORDER_MODES[border], value=(7, 7, 7)
    )
    np.testing.assert_array_equal(ours, ref)


def test_warp_affine_default_border_follows_fill_value():
    image = smooth_image()
    matrix = [[1, 0, -9.5], [0, 1, -5.5]]
    clamped = warp_affine(image, matrix)
    np.testing.assert_array_equal(clamped, warp_affine(image, matrix, border="replicate"))
    filled = warp_affine(image, matrix, fill_value=3)
    np.testing.assert_array_equal(
        filled, warp_affine(image, matrix, fill_value=3, border="constant")
    )
    assert np.all(filled[:4] == 3)


def test_warp_affine_opencv_convention():
    # DALI's matrix acts on pixel-centred coordinates; OpenCV's on pixel indices
    image = smooth_image()
    m = np.array([[0.8, -0.2, 3.0], [0.3, 0.95, -2.0]])
    m_cv = m.copy()
    m_cv[:, 2] += 0.5 * (m[:, 0] + m[:, 1]) - 0.5
    ref = cv2.warpAffine(
        image,
        m_cv,
        (53, 37),
        flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
        borderMode=cv2.BORDER_REPLICATE,
    )
    np.testing.assert_array_equal(warp_affine(image, m), ref)


def test_inverse_map_false_inverts():
    image = smooth_image()
    forward = np.array([[1.1, 0.2, -3.0], [-0.1, 0.9, 2.5]])
    a = warp_affine(image, forward, inverse_map=False)
    b = warp_affine(image, invert_affine(forward))
    np.testing.assert_array_equal(a, b)


def test_warp_many_channels_and_float():
    image = np.random.default_rng(5).random((37, 53, 6)).astype(np.float32)
    matrix = [[0.9, 0.1, 1.0], [0.0, 1.0, -2.0]]
    out = warp_affine(image, matrix, fill_value=list(range(6)), border="constant")
    ref = np.stack(
        [warp_affine(image[:, :, c], matrix, fill_value=c, border="constant") for c in range(6)],
        axis=-1,
    )
    assert out.dtype == np.float32
    # every channel warped alike, whatever group OpenCV saw it in
    np.testing.assert_array_equal(out, ref)
    pair = warp_affine(image[:, :, :2], matrix)
    np.testing.assert_array_equal(
        pair, np.stack([warp_affine(image[:, :, c], matrix) for c in range(2)], axis=-1)
    )
    assert warp_affine(image[:, :, 0], matrix).shape == (37, 53)


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("interp", ["nn", "linear"])
@pytest.mark.parametrize("shape", [(37, 53, 3), (36, 53, 1), (40, 60, 4)])
def test_rotate_by_multiples_of_90_equals_rot90(k, interp, shape):
    image = np.random.default_rng(k).integers(0, 256, shape, dtype=np.uint8)
    np.testing.assert_array_equal(rotate(image, 90 * k, interp_type=interp), np.rot90(image, k))
    np.testing.assert_array_equal(rotate(image, -90 * k, interp_type=interp), np.rot90(image, -k))


@pytest.mark.parametrize(
    ("in_hw", "angle", "expected"),
    [
        ((37, 53), 30, (59, 65)),
        ((37, 53), 45, (65, 65)),
        ((37, 53), 90, (53, 37)),
        ((40, 60), 10, (50, 68)),  # 49.81 -> 50, 66.03 -> 67 -> 68 (parity of 60)
        ((40, 60), 0, (40, 60)),
        ((40, 60), 180, (40, 60)),
        ((41, 61), -20, (61, 73)),  # 59.39 -> 60 -> 61, 71.34 -> 72 -> 73 (odd inputs)
    ],
)
def test_rotated_canvas_size(in_hw, angle, expected):
    assert rotated_canvas_size(*in_hw, angle) == expected


def test_rotated_canvas_size_formula():
    for angle in np.linspace(-180, 180, 37):
        h, w = rotated_canvas_size(37, 53, angle)
        c, s = abs(math.cos(math.radians(angle))), abs(math.sin(math.radians(angle)))
        assert math.ceil(c * 53 + s * 37 - 0.01) <= w <= math.ceil(c * 53 + s * 37 - 0.01) + 1
        assert math.ceil(c * 37 + s * 53 - 0.01) <= h <= math.ceil(c * 37 + s * 53 - 0.01) + 1


@pytest.mark.parametrize("border", BORDERS)
def test_rotate_matches_numpy_sampler(border):
    image = smooth_image()
    ours = rotate(image, 23.0, keep_size=True, border=border, fill_value=0)
    a = math.radians(23.0)
    rot = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    center = np.array([53 / 2, 37 / 2])
    matrix = np.hstack([rot, (center - rot @ center)[:, None]])
    ref = reference_warp(image, matrix, (37, 53), border)
    assert np.abs(ours - ref).max() <= tolerance(image, (0, 0, 0), border)


def test_rotate_is_counter_clockwise():
    image = np.zeros((21, 21, 1), dtype=np.uint8)
    image[10, 15:] = 255  # a bar pointing right from the centre
    out = rotate(image, 30, keep_size=True, interp_type="nn")
    ys, xs = np.nonzero(out[:, :, 0])
    # counter-clockwise on screen: the bar now points up and to the right
    assert np.all(xs >= 10) and np.all(ys <= 10)


def test_rotate_sizes():
    image = smooth_image()
    assert rotate(image, 30).shape == (59, 65, 3)
    assert rotate(image, 30, keep_size=True).shape == image.shape
    assert rotate(image, 30, size=(20, 25)).shape == (20, 25, 3)
    np.testing.assert_array_equal(rotate(image, 0, keep_size=True), image)


def test_warp_with_transforms_rotation_equals_rotate():
    image = smooth_image()
    matrix = transforms.rotation(17.0, center=(53 / 2, 37 / 2))
    np.testing.assert_array_equal(warp_affine(image, matrix), rotate(image, 17.0, keep_size=True))


@pytest.mark.parametrize(
    ("angle", "expected"),
    [(44.9, (70, 69)), (45, (69, 70)), (-45, (69, 70)), (135, (70, 69)), (225, (70, 69))],
)
def test_rotated_canvas_parity_at_45_degrees(angle, expected):
    # 40 x 57 turned by 45 degrees: both extents 68.6 -> 69; DALI 2.4 gives the heights the
    # parity of the input width (and back) at 45 and 315 degrees, its own at 135 and 225
    assert rotated_canvas_size(40, 57, angle) == expected


def test_nearest_takes_the_pixel_holding_the_source_point():
    # a half-pixel shift puts every source point on a pixel boundary: DALI takes
    # floor(M (p + 0.5)), the pixel to the right/below (OpenCV's rounding would take halves
    # to even: 0, 2, 2, 4, 4)
    image = np.arange(100, dtype=np.uint8).reshape(10, 10, 1)
    out = warp_affine(image, [1.0, 0.0, 0.5, 0.0, 1.0, 0.5], size=(5, 5), interp_type="nn")
    np.testing.assert_array_equal(out[..., 0], image[1:6, 1:6, 0])


# -- whole-pixel shifts: copies instead of OpenCV's warp ------------------------------------


@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.float32, np.int32])
@pytest.mark.parametrize("channels", [None, 1, 3, 4, 5])
def test_whole_pixel_shifts_equal_opencvs_warp(monkeypatch, dtype, channels):
    """A shift by whole pixels with a constant border is copied (linear and nearest sampling
    land on pixel centres there); the copies equal OpenCV's warp of the same matrix."""
    from chute.ops.geometry import warp_kernels

    rng = np.random.default_rng(5)
    shape = (7, 9) if channels is None else (7, 9, channels)
    image = rng.integers(0, 200, shape).astype(dtype)
    c = 1 if channels is None else channels
    cases = []
    for dx, dy in [(0, 0), (3, -2), (-4, 1), (9, 0), (0, -7), (-20, 3)]:
        for interp in ("linear", "nn"):
            for fill in (128, 7.5, 300, tuple(range(1, c + 1))):
                for inverse in (True, False):
                    for size in (None, (5, 11)):
                        sign = 1 if inverse else -1
                        m = np.array([[1, 0, sign * dx], [0, 1, sign * dy]], np.float32)
                        cases.append((m, size, inverse, interp, fill))
    fast = [warp_affine(image, m, s, inv, ip, f) for m, s, inv, ip, f in cases]
    assert warp_kernels.whole_pixel_shift(np.array([[1.0, 0, 3], [0, 1, -2]])) == (3, -2)
    monkeypatch.setattr(warp_kernels, "whole_pixel_shift", lambda m: None)
    for got, (m, s, inv, ip, f) in zip(fast, cases):
        want = warp_affine(image, m, s, inv, ip, f)
        assert got.shape == want.shape and got.dtype == want.dtype
        np.testing.assert_array_equal(got, want)


def test_only_whole_pixel_shifts_are_copied():
    from chute.ops.geometry.warp_kernels import whole_pixel_shift

    assert whole_pixel_shift(np.array([[1.0, 0, -30], [0, 1, 0]])) == (-30, 0)
    assert whole_pixel_shift(np.array([[1.0, 0, 0.5], [0, 1, 0]])) is None
    assert whole_pixel_shift(np.array([[1.0, 0.3, 0], [0, 1, 0]])) is None
    assert whole_pixel_shift(np.array([[-1.0, 0, 0], [0, 1, 0]])) is None
    # a replicated border still goes through OpenCV and repeats the edge
    image = np.arange(12, dtype=np.uint8).reshape(3, 4)
    out = warp_affine(image, [[1, 0, 2], [0, 1, 0]], border="replicate")
    np.testing.assert_array_equal(out, np.array([[2, 3, 3, 3], [6, 7, 7, 7], [10, 11, 11, 11]]))
