"""The standard augmentations of AutoAugment (ImageNet), RandAugment and TrivialAugment Wide.

Each is a function of chute operators decorated with ``@augmentation``: called with a
batch, ``magnitude_bin`` and ``num_magnitude_bins``, it computes its parameter as
``mag_to_param(magnitudes[bin] * (-1) ** random_sign)``, ``magnitudes = linspace(
*mag_range, num_magnitude_bins)``. The ranges set here are defaults (DALI's); the
policies set their own with ``.augmentation(...)``, e.g. a wider shear::

    my_shear_x = shear_x.augmentation(mag_range=(0, 0.5))

The batch holds uint8 images (HWC) on the CPU or the GPU. Geometric augmentations
(shear, translate, rotate) fill the pixels they bring in with ``fill_value`` (128; None
repeats the border) and sample with ``interp_type`` (linear by default).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute import fn, types
from chute.auto_aug.core import augmentation
from chute.graph import DataNode

_UINT8_MAX = types.Constant(255, dtype=types.UINT8)
# the luma weights of PIL's ImageEnhance.Contrast (ITU-R 601-2)
_LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)


def warp_x_param(magnitude: float) -> list[float]:
    """A magnitude along x as an (x, y) parameter."""
    return [magnitude, 0]


def warp_y_param(magnitude: float) -> list[float]:
    """A magnitude along y as an (x, y) parameter."""
    return [0, magnitude]


def _warp(data: DataNode, matrix: DataNode, fill_value: Any, interp_type: Any) -> DataNode:
    # the matrices map input to output points (forward), as the transforms build them
    return fn.warp_affine(
        data, matrix=matrix, fill_value=fill_value, interp_type=interp_type, inverse_map=False
    )


@augmentation(mag_range=(0, 0.3), randomly_negate=True, mag_to_param=warp_x_param)
def shear_x(data, shear, fill_value=128, interp_type=None):
    """Shear along x: a pixel at (x, y) moves to (x + s * y, y)."""
    return _warp(data, fn.transforms.shear(shear=shear), fill_value, interp_type)


@augmentation(mag_range=(0, 0.3), randomly_negate=True, mag_to_param=warp_y_param)
def shear_y(data, shear, fill_value=128, interp_type=None):
    """Shear along y: a pixel at (x, y) moves to (x, y + s * x)."""
    return _warp(data, fn.transforms.shear(shear=shear), fill_value, interp_type)


@augmentation(mag_range=(0.0, 1.0), randomly_negate=True, mag_to_param=warp_x_param)
def translate_x(data, rel_offset, shape, fill_value=128, interp_type=None):
    """Shift along x by a fraction of the width (``shape``: each sample's (H, W, ...))."""
    offset = rel_offset * shape[1]
    return _warp(data, fn.transforms.translation(offset=offset), fill_value, interp_type)


@augmentation(
    mag_range=(0, 250), randomly_negate=True, mag_to_param=warp_x_param, name="translate_x"
)
def translate_x_no_shape(data, offset, fill_value=128, interp_type=None):
    """Shift along x by a number of pixels."""
    return _warp(data, fn.transforms.translation(offset=offset), fill_value, interp_type)


@augmentation(mag_range=(0.0, 1.0), randomly_negate=True, mag_to_param=warp_y_param)
def translate_y(data, rel_offset, shape, fill_value=128, interp_type=None):
    """Shift along y by a fraction of the height (``shape``: each sample's (H, W, ...))."""
    offset = rel_offset * shape[0]
    return _warp(data, fn.transforms.translation(offset=offset), fill_value, interp_type)


@augmentation(
    mag_range=(0, 250), randomly_negate=True, mag_to_param=warp_y_param, name="translate_y"
)
def translate_y_no_shape(data, offset, fill_value=128, interp_type=None):
    """Shift along y by a number of pixels."""
    return _warp(data, fn.transforms.translation(offset=offset), fill_value, interp_type)


@augmentation(mag_range=(0, 30), randomly_negate=True)
def rotate(data, angle, fill_value=128, interp_type=None, rotate_keep_size=True):
    """Rotate counter-clockwise by ``angle`` degrees about the centre (same size by default)."""
    return fn.rotate(
        data,
        angle=angle,
        fill_value=fill_value,
        interp_type=interp_type,
        keep_size=rotate_keep_size,
    )


def shift_enhance_range(magnitude: float) -> float:
    """Signed magnitude in [-1, 1] -> PIL enhance factor in [0, 2] (1 leaves the image be).

    The enhance operations (brightness, contrast, color, sharpness) grow stronger the
    farther their factor is from 1, so their magnitudes run from 0 up, are negated at
    random and shifted by 1.
    """
    return 1 + magnitude


@augmentation(mag_range=(0, 0.9), randomly_negate=True, mag_to_param=shift_enhance_range)
def brightness(data, parameter):
    """Scale the pixel values by ``parameter`` (PIL's ImageEnhance.Brightness)."""
    return fn.brightness(data, brightness=parameter)


@augmentation(mag_range=(0, 0.9), randomly_negate=True, mag_to_param=shift_enhance_range)
def contrast(data, parameter):
    """Scale the distance of each pixel from the image's mean luma (as PIL's
    ImageEnhance.Contrast, whose centre is the luma-weighted mean of the channels)."""
    channel_means = fn.reductions.mean(data, axis_names="HW", keep_dims=True)
    weighted = channel_means * types.Constant(_LUMA)
    center = fn.reductions.sum(weighted, axis_names="C", keep_dims=True)
    # arithmetic rather than fn.contrast(contrast_center=...): the centre is a per-sample
    # tensor computed on the batch's device, which stays there
    return fn.cast_like(center + (data - center) * parameter, data)


@augmentation(mag_range=(0, 0.9), randomly_negate=True, mag_to_param=shift_enhance_range)
def color(data, parameter):
    """Scale the saturation (PIL's ImageEnhance.Color: a blend with the luma image)."""
    return fn.saturation(data, saturation=parameter)


_SMOOTH = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], dtype=np.float32) / 13  # PIL's SMOOTH
_IDENTITY = np.array([[0, 0, 0], [0, 1, 0], [0, 0, 0]], dtype=np.float32)


