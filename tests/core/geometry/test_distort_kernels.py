"""jitter, water and sphere against their formulas evaluated in NumPy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from chute.ops.geometry.distort_kernels import jitter, sphere, water


@pytest.fixture
def image() -> np.ndarray:
    return np.random.default_rng(6).integers(1, 256, (37, 53, 3), dtype=np.uint8)


def nearest_reference(image, src_x, src_y, fill=0):
    """Nearest-neighbour sampling of continuous points (pixel centres at +0.5)."""
    h, w = image.shape[:2]
    xi, yi = np.floor(src_x).astype(int), np.floor(src_y).astype(int)
    inside = (xi >= 0) & (xi < w) & (yi >= 0) & (yi < h)
    out = np.full(image.shape, fill, dtype=image.dtype)
    out[inside] = image[yi[inside], xi[inside]]
    return out


def test_water_matches_formula(image):
    args = {
        "ampl_x": 3.3,
        "ampl_y": 2.1,
        "freq_x": 0.31,
        "freq_y": 0.23,
        "phase_x": 0.17,
        "phase_y": 1.1,
    }
    ys, xs = np.mgrid[0:37, 0:53].astype(np.float64)
    src_x = xs + args["ampl_x"] * np.sin(args["freq_x"] * ys + args["phase_x"])
    src_y = ys + args["ampl_y"] * np.cos(args["freq_y"] * xs + args["phase_y"])
    ours = water(image, **args)
    ref = nearest_reference(image, src_x, src_y)
    # OpenCV rounds exact ties to even; the phases above make ties (almost) impossible
    assert np.mean(np.all(ours == ref, axis=-1)) > 0.995


def test_water_without_amplitude_is_identity(image):
    np.testing.assert_array_equal(water(image, ampl_x=0, ampl_y=0), image)


def test_sphere_matches_formula(image):
    h, w = 37, 53
    mid_x, mid_y = w / 2, h / 2
    d = int(max(mid_x, mid_y))
    ys, xs = np.mgrid[0:h, 0:w].astype(np.float64)
    dx, dy = xs + 0.5 - mid_x, ys + 0.5 - mid_y
    r = np.sqrt(dx * dx + dy * dy) / d
    ref = nearest_reference(image, mid_x + r * dx, mid_y + r * dy)
    ours = sphere(image)
    assert np.mean(np.all(ours == ref, axis=-1)) > 0.995
    # corners map outside the image and take the fill value
    assert np.all(ours[0, 0] == 0)


def test_jitter_moves_pixels_within_n_degree(image):
    rng = np.random.default_rng(7)
    out = jitter(image, rng, nDegree=4)
    assert out.shape == image.shape
    h, w = image.shape[:2]
    low, high = -2, 2
    for y, x in [(0, 0), (18, 26), (36, 52), (5, 40)]:
        window = image[
            max(y + low, 0) : min(y + high, h - 1) + 1, max(x + low, 0) : min(x + high, w - 1) + 1
        ]
        assert any(np.array_equal(out[y, x], px) for px in window.reshape(-1, 3))
    assert not np.array_equal(out, image)


def test_jitter_is_reproducible_and_zero_degree_is_identity(image):
    a = jitter(image, np.random.default_rng(3), nDegree=2)
    b = jitter(image, np.random.default_rng(3), nDegree=2)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(jitter(image, np.random.default_rng(3), nDegree=0), image)


def test_jitter_offsets_cover_the_range():
    ramp = np.tile(np.arange(64, dtype=np.uint8) * 4, (64, 1))[:, :, None]
    out = jitter(ramp, np.random.default_rng(0), nDegree=2)
    shift = (out[:, 1:-1, 0].astype(int) - ramp[:, 1:-1, 0].astype(int)) // 4
    assert set(np.unique(shift)) == {-1, 0, 1}


def test_water_linear_and_many_channels():
    image = np.random.default_rng(8).random((20, 30, 5)).astype(np.float32)
    out = water(image, interp_type="linear", ampl_x=1.5, ampl_y=0.5, freq_x=math.pi / 7)
    per_channel = np.stack(
        [
            water(image[:, :, c], interp_type="linear", ampl_x=1.5, ampl_y=0.5, freq_x=math.pi / 7)
            for c in range(5)
        ],
        axis=-1,
    )
    np.testing.assert_array_equal(out, per_channel)
    with pytest.raises(ValueError):
        water(image, interp_type="cubic")
