"""The standard augmentations of AutoAugment (ImageNet), RandAugment and TrivialAugment Wide.

Each is a function of chute operators decorated with ``@augmentation``: called with a
batch, ``magnitude_bin`` and ``num_magnitude_bins``, it computes its parameter as
``mag_to_param(magnitudes[bin] * (-1) ** random_sign)``, ``magnitudes = linspace(
*mag_range, num_magnitude_bins)``. The ranges set here are defaults (DALI's); the
policies set their own with ``.augmentation(...)``, e.g. a wider shear::

    my_shear_x = shear_x.augmentation(mag_range=(0, 0.5))

The batch holds uint8 images (HWC) on the CPU or the GPU. The point operations
(posterize, solarize, solarize_add, invert, contrast, auto_contrast, equalize) are one
node each: a 256-entry table per sample and channel (``chute.ops.auto_aug``). Geometric augmentations
(shear, translate, rotate) fill the pixels they bring in with ``fill_value`` (128; None
repeats the border) and sample with ``interp_type`` (linear by default).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute import fn
from chute.auto_aug.core import augmentation
from chute.graph import DataNode
from chute.ops.auto_aug.point_ops import point_op


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
    # one node: a 256-entry table per sample from its channel means (point_kernels)
    return point_op(data, "contrast", parameter)


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


@augmentation(mag_range=(0, 4), mag_to_param=poster_mask_uint8)
def posterize(data, mask):
    """Keep only the highest bits of each value (``mask`` from :func:`poster_mask_uint8`)."""
    return point_op(data, "posterize", mask)


@augmentation(mag_range=(256, 0))
def solarize(data, threshold):
    """Invert the values at or above ``threshold`` (256 leaves the image be)."""
    return point_op(data, "solarize", threshold)


def solarize_add_shift(shift: float) -> np.ndarray:
    """The uint8 shift of :func:`solarize_add`; it must stay below 128."""
    if shift >= 128:
        raise ValueError(f"The solarize_add augmentation takes shifts from 0 to 127, got {shift}.")
    return np.uint8(shift)


@augmentation(mag_range=(0, 110), mag_to_param=solarize_add_shift)
def solarize_add(data, shift):
    """Add ``shift`` to the values below 128 (they stay below 256); keep the others."""
    return point_op(data, "solarize_add", shift)


@augmentation
def invert(data, _):
    """255 - value."""
    return point_op(data, "invert")


@augmentation
def equalize(data, _):
    """Equalize the histogram of each channel (OpenCV's equalizeHist; PIL turns the
    cumulative histogram into its lookup table by a slightly different formula)."""
    return point_op(data, "equalize")


@augmentation
def auto_contrast(data, _):
    """Stretch each channel so that its minimum becomes 0 and its maximum 255 (a channel
    with a single value is kept): ``(value - min) * float32(255 / (max - min))``, rounded."""
    return point_op(data, "auto_contrast")


@augmentation
def identity(data, _):
    """The batch unchanged."""
    return data
