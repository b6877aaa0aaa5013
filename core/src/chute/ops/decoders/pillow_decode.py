"""Decoding through Pillow: every format but plain JPEG, with chute's size and EXIF rules.

Also OpenCV for 16-bit colour PNGs, whose low bytes Pillow drops.
"""

from __future__ import annotations

import io
import warnings

import cv2
import numpy as np
from PIL import Image, ImageFile

from chute.ops.decoders.image_headers import (
    DecodeError,
    check_pixels,
    header_size,
    jpeg_orientation,
    png_header,
    png_orientation,
)

_PILLOW_FORMAT = {
    "jpeg": "JPEG",
    "png": "PNG",
    "bmp": "BMP",
    "tiff": "TIFF",
    "pnm": "PPM",
    "webp": "WEBP",
    "gif": "GIF",
    "jpeg2000": "JPEG2000",
}
_EXIF_ORIENTATION_TAG = 0x0112
_INVERSE_ORIENTATION = {1: 1, 2: 2, 3: 3, 4: 4, 5: 5, 6: 8, 7: 7, 8: 6}


def open_pillow(buf: memoryview, fmt: str) -> Image.Image:
    """Open lazily (header only) with Pillow's plugin for `fmt`; errors become DecodeError."""
    try:
        return Image.open(io.BytesIO(buf), formats=[_PILLOW_FORMAT[fmt]])
    except Exception as exc:
        raise DecodeError(f"{fmt}: {exc}") from None


def pillow_orientation(buf: memoryview, fmt: str, image: Image.Image) -> int:
    """EXIF orientation (1..8) of an opened image, without decoding its pixels."""
    if fmt == "jpeg":
        return jpeg_orientation(buf)
    if fmt == "png":
        # Pillow would decode the whole PNG to find an eXIf chunk after IDAT.
        return png_orientation(buf)
    if fmt in ("tiff", "webp"):
        try:
            value = image.getexif().get(_EXIF_ORIENTATION_TAG, 1)
        except Exception:
            return 1
        return value if isinstance(value, int) and 1 <= value <= 8 else 1
    return 1


def native_channels(image: Image.Image) -> int:
    """Channels of an opened image as ANY_DATA decodes it (palettes expanded, CMYK as RGB)."""
    mode = image.mode
    if mode in ("1", "L", "I", "F") or mode.startswith("I;16"):
        return 1
    if mode in ("LA", "La"):
        return 2
    if mode == "P":
        return 4 if "transparency" in image.info else 3
    if mode in ("CMYK", "YCbCr", "LAB", "HSV", "RGB", "RGBX"):
        return 3
    return 4 if "A" in image.getbands() else 3


def decode_pillow(
    buf: memoryview, fmt: str, out_dtype: np.dtype, max_pixels: int | None, adjust: bool
) -> tuple[np.ndarray, str, int]:
    """Decode with Pillow; return (pixels, layout, orientation still to apply to them)."""
    if ImageFile.LOAD_TRUNCATED_IMAGES:
        warnings.warn(
            "PIL.ImageFile.LOAD_TRUNCATED_IMAGES is True: truncated images decode "
            "to partly gray pixels instead of raising",
            RuntimeWarning,
            stacklevel=3,
        )
    claimed = _header_size(buf, fmt)
    if claimed is not None:
        check_pixels(*claimed, max_pixels)
    if fmt == "png" and out_dtype != np.uint8:
        try:
            _, _, bit_depth, color_type = png_header(buf)
        except ValueError as exc:
            raise DecodeError(f"png: {exc}") from None
        if bit_depth == 16 and color_type in (2, 6):
            # Pillow keeps only 8 bits of 16-bit colour PNGs; OpenCV keeps all.
            orientation = png_orientation(buf) if adjust else 1
            return _decode_png16_opencv(buf), "RGB" if color_type == 2 else "RGBA", orientation
    with open_pillow(buf, fmt) as image:
        width, height = image.size
        check_pixels(height, width, max_pixels)
        orientation = pillow_orientation(buf, fmt, image)
        try:
            image.load()
            native, layout = _pillow_to_native(image)
        except DecodeError:
            raise
        except Exception as exc:
            raise DecodeError(f"{fmt}: {exc}") from None
        if fmt == "tiff" and orientation > 1 and _EXIF_ORIENTATION_TAG not in image.tag_v2:
            # Pillow's TIFF loader turns the pixels upright itself and drops
            # the tag; undo that when the stored orientation is wanted.
            return native, layout, 1 if adjust else _INVERSE_ORIENTATION[orientation]
    return native, layout, orientation if adjust else 1


def _header_size(buf: memoryview, fmt: str) -> tuple[int, int] | None:
    try:
        return header_size(buf, fmt)
    except ValueError as exc:
        raise DecodeError(str(exc)) from None


def _pillow_to_native(image: Image.Image) -> tuple[np.ndarray, str]:
    mode = image.mode
    if mode.startswith("I;16"):
        return np.asarray(image).astype(np.uint16, copy=False)[:, :, None], "L"
    if mode == "I":
        # 32-bit integer images are rare; treat their range as 16-bit.
        return np.clip(np.asarray(image), 0, 65535).astype(np.uint16)[:, :, None], "L"
    if mode == "F":
        raise DecodeError("floating-point images (Pillow mode F) are not supported")
    if mode in ("L", "LA", "RGB", "RGBA"):
        converted = image
    elif mode == "1":
        converted = image.convert("L")
    elif mode == "La":
        converted = image.convert("LA")
    else:
        converted = image.convert("RGBA" if native_channels(image) == 4 else "RGB")
    array = np.asarray(converted)
    if array.ndim == 2:
        array = array[:, :, None]
    return array, converted.mode


def _decode_png16_opencv(buf: memoryview) -> np.ndarray:
    encoded = np.frombuffer(buf, dtype=np.uint8)
    image = cv2.imdecode(encoded, cv2.IMREAD_UNCHANGED)
    if image is None or image.dtype != np.uint16:
        raise DecodeError("png: OpenCV could not decode this 16-bit PNG")
    code = cv2.COLOR_BGR2RGB if image.shape[2] == 3 else cv2.COLOR_BGRA2RGBA
    return cv2.cvtColor(image, code)
