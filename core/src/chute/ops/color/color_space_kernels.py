"""Per-sample CPU kernel of ``color_space_conversion`` between RGB, BGR, GRAY, YCbCr and HSV.

Conventions (DALI 2.4's CPU operator, checked pixel for pixel over all 2**24 uint8 colors):

* GRAY is BT.601 luma ``0.299 R + 0.587 G + 0.114 B`` (for uint8 exactly ``cv2.cvtColor``);
  GRAY -> color replicates it.
* YCbCr is ITU-R BT.601 *limited range* ("studio swing"), channels in Y, Cb, Cr order: for
  uint8, Y in [16, 235] and Cb, Cr in [16, 240] around 128::

      Y  = 16  + 219/255 (0.299 R + 0.587 G + 0.114 B)
      Cb = 128 + 224/255 (B - Y') / 1.772         (Y' = the luma in brackets)
      Cr = 128 + 224/255 (R - Y') / 1.402

  YCbCr -> RGB is the exact inverse; YCbCr -> GRAY is ``255/219 (Y - 16)`` and GRAY -> YCbCr
  ``(16 + 219/255 G, 128, 128)``. uint8 results are the float32 sums (in DALI's order)
  rounded half up and saturated, so they equal DALI's bit for bit. For other types the
  offsets scale with the type: black ``mid / 8`` and chroma ``mid`` (mid-gray: 128 for
  uint8, 32768 for uint16, 0.5 for floats, so 0.0625 and 0.5 for floats in [0, 1]).
  (DALI's CPU operator takes only uint8.)
* HSV is OpenCV's (DALI 2.4 has no HSV image type; chute's extension): for uint8, H in
  [0, 180) (degrees / 2), S and V in [0, 255]; for floats (expected in [0, 1]), H in
  [0, 360) degrees and S, V in [0, 1]. HSV needs uint8 or float.

A conversion among RGB, BGR, GRAY and YCbCr is one affine map (``to_rgb``/``from_rgb``
compose it, as the GPU backend does). On the CPU, uint8 runs ``cv2.transform`` in float32 and
recomputes, in DALI's exact order, only the values within 1e-3 of a rounding tie.
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
# full-range BT.601 (rows Y, Cb, Cr without offsets) and the limited range's scales
_BT601 = np.array(
    [
        [_KR, _KG, _KB],
        [-_KR / (2 * (1 - _KB)), -_KG / (2 * (1 - _KB)), 0.5],
        [0.5, -_KG / (2 * (1 - _KR)), -_KB / (2 * (1 - _KR))],
    ],
    dtype=np.float64,
)
_RGB_TO_YCBCR = _BT601 * (np.array([219.0, 224.0, 224.0]) / 255.0)[:, None]
_YCBCR_TO_RGB = np.linalg.inv(_RGB_TO_YCBCR)
_YCBCR_TO_RGB[np.abs(_YCBCR_TO_RGB) < 1e-12] = 0.0
_LINEAR = ("RGB", "BGR", "GRAY", "YCbCr")
_CANONICAL = {name.upper(): name for name in (*_LINEAR, "HSV")}
# uint8 values this close to a rounding tie after cv2.transform are recomputed exactly
_TIE_EPS = 1e-3


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


def _ycbcr_offset(mid: float) -> np.ndarray:
    """(black, chroma, chroma) of limited-range YCbCr for a type of mid-gray ``mid``."""
    return np.array([mid / 8.0, mid, mid])


def to_rgb(space: str, mid: float) -> tuple[np.ndarray, np.ndarray]:
    """Return (3 x C matrix, offset) mapping a pixel of ``space`` to RGB."""
    if space == "RGB":
        return np.eye(3), np.zeros(3)
    if space == "BGR":
        return np.eye(3)[:, ::-1], np.zeros(3)
    if space == "GRAY":
        return np.ones((3, 1)), np.zeros(3)
    return _YCBCR_TO_RGB, -_YCBCR_TO_RGB @ _ycbcr_offset(mid)  # YCbCr


def from_rgb(space: str, mid: float) -> tuple[np.ndarray, np.ndarray]:
    """Return (C x 3 matrix, offset) mapping an RGB pixel to ``space``."""
    if space == "RGB":
        return np.eye(3), np.zeros(3)
    if space == "BGR":
        return np.eye(3)[::-1], np.zeros(3)
    if space == "GRAY":
        return _BT601[:1], np.zeros(1)
    return _RGB_TO_YCBCR, _ycbcr_offset(mid)


def _steps(src: str, dst: str, mid: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(matrix, offset before, offset after) of DALI's direct conversion ``src`` -> ``dst``."""
    m_in, _ = to_rgb(src, mid)
    m_out, post = from_rgb(dst, mid)
    pre = np.zeros(m_in.shape[1])
    if src == "YCbCr":
        pre = _ycbcr_offset(mid)
        m_in = _YCBCR_TO_RGB
    matrix = m_out @ m_in
    matrix[np.abs(matrix) < 1e-12] = 0.0
    return matrix, pre, post


