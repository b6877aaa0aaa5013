"""Per-sample CPU kernels of DALI's color adjustments over HWC images.

Semantics (chosen to match DALI's documented behaviour; each one is a per-pixel affine map):

* ``brightness_contrast`` (and ``brightness``, ``contrast``)::

      out = brightness_shift * full_range(out_type)
            + brightness * (contrast_center + contrast * (in - contrast_center))

  ``full_range`` is the max of an integer type and 1 for floats. Values are not rescaled
  between types (as in DALI 2.4: uint8 -> float32 keeps 0..255); ``contrast_center`` is in
  input units and defaults to the input type's mid-gray (128 for uint8, 0.5 for floats).
  Every channel is treated alike.
* ``color_twist`` / ``hsv`` / ``hue`` / ``saturation``: a 3x3 color matrix in raw input units
  (no range rescaling, as in DALI). Hue and saturation act in YIQ space (NTSC coefficients):
  hue rotates the (I, Q) chroma plane by ``hue`` degrees, saturation scales it, ``value``
  scales all of Y, I, Q. ``color_twist`` then applies contrast around the input type's mid-gray
  and multiplies by brightness::

      out = brightness * (contrast * M_yiq(hue, saturation) @ rgb + (1 - contrast) * half_range)

  The YIQ -> RGB matrix is the exact inverse of RGB -> YIQ, so hue=0, saturation=1 is the
  identity. ``image_type`` BGR reverses the channel order around the matrix. On 4-channel
  images the 4th (alpha) channel passes through; on 1-channel images the luma of the
  transformed gray is used (hue and saturation leave gray unchanged).

Integer outputs round half away from zero and saturate. uint8 inputs of the per-channel ops
(brightness/contrast, lookup_table) run as one ``cv2.LUT`` pass with a table computed in
float64; the color-matrix ops run ``cv2.transform`` in float32.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from chute.ops.image.convert_kernels import convert_saturate, full_range, half_range

__all__ = [
    "RGB_TO_YIQ",
    "YIQ_TO_RGB",
    "brightness",
    "brightness_contrast",
    "color_twist",
    "color_twist_matrix",
    "contrast",
    "hsv",
    "hsv_matrix",
    "hue",
    "is_bgr",
    "lookup_table",
    "saturation",
]

DTypeLike = Any

RGB_TO_YIQ = np.array(
    [[0.299, 0.587, 0.114], [0.596, -0.274, -0.322], [0.211, -0.523, 0.312]], dtype=np.float64
)
# Exact inverse, so that the identity twist is the identity (DALI rounds this matrix).
YIQ_TO_RGB = np.linalg.inv(RGB_TO_YIQ)

_LUMA = RGB_TO_YIQ[0]


def _out_dtype(image: np.ndarray, dtype: DTypeLike | None) -> np.dtype:
    return image.dtype if dtype is None else np.dtype(dtype)


def _check_image(image: np.ndarray) -> np.ndarray:
    image = np.asarray(image)
    if image.ndim < 2:
        raise ValueError(
            f"expected an image with at least 2 dimensions (HW or HWC), got {image.shape}"
        )
    return image


def _lut_for_uint8(fn_of_x: np.ndarray, out_dtype: np.dtype, rounding: str = "round") -> np.ndarray:
    """Convert a float64 table of 256 (or 256 x C) values into a ``cv2.LUT`` table."""
    table = convert_saturate(fn_of_x, out_dtype, rounding=rounding)
    if out_dtype == np.float16:
        # OpenCV 4.x has no float16 LUT; the same 16-bit pattern goes through as int16.
        table = table.view(np.int16)
    return np.ascontiguousarray(table)


def _cv2_view(image: np.ndarray) -> np.ndarray:
    """Return ``image`` as an array OpenCV can wrap without a copy (2-D, or HWC with <= 4 channels)."""
    item = image.itemsize
    if image.ndim == 2 and image.strides[1] == item and image.strides[0] > 0:
        return image
    if (
        image.ndim == 3
        and image.shape[2] <= 4
        and image.strides[2] == item
        and image.strides[1] == image.shape[2] * item
        and image.strides[0] > 0
    ):
        return image
    image = np.ascontiguousarray(image)
    return image if image.ndim in (2, 3) and image.shape[-1] <= 4 else image.reshape(-1, 1)


def apply_uint8_lut(image: np.ndarray, table: np.ndarray, out_dtype: np.dtype) -> np.ndarray:
    """Look up every uint8 element of ``image`` in a 256-entry ``table`` (one ``cv2.LUT`` pass).

    ``table`` is already in ``out_dtype`` (float16 tables as int16 bits, see ``_lut_for_uint8``).
    """
    result = cv2.LUT(_cv2_view(image), table.reshape(1, 256)).reshape(image.shape)
    return result.view(np.float16) if out_dtype == np.float16 else result


def _affine_per_channel(
    image: np.ndarray, gain: float, offset: float, out_dtype: np.dtype
) -> np.ndarray:
    """Return ``image * gain + offset`` converted (saturating) to ``out_dtype``."""
    if image.dtype == np.uint8:
        x = np.arange(256, dtype=np.float64)
        return apply_uint8_lut(image, _lut_for_uint8(x * gain + offset, out_dtype), out_dtype)
    work = image.astype(np.float32) if image.dtype != np.float64 else image.copy()
    work *= gain
    work += offset
    return convert_saturate(work, out_dtype, overwrite=True)


def brightness_contrast(
    image: np.ndarray,
    brightness: float = 1.0,
    brightness_shift: float = 0.0,
    contrast: float = 1.0,
    contrast_center: float | None = None,
    dtype: DTypeLike | None = None,
) -> np.ndarray:
    """Adjust brightness and contrast as DALI's ``brightness_contrast`` (see module doc)."""
    image = _check_image(image)
    out_dtype = _out_dtype(image, dtype)
    center = half_range(image.dtype) if contrast_center is None else float(contrast_center)
    out_range = full_range(out_dtype)
    norm = float(brightness)
    gain = norm * float(contrast)
    offset = float(brightness_shift) * out_range + norm * (center - float(contrast) * center)
    return _affine_per_channel(image, gain, offset, out_dtype)