def sharpness_kernel(magnitude: float) -> np.ndarray:
    """The 3x3 filter of PIL's sharpness blend for a signed magnitude in [-1, 1]:
    ``(1 + m) * image - m * smoothed``."""
    return ((1 + magnitude) * _IDENTITY - magnitude * _SMOOTH).astype(np.float32)


def sharpness_kernel_shifted(magnitude: float) -> np.ndarray:
    """:func:`sharpness_kernel` for an enhance factor in [0, 2] (1 leaves the image be)."""
    return sharpness_kernel(magnitude - 1)


@augmentation(
    mag_range=(0, 0.9), randomly_negate=True, mag_to_param=sharpness_kernel, param_device="auto"
)
def sharpness(data, kernel):
    """Sharpen (or blur, for negative magnitudes) with a 3x3 filter. Unlike PIL, which
    leaves the 1-pixel frame as it was, the border pixels are filtered too (reflect_101)."""
    return fn.filter(data, kernel)


def poster_mask_uint8(magnitude: float) -> np.ndarray:
    """The uint8 mask that keeps the ``round(magnitude)`` highest bits, for 1 to 8 bits.

    0 bits would blank the image: as the AutoAugment and RandAugment implementations
    the papers refer to, 0 keeps 1 bit; above 8 keeps 8.
    """
    bits = int(np.clip(np.round(magnitude), 1, 8))
    return np.array((0xFF << (8 - bits)) & 0xFF, dtype=np.uint8)


@augmentation(mag_range=(0, 4), mag_to_param=poster_mask_uint8, param_device="auto")
def posterize(data, mask):
    """Keep only the highest bits of each value (``mask`` from :func:`poster_mask_uint8`)."""
    return data & mask


@augmentation(mag_range=(256, 0), param_device="auto")
def solarize(data, threshold):
    """Invert the values at or above ``threshold`` (256 leaves the image be)."""
    below = data < threshold
    return below * data + (below ^ True) * (_UINT8_MAX - data)


def solarize_add_shift(shift: float) -> np.ndarray:
    """The uint8 shift of :func:`solarize_add`; it must stay below 128."""
    if shift >= 128:
        raise ValueError(f"The solarize_add augmentation takes shifts from 0 to 127, got {shift}.")
    return np.uint8(shift)


@augmentation(mag_range=(0, 110), param_device="auto", mag_to_param=solarize_add_shift)
def solarize_add(data, shift):
    """Add ``shift`` to the values below 128 (they stay below 256); keep the others."""
    below = data < types.Constant(128, dtype=types.UINT8)
    return below * (data + shift) + (below ^ True) * data


@augmentation
def invert(data, _):
    """255 - value."""
    return _UINT8_MAX - data


@augmentation
def equalize(data, _):
    """Equalize the histogram of each channel (OpenCV's equalizeHist; PIL turns the
    cumulative histogram into its lookup table by a slightly different formula)."""
    return fn.equalize(data)


@augmentation
def auto_contrast(data, _):
    """Stretch each channel so that its minimum becomes 0 and its maximum 255 (a channel
    with a single value is kept)."""
    lo = fn.reductions.min(data, axis_names="HW", keep_dims=True)
    hi = fn.reductions.max(data, axis_names="HW", keep_dims=True)
    span = hi - lo
    stretch = span > 0
    # 255 / span where the channel has a span, 255 / 255 = 1 where it has none
    scale = 255 / (span + (stretch ^ True) * _UINT8_MAX)
    return fn.cast_like((data - lo * stretch) * scale, data)


@augmentation
def identity(data, _):
    """The batch unchanged."""
    return data
