"""Colour and dtype conversion of decoded pixels to what the decoders were asked for.

YCbCr is ITU-R BT.601 in limited ("studio") range, like DALI; 16-bit sources keep the
high byte for uint8 (see image_codec's conventions).
"""

from __future__ import annotations

import cv2
import numpy as np

from chute.ops.decoders.image_headers import DecodeError

__all__ = ["convert_color", "convert_dtype"]

# BT.601 limited range on 8-bit RGB, as rows of a 3x4 affine matrix.
_YCBCR_MATRIX = np.array(
    [
        [65.481 / 255, 128.553 / 255, 24.966 / 255, 16.0],
        [-37.797 / 255, -74.203 / 255, 112.0 / 255, 128.0],
        [112.0 / 255, -93.786 / 255, -18.214 / 255, 128.0],
    ],
    dtype=np.float32,
)


def convert_color(image: np.ndarray, layout: str, out_type: str) -> np.ndarray:
    if out_type == "ANY_DATA" or layout == out_type:
        return image
    if out_type == "GRAY":
        if layout == "L":
            return image
        if layout == "LA":
            return image[:, :, :1]
        code = {"RGB": cv2.COLOR_RGB2GRAY, "RGBA": cv2.COLOR_RGBA2GRAY, "BGR": cv2.COLOR_BGR2GRAY}
        return cv2.cvtColor(image, code[layout])[:, :, None]
    rgb = _to_rgb(image, layout)
    if out_type == "RGB":
        return rgb
    if out_type == "BGR":
        return cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)
    matrix = _YCBCR_MATRIX
    if rgb.dtype == np.uint16:
        matrix = matrix.copy()
        matrix[:, 3] *= 257.0
    return cv2.transform(rgb, matrix)


def _to_rgb(image: np.ndarray, layout: str) -> np.ndarray:
    if layout == "RGB":
        return image
    if layout == "L":
        return cv2.cvtColor(image, cv2.COLOR_GRAY2RGB)
    if layout == "LA":
        return cv2.cvtColor(np.ascontiguousarray(image[:, :, 0]), cv2.COLOR_GRAY2RGB)
    if layout == "RGBA":
        return cv2.cvtColor(image, cv2.COLOR_RGBA2RGB)
    if layout == "BGR":
        return cv2.cvtColor(image, cv2.COLOR_BGR2RGB)
    raise DecodeError(f"cannot convert pixel layout {layout} to RGB")


def convert_dtype(image: np.ndarray, out_dtype: np.dtype) -> np.ndarray:
    if image.dtype == out_dtype:
        return image  # made contiguous by the copy out of the decoder's memory
    if image.dtype == np.uint8:
        if out_dtype == np.uint16:
            return np.multiply(image, 257, dtype=np.uint16)
        return np.multiply(image, np.float32(1 / 255), dtype=np.float32)
    # 16-bit source
    if out_dtype == np.uint8:
        return np.right_shift(image, 8).astype(np.uint8)
    return np.multiply(image, np.float32(1 / 65535), dtype=np.float32)