def brightness(
    image: np.ndarray,
    brightness: float = 1.0,
    brightness_shift: float = 0.0,
    dtype: DTypeLike | None = None,
) -> np.ndarray:
    """Scale and shift intensities: ``brightness_shift * full_range + brightness * in``."""
    return brightness_contrast(image, brightness, brightness_shift, 1.0, None, dtype)


def contrast(
    image: np.ndarray,
    contrast: float = 1.0,
    contrast_center: float | None = None,
    dtype: DTypeLike | None = None,
) -> np.ndarray:
    """Stretch intensities around ``contrast_center`` (default: the input type's mid-gray)."""
    return brightness_contrast(image, 1.0, 0.0, contrast, contrast_center, dtype)


def hsv_matrix(hue: float = 0.0, saturation: float = 1.0, value: float = 1.0) -> np.ndarray:
    """Return the 3x3 RGB matrix that rotates hue (degrees) and scales saturation and value in YIQ."""
    h = math.radians(float(hue))
    cos_h, sin_h = math.cos(h), math.sin(h)
    s = float(saturation)
    yiq = np.array(
        [[1.0, 0.0, 0.0], [0.0, s * cos_h, s * sin_h], [0.0, -s * sin_h, s * cos_h]],
        dtype=np.float64,
    )
    return float(value) * (YIQ_TO_RGB @ yiq @ RGB_TO_YIQ)


def color_twist_matrix(
    brightness: float = 1.0,
    contrast: float = 1.0,
    hue: float = 0.0,
    saturation: float = 1.0,
    center: float = 0.5,
) -> tuple[np.ndarray, np.ndarray]:
    """Return (3x3 matrix, 3-vector offset) of ``color_twist`` for inputs whose mid-gray is ``center``."""
    b, c = float(brightness), float(contrast)
    matrix = b * c * hsv_matrix(hue, saturation, 1.0)
    offset = np.full(3, b * (1.0 - c) * center, dtype=np.float64)
    return matrix, offset


def _apply_color_matrix(
    image: np.ndarray,
    matrix: np.ndarray,
    offset: np.ndarray,
    out_dtype: np.dtype,
    bgr: bool = False,
) -> np.ndarray:
    """Apply ``out = matrix @ rgb + offset`` per pixel; alpha passes through, gray uses luma."""
    channels = image.shape[-1] if image.ndim >= 3 else 1
    if channels == 1:
        gain = float(_LUMA @ matrix @ np.ones(3))
        return _affine_per_channel(image, gain, float(_LUMA @ offset), out_dtype)
    if channels not in (3, 4):
        raise ValueError(f"color adjustments need 1, 3 or 4 channels, got {channels}")
    if bgr:
        matrix = matrix[::-1, ::-1]
        offset = offset[::-1]
    full = np.zeros((channels, channels + 1), dtype=np.float64)
    full[:3, :3] = matrix
    full[:3, channels] = offset
    if channels == 4:
        full[3, 3] = 1.0
    owned = image.dtype not in (np.float32, np.float64)
    work = image.astype(np.float32) if owned else image
    shape = work.shape
    if work.ndim != 3:
        work = work.reshape(-1, 1, channels)
    matrix_t = full.astype(work.dtype)
    if owned and work.flags.c_contiguous:
        # Per-pixel map: transforming our own copy in place saves a full-size temporary.
        result = cv2.transform(work, matrix_t, dst=work)
    else:
        result = cv2.transform(work, matrix_t)
    # The alpha row is exact: integers up to 2**24 survive the float32 round trip.
    return convert_saturate(result.reshape(shape), out_dtype, overwrite=True)


