"""crop, slice, flip, pad, erase and paste against NumPy slicing, numpy.pad and OpenCV."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from chute.ops.geometry._border import BORDER_MODES, NUMPY_PAD_MODES
from chute.ops.geometry.crop_kernels import (
    border_index,
    crop,
    crop_window,
    erase,
    flip,
    pad,
    paste,
    slice_,
)

BORDERS = sorted(BORDER_MODES)


@pytest.fixture
def image() -> np.ndarray:
    return np.random.default_rng(1).integers(0, 256, (37, 53, 3), dtype=np.uint8)


def padded_reference(
    image: np.ndarray, top: int, bottom: int, left: int, right: int, border: str, fill=(0, 0, 0)
):
    """cv2.copyMakeBorder: the independent reference for every border mode."""
    return cv2.copyMakeBorder(image, top, bottom, left, right, BORDER_MODES[border], value=fill)


@pytest.mark.parametrize("border", BORDERS)
def test_border_index_matches_numpy_pad(border):
    row = np.arange(7)
    index = border_index(np.arange(-12, 19), 7, border) if border != "constant" else None
    if border == "constant":
        with pytest.raises(ValueError):
            border_index(np.arange(3), 7, border)
        return
    ref = np.pad(row, (12, 12), mode=NUMPY_PAD_MODES[border])
    np.testing.assert_array_equal(row[index], ref)


def test_crop_window_anchors():
    # anchor = round(pos * (in - crop)), halves away from zero
    assert crop_window(37, 53, crop=(10, 20)) == (14, 17, 10, 20)  # 13.5 -> 14, 16.5 -> 17
    assert crop_window(37, 53, crop=(10, 20), crop_pos_x=0, crop_pos_y=1) == (27, 0, 10, 20)
    assert crop_window(37, 53, crop_h=10, crop_w=20, rounding="truncate") == (13, 16, 10, 20)
    # sizes 32.375 -> 32, 46.375 -> 46; anchors 2.5 -> 3, 3.5 -> 4
    assert crop_window(37, 53, rel_crop=0.875) == (3, 4, 32, 46)
    assert crop_window(37, 53, crop=(41, 53)) == (-2, 0, 41, 53)
    with pytest.raises(ValueError):
        crop_window(37, 53, crop=(10, 10), crop_pos_x=1.5)


def test_crop_inside_matches_slicing(image):
    out = crop(image, crop=(10, 20), crop_pos_x=0.25, crop_pos_y=0.75)
    y0, x0 = round(0.75 * 27), round(0.25 * 33)
    np.testing.assert_array_equal(out, image[y0 : y0 + 10, x0 : x0 + 20])
    assert not np.shares_memory(out, image)
    centre = crop(image, rel_crop=(0.875, 0.875))
    np.testing.assert_array_equal(centre, image[3:35, 4:50])


def test_crop_out_of_bounds_policies(image):
    with pytest.raises(ValueError):
        crop(image, crop=(41, 61))
    trimmed = crop(image, crop=(41, 61), out_of_bounds_policy="trim_to_shape")
    np.testing.assert_array_equal(trimmed, image)
    padded = crop(image, crop=(41, 61), out_of_bounds_policy="pad", fill_values=(1, 2, 3))
    ref = padded_reference(image, 2, 2, 4, 4, "constant", (1, 2, 3))
    np.testing.assert_array_equal(padded, ref)


@pytest.mark.parametrize("border", BORDERS)
def test_crop_pad_with_every_border(image, border):
    # window reaching 5 px above, 9 px left, 6 px below and 3 px right of the image
    out = crop(
        image,
        crop=(48, 65),
        crop_pos_x=0.75,
        crop_pos_y=5 / 11,
        out_of_bounds_policy="pad",
        border=border,
    )
    ref = padded_reference(image, 5, 6, 9, 3, border)
    np.testing.assert_array_equal(out, ref)


def test_crop_far_outside_repeats_reflections(image):
    # 60 px beyond a 37 px image: the border rule applies again and again, as OpenCV's
    out = crop(image, crop=(157, 53), crop_pos_y=0.5, out_of_bounds_policy="pad", border="reflect")
    np.testing.assert_array_equal(out, padded_reference(image, 60, 60, 0, 0, "reflect"))


def test_slice_normalized_and_absolute(image):
    # DALI's default axes (1, 0): anchor and shape are (x, y)
    out = slice_(image, anchor=(0.1, 0.2), shape=(0.5, 0.5))
    x0, y0 = round(0.1 * 53), round(0.2 * 37)
    x1, y1 = round(0.6 * 53), round(0.7 * 37)
    np.testing.assert_array_equal(out, image[y0:y1, x0:x1])
    out = slice_(
        image,
        anchor=(3, 4),
        shape=(10, 20),
        axis_names="HW",
        normalized_anchor=False,
        normalized_shape=False,
    )
    np.testing.assert_array_equal(out, image[3:13, 4:24])
    out = slice_(
        image, anchor=(1,), shape=(2,), axes=(2,), normalized_anchor=False, normalized_shape=False
    )
    np.testing.assert_array_equal(out, image[:, :, 1:3])


@pytest.mark.parametrize("border", BORDERS)
def test_slice_pad_every_border(image, border):
    out = slice_(
        image,
        anchor=(-4, -3),
        shape=(60, 45),
        axis_names="WH",
        normalized_anchor=False,
        normalized_shape=False,
        out_of_bounds_policy="pad",
        border=border,
        fill_values=7,
    )
    ref = padded_reference(image, 3, 45 - 3 - 37, 4, 60 - 4 - 53, border, (7, 7, 7))
    np.testing.assert_array_equal(out, ref)


@pytest.mark.parametrize(("horizontal", "vertical"), [(1, 0), (0, 1), (1, 1), (0, 0)])
def test_flip_matches_numpy(image, horizontal, vertical):
    ref = image[:: -1 if vertical else 1, :: -1 if horizontal else 1]
    np.testing.assert_array_equal(flip(image, horizontal, vertical), ref)
    many = np.random.default_rng(2).random((37, 53, 6)).astype(np.float32)
    ref = many[:: -1 if vertical else 1, :: -1 if horizontal else 1]
    np.testing.assert_array_equal(flip(many, horizontal, vertical), ref)


@pytest.mark.parametrize("border", BORDERS)
def test_pad_every_border_matches_opencv(image, border):
    out = pad(image, axis_names="HW", shape=(50, 60), fill_value=(1, 2, 3), border=border)
    np.testing.assert_array_equal(out, padded_reference(image, 0, 13, 0, 7, border, (1, 2, 3)))


@pytest.mark.parametrize("border", ["reflect", "reflect_101", "replicate", "wrap"])
def test_pad_many_channels_matches_numpy(border):
    data = np.random.default_rng(3).random((9, 11, 6)).astype(np.float32)
    out = pad(data, axis_names="HW", shape=(20, 13), border=border)
    ref = np.pad(data, ((0, 11), (0, 2), (0, 0)), mode=NUMPY_PAD_MODES[border])
    np.testing.assert_array_equal(out, ref)


def test_pad_align_and_defaults(image):
    out = pad(image, axis_names="HW", align=16)
    assert out.shape == (48, 64, 3)
    np.testing.assert_array_equal(out[:37, :53], image)
    assert not out[37:].any() and not out[:, 53:].any()
    # a target smaller than the data is ignored; -1 keeps the extent
    assert pad(image, axis_names="HW", shape=(10, -1)).shape == image.shape
    # default: every axis, here the channel axis grows to 4 with fill 255
    rgba = pad(image, shape=(-1, -1, 4), fill_value=255)
    assert rgba.shape == (37, 53, 4) and np.all(rgba[:, :, 3] == 255)


def test_erase_regions(image):
    out = erase(image, anchor=(5, 6, 20, 30), shape=(4, 7, 100, 5), fill_value=(9, 8, 7))
    ref = image.copy()
    ref[5:9, 6:13] = (9, 8, 7)
    ref[20:, 30:35] = (9, 8, 7)  # clipped at the bottom
    np.testing.assert_array_equal(out, ref)
    centred = erase(
        image, anchor=(0.5, 0.5), shape=(0.2, 0.2), normalized=True, centered_anchor=True
    )
    ref = image.copy()
    # both ends floored, as DALI: rows [14.8, 22.2) -> 14..21, columns [21.2, 31.8) -> 21..30
    ref[14:22, 21:31] = 0
    np.testing.assert_array_equal(centred, ref)
    by_axes = erase(image, anchor=(6, 5), shape=(7, 4), axes=(1, 0))
    ref = image.copy()
    ref[5:9, 6:13] = 0
    np.testing.assert_array_equal(by_axes, ref)


def test_paste(image):
    out = paste(image, ratio=2.0, fill_value=(1, 2, 3), paste_x=0.25, paste_y=1.0)
    assert out.shape == (74, 106, 3)
    y0, x0 = 37, int(0.25 * 53)
    np.testing.assert_array_equal(out[y0 : y0 + 37, x0 : x0 + 53], image)
    mask = np.ones(out.shape[:2], bool)
    mask[y0 : y0 + 37, x0 : x0 + 53] = False
    assert np.all(out[mask] == (1, 2, 3))
    assert paste(image, ratio=1.0, min_canvas_size=100, fill_value=0).shape == (100, 100, 3)
    with pytest.raises(ValueError):
        paste(image, ratio=0.5)


def test_crop_anchor_is_computed_in_float32_as_dali():
    # 0.7 * (56 - 21) = 24.5 (rounds to 25), but DALI holds 0.7 as the float32 0.69999999: 24
    assert crop_window(56, 47, crop=(21, 25), crop_pos_x=0.3, crop_pos_y=0.7)[:2] == (24, 7)
    image = np.arange(56 * 47, dtype=np.int32).reshape(56, 47)
    out = crop(image, crop=(21, 25), crop_pos_x=0.3, crop_pos_y=0.7)
    np.testing.assert_array_equal(out, image[24:45, 7:32])
    # exact halves still round up: 0.5 * (11 - 4) = 3.5 is exact in float32
    assert crop_window(11, 11, crop=(4, 4))[:2] == (4, 4)


@pytest.mark.parametrize(
    ("anchor", "shape", "centered", "rows"),
    [
        (10.5, 5.5, False, (10, 16)),  # [10.5, 16.0): both ends floored
        (10.4, 5.2, False, (10, 15)),
        (10.0, 5.0, True, (7, 12)),  # centred: [7.5, 12.5)
        (10.5, 5.0, True, (8, 13)),
    ],
)
def test_erase_floors_region_ends_as_dali(anchor, shape, centered, rows):
    image = np.zeros((30, 4), np.uint8)
    out = erase(
        image, anchor=(anchor,), shape=(shape,), axes=(0,), fill_value=1, centered_anchor=centered
    )
    want = np.zeros_like(image)
    want[rows[0] : rows[1]] = 1
    np.testing.assert_array_equal(out, want)