def _exact_u8(values: np.ndarray, matrix: np.ndarray, pre: np.ndarray, post: np.ndarray):
    """DALI's float32 sums ``((m0 x0 + m1 x1) + m2 x2) + post`` of ``x = values - pre``."""
    x = values.astype(np.float32) - pre.astype(np.float32)
    m = matrix.astype(np.float32)
    out = np.zeros((x.shape[0], m.shape[0]), np.float32)
    for row in range(m.shape[0]):
        acc = x[:, 0] * m[row, 0]
        for col in range(1, m.shape[1]):
            acc = acc + x[:, col] * m[row, col]
        out[:, row] = acc + np.float32(post[row])
    return out


def _round_u8(values: np.ndarray) -> np.ndarray:
    """Round half up and saturate to uint8 (DALI's ConvertSat of a float32)."""
    return np.clip(np.floor(values + np.float32(0.5)), 0, 255).astype(np.uint8)


def _affine_u8(image: np.ndarray, matrix: np.ndarray, pre: np.ndarray, post: np.ndarray):
    flat = image.reshape(-1, 1, image.shape[-1])
    affine = np.concatenate([matrix, (post - matrix @ pre)[:, None]], axis=1)
    shifted = cv2.transform(flat.astype(np.float32), affine.astype(np.float32))
    shifted = shifted.reshape(flat.shape[0], matrix.shape[0])
    shifted += np.float32(0.5)
    rounded = np.floor(shifted)
    frac = np.subtract(shifted, rounded, out=shifted)
    near_tie = (frac < _TIE_EPS) | (frac > 1.0 - _TIE_EPS)
    # (flat indices // channels: much faster than near_tie.any(axis=1) on narrow rows)
    rows = np.unique(np.flatnonzero(near_tie) // matrix.shape[0])
    if rows.size:
        exact = _exact_u8(flat[rows, 0], matrix, pre, post)
        rounded[rows] = np.floor(exact + np.float32(0.5))
    np.clip(rounded, 0, 255, out=rounded)
    return rounded.astype(np.uint8).reshape(*image.shape[:-1], matrix.shape[0])


_CV_DEPTHS = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.float32))


def _rows(image: np.ndarray) -> np.ndarray:
    """A contiguous (rows, width, C) view of an (..., W, C) image for cv2.cvtColor.

    (A (pixels, 1, C) shape gives OpenCV one-pixel rows: ~35x slower than whole rows.)
    """
    width = image.shape[-2] if image.ndim >= 3 else 1
    return np.ascontiguousarray(image).reshape(-1, width, image.shape[-1])


def _linear(image: np.ndarray, src: str, dst: str) -> np.ndarray:
    if dst == "GRAY" and src in ("RGB", "BGR") and image.dtype == np.uint8:
        # OpenCV's luma is exactly this module's for uint8 (the module docstring); first,
        # before any matrix is built: the Python around it cost more than the conversion
        code = cv2.COLOR_RGB2GRAY if src == "RGB" else cv2.COLOR_BGR2GRAY
        return cv2.cvtColor(_rows(image), code).reshape(*image.shape[:-1], 1)
    if src != dst and "BGR" in (src, dst) and "RGB" not in (src, dst):
        # DALI sums in R, G, B order: swap around the RGB conversion
        if src == "BGR":
            return _linear(image[..., ::-1], "RGB", dst)
        return np.ascontiguousarray(_linear(image, src, "RGB")[..., ::-1])
    mid = half_range(image.dtype)
    matrix, pre, post = _steps(src, dst, mid)
    if src == "GRAY" and dst in ("RGB", "BGR"):
        return np.ascontiguousarray(np.repeat(image, 3, axis=-1))
    if np.all(pre == 0) and np.all(post == 0) and np.all(np.isin(matrix, (0.0, 1.0))):
        # pure channel permutations: exact copies, no arithmetic
        order = [int(np.argmax(row)) for row in matrix]
        if order == [2, 1, 0] and image.dtype in _CV_DEPTHS:
            # RGB <-> BGR: OpenCV's swap is a copy too, ~40x faster than fancy indexing
            return cv2.cvtColor(_rows(image), cv2.COLOR_RGB2BGR).reshape(image.shape)
        return np.ascontiguousarray(image[..., order])
    if image.dtype == np.uint8:
        return _affine_u8(image, matrix, pre, post)
    affine = np.concatenate([matrix, (post - matrix @ pre)[:, None]], axis=1)
    work = image
    if image.dtype not in (np.uint16, np.int16, np.float32, np.float64):
        work = image.astype(np.float64 if image.dtype.itemsize > 4 else np.float32)
    shape = work.shape
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
    if image.size == 0:  # (OpenCV rejects empty images)
        return np.zeros((*image.shape[:-1], image_type_channels(dst)), image.dtype)
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
