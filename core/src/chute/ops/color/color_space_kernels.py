"""Per-sample CPU kernel of ``color_space_conversion`` between RGB, BGR, GRAY, YCbCr and HSV.

Conventions (OpenCV's and JPEG's, so results line up with ``cv2.cvtColor``):

* GRAY is BT.601 luma ``0.299 R + 0.587 G + 0.114 B``; GRAY -> color replicates it.
* YCbCr is ITU-R BT.601 full range as JPEG (JFIF) uses it, channels in Y, Cb, Cr order::

      Y  =  0.299 R + 0.587 G + 0.114 B
      Cb = (B - Y) / 1.772 + mid
      Cr = (R - Y) / 1.402 + mid

  with ``mid`` the type's mid-gray: 128 for uint8, 32768 for uint16, 0.5 for floats.
* HSV is OpenCV's: for uint8, H in [0, 180) (degrees / 2), S and V in [0, 255]; for floats
  (expected in [0, 1]), H in [0, 360) degrees and S, V in [0, 1]. HSV needs uint8 or float.

All conversions among RGB, BGR, GRAY and YCbCr compose into one affine map and run as a single
``cv2.transform``; HSV goes through ``cv2.cvtColor``. The output has the input's dtype. Float
data is converted in float arithmetic; uint8 data uses OpenCV's fixed-point path, which is
within 1 of the exactly rounded value (about 2% of YCbCr values differ) and several times
faster than a float round trip.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from chute.ops.image.convert_kernels import convert_saturate, half_range

__all__ = [
    "color_space_conversion",
    "from_rgb",
    "image_type_channels",
    "image_type_name",
    "to_rgb",
]

_KR, _KB = 0.299, 0.114
_KG = 1.0 - _KR - _KB

# RGB -> Y, Cb, Cr without the mid-gray offset (added per dtype).
_RGB_TO_YCBCR = np.array(
    [
        [_KR, _KG, _KB],
        [-_KR / (2 * (1 - _KB)), -_KG / (2 * (1 - _KB)), 0.5],
        [0.5, -_KG / (2 * (1 - _KR)), -_KB / (2 * (1 - _KR))],
    ],
    dtype=np.float64,
)
_LINEAR = ("RGB", "BGR", "GRAY", "YCbCr")
_CANONICAL = {name.upper(): name for name in (*_LINEAR, "HSV")}


def image_type_name(image_type: Any) -> str:
    """The canonical color space name (RGB, BGR, GRAY, YCbCr, HSV) of an image type."""
    name = str(getattr(image_type, "arg", getattr(image_type, "value", image_type)))
    canonical = _CANONICAL.get(name.upper())
    if canonical is None:
        raise ValueError(
            f"color_space_conversion supports RGB, BGR, GRAY, YCbCr and HSV, got {image_type!r}"
        )
    return canonical


def image_type_channels(image_type: Any) -> int:
    """Return the channel count of an image type (1 for GRAY, else 3)."""
    return 1 if image_type_name(image_type) == "GRAY" else 3


def to_rgb(space: str, mid: float) -> tuple[np.ndarray, np.ndarray]:
    """Return (3 x C matrix, offset) mapping a pixel of ``space`` to RGB."""
    if space == "RGB":
        return np.eye(3), np.zeros(3)
    if space == "BGR":
        return np.eye(3)[:, ::-1], np.zeros(3)
    if space == "GRAY":
        return np.ones((3, 1)), np.zeros(3)
    inverse = np.linalg.inv(_RGB_TO_YCBCR)  # YCbCr
    return inverse, -inverse @ np.array([0.0, mid, mid])


def from_rgb(space: str, mid: float) -> tuple[np.ndarray, np.ndarray]:
    """Return (C x 3 matrix, offset) mapping an RGB pixel to ``space``."""
    if space == "RGB":
        return np.eye(3), np.zeros(3)
    if space == "BGR":
        return np.eye(3)[::-1], np.zeros(3)
    if space == "GRAY":
        return _RGB_TO_YCBCR[:1], np.zeros(1)
    return _RGB_TO_YCBCR, np.array([0.0, mid, mid])


def _linear(image: np.ndarray, src: str, dst: str) -> np.ndarray:
    mid = half_range(image.dtype)
    m_in, o_in = to_rgb(src, mid)
    m_out, o_out = from_rgb(dst, mid)
    matrix = m_out @ m_in
    offset = m_out @ o_in + o_out
    if src == "GRAY" or (np.all(offset == 0) and np.all(np.isin(matrix, (0.0, 1.0)))):
        # Pure channel permutations and gray replication: exact copies, no arithmetic.
        order = [int(np.argmax(row)) for row in matrix]
        if src == "GRAY" and dst == "YCbCr":
            out = np.empty((*image.shape[:-1], 3), dtype=image.dtype)
            out[..., 0] = image[..., 0]
            out[..., 1:] = mid
            return out
        return np.ascontiguousarray(image[..., order])
    affine = np.concatenate([matrix, offset[:, None]], axis=1)
    work = image
    if image.dtype not in (np.uint8, np.uint16, np.int16, np.float32, np.float64):
        work = image.astype(np.float64 if image.dtype.itemsize > 4 else np.float32)
    shape = work.shape
    if work.ndim != 3:
        work = work.reshape(-1, 1, shape[-1])
    result = cv2.transform(
        work, affine.astype(np.float64 if work.dtype == np.float64 else np.float32)
    )
    result = result.reshape(*shape[:-1], matrix.shape[0])
    return result if result.dtype == image.dtype else convert_saturate(result, image.dtype)


def color_space_conversion(
    image: np.ndarray, image_type: Any = "RGB", output_type: Any = "RGB"
) -> np.ndarray:
    """Convert an HWC image from ``image_type`` to ``output_type`` (``types.ImageType`` or name)."""
    image = np.asarray(image)
    src, dst = image_type_name(image_type), image_type_name(output_type)
    if image.ndim == 2:
        image = image[..., None]
    expected = image_type_channels(src)
    if image.shape[-1] != expected:
        raise ValueError(f"{src} images have {expected} channel(s), got shape {image.shape}")
    if src == dst:
        return image.copy()
    if "HSV" not in (src, dst):
        return _linear(image, src, dst)
    if image.dtype not in (np.uint8, np.float32):
        if image.dtype.kind != "f":
            raise TypeError(f"HSV conversion needs uint8 or float input, got {image.dtype}")
        return color_space_conversion(image.astype(np.float32), src, dst).astype(image.dtype)
    shape = image.shape
    work = image if image.ndim == 3 else image.reshape(-1, 1, shape[-1])
    if src == "HSV":
        rgb = cv2.cvtColor(np.ascontiguousarray(work), cv2.COLOR_HSV2RGB)
        return (
            rgb.reshape(shape)
            if dst == "RGB"
            else _linear(rgb, "RGB", dst).reshape(*shape[:-1], image_type_channels(dst))
        )
    rgb = work if src == "RGB" else _linear(work, src, "RGB")
    return cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2HSV).reshape(*shape[:-1], 3)
