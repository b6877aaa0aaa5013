"""Crop windows: the random-resized-crop distribution, DALI crop_pos anchors, slices."""

from __future__ import annotations

import itertools
import math
import random

import numpy as np
import pytest

from chute.runtime.crop_window import (
    crop_window_from_anchor,
    random_crop_window,
    slice_window,
)


def _reference_window(height, width, area, ratio, attempts, draw):
    """The RandomResizedCrop sampling algorithm, restated independently for the test."""
    for _ in range(attempts):
        target = height * width * draw.uniform(*area)
        aspect = math.exp(draw.uniform(math.log(ratio[0]), math.log(ratio[1])))
        crop_w = round(math.sqrt(target * aspect))
        crop_h = round(math.sqrt(target / aspect))
        if 0 < crop_w <= width and 0 < crop_h <= height:
            return draw.randint(0, height - crop_h), draw.randint(0, width - crop_w), crop_h, crop_w
    if width / height < ratio[0]:
        crop_w, crop_h = width, round(width / ratio[0])
    elif width / height > ratio[1]:
        crop_h, crop_w = height, round(height * ratio[1])
    else:
        crop_h, crop_w = height, width
    return (height - crop_h) // 2, (width - crop_w) // 2, crop_h, crop_w


def _statistics(windows, height, width):
    windows = np.asarray(windows, dtype=np.float64)
    y0, _x0, crop_h, crop_w = windows.T
    area = crop_h * crop_w / (height * width)
    log_aspect = np.log(crop_w / crop_h)
    # Where the crop sits within its free range (0 = top/left, 1 = bottom/right).
    free_y = np.where(height > crop_h, y0 / np.maximum(height - crop_h, 1), 0.5)
    full = (crop_h == height) & (crop_w == width)
    return {"area": area, "log_aspect": log_aspect, "position_y": free_y, "full": full}


@pytest.mark.parametrize(
    ("height", "width", "area", "ratio"),
    [
        (375, 500, (0.08, 1.0), (3 / 4, 4 / 3)),
        (1000, 50, (0.08, 1.0), (3 / 4, 4 / 3)),  # extreme shape: many fallbacks
        (64, 64, (0.5, 1.0), (0.5, 2.0)),  # many rejected attempts
    ],
)
def test_distribution_matches_reference_sampler(height, width, area, ratio):
    draws = 12000
    rng = np.random.default_rng(123)
    ours = [random_crop_window(height, width, area, ratio, 10, rng) for _ in range(draws)]
    reference_draw = random.Random(456)
    theirs = [
        _reference_window(height, width, area, ratio, 10, reference_draw) for _ in range(draws)
    ]
    for y0, x0, crop_h, crop_w in ours:
        assert 0 <= y0 <= height - crop_h and 0 <= x0 <= width - crop_w
        assert crop_h >= 1 and crop_w >= 1
    ours_stats = _statistics(ours, height, width)
    theirs_stats = _statistics(theirs, height, width)
    for key in ours_stats:
        a, b = ours_stats[key].astype(np.float64), theirs_stats[key].astype(np.float64)
        standard_error = math.sqrt((a.var() + b.var()) / draws) + 1e-9
        # Two independent Monte Carlo estimates of one expectation: 5 sigma.
        assert abs(a.mean() - b.mean()) < 5 * standard_error, key


def test_unrejected_distribution_has_the_expected_moments():
    # With areas up to 1/4 every draw fits a square image (longest side
    # sqrt(0.25 * 4/3) < 1), so area ~ U(0.08, 0.25) and log aspect ~
    # U(log 3/4, log 4/3), whose moments are known in closed form.
    rng = np.random.default_rng(0)
    windows = np.array(
        [random_crop_window(1000, 1000, area=(0.08, 0.25), rng=rng) for _ in range(8000)]
    )
    area = windows[:, 2] * windows[:, 3] / 1e6
    log_aspect = np.log(windows[:, 3] / windows[:, 2])
    assert abs(area.mean() - 0.165) < 0.003
    assert abs(area.std() - 0.17 / math.sqrt(12)) < 0.003
    assert abs(log_aspect.mean()) < 0.01
    assert abs(log_aspect.std() - 2 * math.log(4 / 3) / math.sqrt(12)) < 0.005