def is_bgr(image_type: Any) -> bool:
    """Whether an RGB/BGR image_type is BGR (raises for other types)."""
    name = getattr(image_type, "value", image_type)
    name = str(name).upper()
    if name not in ("RGB", "BGR"):
        raise ValueError(f"color adjustments accept image_type RGB or BGR, got {image_type!r}")
    return name == "BGR"


def color_twist(
    image: np.ndarray,
    brightness: float = 1.0,
    contrast: float = 1.0,
    hue: float = 0.0,
    saturation: float = 1.0,
    image_type: Any = "RGB",
    dtype: DTypeLike | None = None,
) -> np.ndarray:
    """Adjust hue (degrees), saturation, contrast and brightness in one pass (see module doc)."""
    image = _check_image(image)
    out_dtype = _out_dtype(image, dtype)
    matrix, offset = color_twist_matrix(
        brightness, contrast, hue, saturation, half_range(image.dtype)
    )
    return _apply_color_matrix(image, matrix, offset, out_dtype, is_bgr(image_type))


def hsv(
    image: np.ndarray,
    hue: float = 0.0,
    saturation: float = 1.0,
    value: float = 1.0,
    dtype: DTypeLike | None = None,
) -> np.ndarray:
    """Shift hue (degrees) and scale saturation and value of an RGB image, linearly in YIQ."""
    image = _check_image(image)
    out_dtype = _out_dtype(image, dtype)
    return _apply_color_matrix(image, hsv_matrix(hue, saturation, value), np.zeros(3), out_dtype)


def hue(
    image: np.ndarray, hue: float = 0.0, image_type: Any = "RGB", dtype: DTypeLike | None = None
) -> np.ndarray:
    """Rotate the hue by ``hue`` degrees (``color_twist`` with only hue set)."""
    return color_twist(image, hue=hue, image_type=image_type, dtype=dtype)


def saturation(
    image: np.ndarray,
    saturation: float = 1.0,
    image_type: Any = "RGB",
    dtype: DTypeLike | None = None,
) -> np.ndarray:
    """Scale the saturation (0 gives gray, 1 no change) as ``color_twist`` does."""
    return color_twist(image, saturation=saturation, image_type=image_type, dtype=dtype)


def lookup_table(
    data: np.ndarray,
    keys: Sequence[int],
    values: Sequence[float],
    default_value: float = 0.0,
    dtype: DTypeLike = np.uint8,
) -> np.ndarray:
    """Map each integer element found in ``keys`` to the matching ``values`` entry, others to the default."""
    data = np.asarray(data)
    if data.dtype.kind not in "uib":
        raise TypeError(f"lookup_table needs integer input, got {data.dtype}")
    keys_arr = np.asarray(keys, dtype=np.int64).ravel()
    values_arr = np.asarray(values, dtype=np.float64).ravel()
    if keys_arr.shape != values_arr.shape:
        raise ValueError(f"keys ({keys_arr.size}) and values ({values_arr.size}) differ in length")
    out_dtype = np.dtype(dtype)
    if data.dtype == np.bool_:
        data = data.view(np.uint8)
    info = np.iinfo(data.dtype)
    lo = info.min
    span = int(info.max) - int(lo) + 1
    if span > 1 << 16:
        # Tables over the whole range of wide types would be huge; size them to the data.
        lo = int(min(data.min(initial=0), keys_arr.min(initial=0)))
        span = int(max(data.max(initial=0), keys_arr.max(initial=0))) - lo + 1
    table = np.full(span, float(default_value), dtype=np.float64)
    in_range = (keys_arr >= lo) & (keys_arr < lo + span)
    # Later duplicates win, as a dict built from the pairs would.
    table[keys_arr[in_range] - lo] = values_arr[in_range]
    if data.dtype == np.uint8:
        return apply_uint8_lut(data, _lut_for_uint8(table, out_dtype), out_dtype)
    table_out = convert_saturate(table, out_dtype)
    index = data if lo == 0 else data.astype(np.int64) - lo
    return np.take(table_out, index)
