"""The compiled uint8 resampling kernel (core/csrc/native.c) against the NumPy engine.

The engine (chute.ops.geometry._resample, float32) is the reference: the kernel computes
the same weights and differs only by float rounding, so each 8-bit output is the engine's
value rounded to nearest (off by at most half a level, plus float noise). The Pillow
fallback (no compiled kernel) is checked too.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from PIL import Image

from chute.ops.geometry import resize_kernels
from chute.ops.geometry._resample import resample
from chute.ops.geometry.resize_kernels import resize
from chute.runtime import _native


def noise(h: int, w: int, c: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, c), dtype=np.uint8)


def engine(image, out_hw, roi_y, roi_x, filt, antialias=True):
    """The engine's float result, saturated to the 8-bit range."""
    out = resample(
        image.astype(np.float32),
        *out_hw,
        roi_y=roi_y,
        roi_x=roi_x,
        filter_y=filt,
        antialias=antialias,
    )
    return np.clip(out, 0, 255)


def assert_rounded(ours: np.ndarray, ref: np.ndarray) -> None:
    assert ours.dtype == np.uint8 and ours.shape == ref.shape
    assert np.abs(ours - ref).max() <= 0.5 + 1e-3


def native_u8(image, out_hw, roi_y, roi_x, filt, antialias=True):
    out = np.empty((*out_hw, image.shape[2]), np.uint8)
    _native.resample_u8(image, out, roi_y, roi_x, filt, filt, antialias)
    return out


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
@pytest.mark.parametrize("filt", ["linear", "cubic", "lanczos3", "gaussian"])
@pytest.mark.parametrize(
    ("in_hw", "out_hw"),
    [((37, 53), (17, 29)), ((37, 53), (80, 120)), ((61, 47), (61, 13)), ((9, 250), (23, 3))],
)
def test_native_matches_the_engine(channels, filt, in_hw, out_hw):
    image = noise(*in_hw, channels, seed=channels)
    roi = (0.0, float(in_hw[0])), (0.0, float(in_hw[1]))
    ours = native_u8(image, out_hw, *roi, filt)
    assert_rounded(ours, engine(image, out_hw, *roi, filt))


@pytest.mark.parametrize(
    ("roi_y", "roi_x"),
    [
        ((3.25, 30.125), (2.5, 47.75)),  # fractional, inside
        ((30.0, 4.0), (0.0, 53.0)),  # flipped rows
        ((0.0, 37.0), (53.0, 0.0)),  # flipped columns
        ((-10.0, 50.0), (20.0, 80.0)),  # reaching outside the image
        ((100.0, 120.0), (-40.0, -20.0)),  # entirely outside: the nearest edge pixel
    ],
)
@pytest.mark.parametrize("antialias", [True, False])
def test_native_regions_match_the_engine(roi_y, roi_x, antialias):
    image = noise(37, 53, 3)
    ours = native_u8(image, (19, 23), roi_y, roi_x, "linear", antialias)
    assert_rounded(ours, engine(image, (19, 23), roi_y, roi_x, "linear", antialias))


def test_native_reads_strided_rows():
    base = noise(60, 70, 3)
    for view in (base[5:50, 10:60], base[::-1], base[::2]):
        expected = native_u8(
            np.ascontiguousarray(view), (20, 20), (0, view.shape[0]), (0, 50), "cubic"
        )
        np.testing.assert_array_equal(
            native_u8(view, (20, 20), (0, view.shape[0]), (0, 50), "cubic"), expected
        )


def test_native_rejects_what_it_cannot_read():
    out = np.empty((4, 4, 3), np.uint8)
    with pytest.raises(ValueError, match="uint8 HWC"):
        _native.resample_u8(noise(8, 8, 3)[:, ::-1], out, (0, 8), (0, 8), "linear", "linear", True)
    with pytest.raises(ValueError, match="uint8 HWC"):
        _native.resample_u8(noise(8, 8, 5), out, (0, 8), (0, 8), "linear", "linear", True)
    with pytest.raises(ValueError, match="filter"):
        _native.resample_u8(noise(8, 8, 3), out, (0, 8), (0, 8), "box", "linear", True)


def test_resize_takes_any_view_through_the_kernel():
    # a column-reversed view cannot be read in place: resize copies it first
    image = noise(37, 53, 3)
    np.testing.assert_array_equal(
        resize(image[:, ::-1], size=(17, 29)),
        resize(np.ascontiguousarray(image[:, ::-1]), size=(17, 29)),
    )


@pytest.mark.parametrize("channels", [1, 3])
def test_pillow_fallback_without_the_kernel(monkeypatch, channels):
    image = noise(37, 53, channels)
    with_kernel = resize(image, size=(17, 29))
    monkeypatch.setattr(resize_kernels, "_native_resample", None)
    without = resize(image, size=(17, 29))
    # Pillow over edge-replicated borders (taps past the edge read the edge pixel, as DALI's)
    padded = cv2.copyMakeBorder(image, 8, 8, 8, 8, cv2.BORDER_REPLICATE)
    padded = padded.reshape(37 + 16, 53 + 16, channels)
    source = Image.fromarray(padded[:, :, 0] if channels == 1 else padded)
    resized = source.resize((29, 17), Image.BILINEAR, box=(8, 8, 8 + 53, 8 + 37))
    ref = np.asarray(resized).reshape(17, 29, channels)
    np.testing.assert_array_equal(without, ref)  # Pillow itself
    assert np.abs(with_kernel.astype(int) - without.astype(int)).max() <= 1