def test_fallback_is_centre_crop_clamped_to_aspect_range():
    # An area above 1 never fits, so every call falls back.
    rng = np.random.default_rng(0)
    assert random_crop_window(1000, 50, area=(2.0, 3.0), rng=rng) == (466, 0, 67, 50)
    assert random_crop_window(50, 1000, area=(2.0, 3.0), rng=rng) == (0, 466, 50, 67)
    assert random_crop_window(90, 100, area=(2.0, 3.0), rng=rng) == (0, 0, 90, 100)


def test_same_generator_state_gives_same_window():
    first = [random_crop_window(300, 400, rng=np.random.default_rng(5)) for _ in range(3)]
    assert first[0] == first[1] == first[2]


@pytest.mark.parametrize(
    ("args", "message"),
    [((0, 10), "positive"), ((10, 10, (0.5, 0.1)), "area"), ((10, 10, (0.1, 1), (2, 1)), "aspect")],
)
def test_random_crop_window_rejects_bad_arguments(args, message):
    with pytest.raises(ValueError, match=message):
        random_crop_window(*args)


@pytest.mark.parametrize(
    ("height", "width", "pos_x", "pos_y", "expected"),
    [
        (100, 200, 0.0, 0.0, (0, 0, 50, 60)),
        (100, 200, 1.0, 1.0, (50, 140, 50, 60)),
        (100, 200, 0.5, 0.5, (25, 70, 50, 60)),
        (101, 201, 0.5, 0.5, (26, 71, 50, 60)),  # halves round up
        (100, 200, 0.25, 0.3, (15, 35, 50, 60)),
        (40, 200, 0.5, 0.5, (-5, 70, 50, 60)),  # crop taller than the image
    ],
)
def test_crop_window_from_anchor(height, width, pos_x, pos_y, expected):
    assert crop_window_from_anchor(height, width, 50, 60, pos_x, pos_y) == expected


def test_crop_window_from_anchor_rejects_positions_outside_unit_range():
    with pytest.raises(ValueError, match="crop_pos"):
        crop_window_from_anchor(100, 100, 10, 10, 1.5, 0.5)


def test_slice_window_absolute_is_x_first_by_default():
    assert slice_window(100, 200, start=(10, 20), shape=(30, 40)) == (20, 10, 40, 30)
    assert slice_window(100, 200, start=(20, 10), shape=(40, 30), axis_names="HW") == (
        20,
        10,
        40,
        30,
    )


def test_slice_window_relative_tiles_without_gaps():
    # Three relative slices of 1/3 each cover 100 columns exactly once.
    tiles = [
        slice_window(10, 100, rel_start=(i / 3, 0.0), rel_shape=(1 / 3, 1.0)) for i in range(3)
    ]
    columns = [(x0, x0 + width) for _, x0, _, width in tiles]
    assert columns[0][0] == 0 and columns[-1][1] == 100
    assert all(a[1] == b[0] for a, b in itertools.pairwise(columns))


def test_slice_window_defaults_to_rest_of_image():
    assert slice_window(100, 200, rel_start=(0.5, 0.25)) == (25, 100, 75, 100)
    assert slice_window(100, 200) == (0, 0, 100, 200)


def test_slice_window_out_of_bounds():
    with pytest.raises(ValueError, match="outside the image"):
        slice_window(100, 200, start=(150, 0), shape=(100, 10))
    assert slice_window(
        100, 200, start=(150, -5), shape=(100, 10), out_of_bounds_policy="trim_to_shape"
    ) == (0, 150, 5, 50)
    with pytest.raises(ValueError, match="not both"):
        slice_window(100, 200, start=(0, 0), rel_start=(0, 0))


def test_slice_window_end_arguments():
    assert slice_window(100, 200, start=(10, 20), end=(50, 70)) == (20, 10, 50, 40)
    assert slice_window(100, 200, rel_start=(0.1, 0.2), rel_end=(0.5, 0.7)) == (20, 20, 50, 80)
    with pytest.raises(ValueError, match="one of shape"):
        slice_window(100, 200, shape=(5, 5), end=(10, 10))
