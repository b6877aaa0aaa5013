"""fn.debayer's CPU kernel: OpenCV's demosaicing, with DALI's pattern and algorithm names.

``blue_position`` (y, x) is where blue sits in the 2x2 tile that starts at the sensor's
second row and column (OpenCV's convention): (0, 0) BG, (0, 1) GB, (1, 0) GR, (1, 1) RG.
The output is RGB (``gray_ocv``: one channel), of the input's type (uint8 or uint16).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

__all__ = ["ALGORITHMS", "CPU_ALGORITHMS", "GPU_ALGORITHMS", "debayer", "pattern_name"]

#: DALI 2.4's algorithm names; "default" is bilinear_ocv on the CPU, default_npp on DALI's GPU.
ALGORITHMS = ("default", "default_npp", "bilinear_ocv", "edgeaware_ocv", "vng_ocv", "gray_ocv")
CPU_ALGORITHMS = ("default", "bilinear_ocv", "edgeaware_ocv", "vng_ocv", "gray_ocv")
#: chute's GPU kernel computes OpenCV's bilinear interpolation (DALI's GPU uses NPP's).
GPU_ALGORITHMS = ("default", "bilinear_ocv")

_PATTERNS = {(0, 0): "BG", (0, 1): "GB", (1, 0): "GR", (1, 1): "RG"}
_SUFFIX = {
    "bilinear_ocv": "2RGB",
    "edgeaware_ocv": "2RGB_EA",
    "vng_ocv": "2RGB_VNG",
    "gray_ocv": "2GRAY",
}


def blue_position(op: str, value: Any, sample: int | None = None) -> tuple[int, int]:
    """The checked (y, x) of blue in the 2x2 tile."""
    where = "" if sample is None else f" of sample {sample}"
    pos = tuple(int(v) for v in np.asarray(value).ravel())
    if len(pos) != 2 or not all(v in (0, 1) for v in pos):
        raise ValueError(
            f"{op}: argument 'blue_position'{where} must be two values in {{0, 1}} (y, x of "
            f"blue in the 2x2 tile), got {list(pos)}"
        )
    return pos  # type: ignore[return-value]


def pattern_name(position: Sequence[int]) -> str:
    """OpenCV's name of the pattern with blue at ``position``: "BG", "GB", "GR" or "RG"."""
    return _PATTERNS[(int(position[0]), int(position[1]))]


def check_image(op: str, image: np.ndarray, algorithm: str) -> None:
    """DALI's rules: one channel, uint8 or uint16 (VNG: uint8), even height and width."""
    if image.dtype not in (np.uint8, np.uint16):
        raise TypeError(f"{op}: takes uint8 or uint16 images, got {image.dtype}")
    if algorithm == "vng_ocv" and image.dtype != np.uint8:
        raise TypeError(f"{op}: algorithm 'vng_ocv' takes uint8 images only, got {image.dtype}")
    if image.ndim == 3 and image.shape[2] != 1:
        raise ValueError(
            f"{op}: takes single-channel images (HW or HWC with C=1), got shape {image.shape}; "
            "for sequences give the layout FHW"
        )
    h, w = image.shape[:2]
    if h % 2 or w % 2:
        raise ValueError(f"{op}: image height and width must be even, got {h}x{w}")


def debayer(image: np.ndarray, position: Sequence[int], algorithm: str = "default") -> np.ndarray:
    """Demosaic one HW / HW1 Bayer image into HWC RGB (or HW1 gray with ``gray_ocv``)."""
    algorithm = "bilinear_ocv" if algorithm == "default" else algorithm
    raw = image[:, :, 0] if image.ndim == 3 else image
    channels = 1 if algorithm == "gray_ocv" else 3
    h, w = raw.shape
    if h == 0 or w == 0:
        return np.zeros((h, w, channels), raw.dtype)
    code = getattr(cv2, f"COLOR_Bayer{pattern_name(position)}{_SUFFIX[algorithm]}")
    out = cv2.demosaicing(np.ascontiguousarray(raw), code)
    return out.reshape(h, w, channels)
