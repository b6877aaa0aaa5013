"""Per-sample CPU kernel of ``gaussian_blur`` over HW / HWC images, with selectable borders.

Window and sigma follow DALI's documented rules, per axis (H then W):

* only ``sigma`` given: radius = ceil(3 * sigma), window = 2 * radius + 1;
* only ``window_size`` given: sigma = ((window_size - 1) / 2 - 1) * 0.3 + 0.8;
* both given: used as given; a sigma of 0 on an axis leaves that axis unblurred.

The kernel is the sampled Gaussian normalised to sum 1 (``cv2.getGaussianKernel`` with an
explicit sigma) and the image is filtered separably by ``cv2.GaussianBlur``. uint8 images use
OpenCV's fixed-point path, within 1 of the exact float result.

``border`` names OpenCV's modes (``fill`` marks the pixels outside ``abcdef``)::

    "constant"     vvvvvv|abcdef|vvvvvv   (v = fill_value)
    "reflect"      fedcba|abcdef|fedcba
    "reflect_101"  fedcb|abcdef|edcba     (DALI's and OpenCV's default)
    "replicate"    aaaaaa|abcdef|ffffff
    "wrap"         abcdef|abcdef|abcdef

OpenCV's Gaussian filter has no wrap mode and only a zero constant, so those cases pad with
``np.pad`` first and filter the padded image, whose extra pixels are cut away.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from chute.ops.image.convert_kernels import convert_saturate

__all__ = ["BORDER_MODES", "gaussian_blur", "gaussian_window", "sigma_pair"]

BORDER_MODES = {
    "constant": cv2.BORDER_CONSTANT,
    "reflect": cv2.BORDER_REFLECT,
    "reflect_101": cv2.BORDER_REFLECT_101,
    "replicate": cv2.BORDER_REPLICATE,
    "wrap": cv2.BORDER_WRAP,
}

DTypeLike = Any


def sigma_pair(value: float | Sequence[float] | np.ndarray, name: str) -> tuple[float, float]:
    """(H, W) of ``name`` given as one value or one per axis."""
    flat = np.asarray(value, dtype=np.float64).ravel()
    if flat.size == 1:
        return float(flat[0]), float(flat[0])
    if flat.size == 2:
        return float(flat[0]), float(flat[1])
    raise ValueError(f"{name} takes one value or one per axis (H, W), got {flat.size}")


def gaussian_window(sigma: float = 0.0, window_size: int = 0) -> tuple[float, int]:
    """Return (sigma, window_size) of one axis from the given pair, as DALI derives them."""
    if window_size < 0 or sigma < 0:
        raise ValueError(f"sigma and window_size must be non-negative, got {sigma}, {window_size}")
    if window_size == 0:
        if sigma == 0:
            raise ValueError("gaussian_blur needs a sigma or a window_size")
        return sigma, 2 * math.ceil(3 * sigma) + 1
    if window_size % 2 == 0:
        raise ValueError(f"window_size must be odd, got {window_size}")
    if sigma == 0:
        sigma = ((window_size - 1) / 2 - 1) * 0.3 + 0.8
    return sigma, int(window_size)


def gaussian_blur(
    image: np.ndarray,
    sigma: float | Sequence[float] = 0.0,
    window_size: int | Sequence[int] = 0,
    border: str = "reflect_101",
    fill_value: float = 0.0,
    dtype: DTypeLike | None = None,
) -> np.ndarray:
    """Blur an HW or HWC image with a Gaussian of ``sigma`` / ``window_size`` per axis (H, W)."""
    image = np.asarray(image)
    if image.ndim not in (2, 3):
        raise ValueError(f"gaussian_blur expects an HW or HWC image, got shape {image.shape}")
    if border not in BORDER_MODES:
        raise ValueError(f"border must be one of {sorted(BORDER_MODES)}, got {border!r}")
    out_dtype = image.dtype if dtype is None else np.dtype(dtype)
    sig_h, sig_w = sigma_pair(sigma, "sigma")
    win_h, win_w = (int(v) for v in sigma_pair(window_size, "window_size"))
    if sig_h == 0 and win_h == 0 and sig_w == 0 and win_w == 0:
        raise ValueError("gaussian_blur needs a sigma or a window_size")
    # An axis with neither sigma nor window is left alone (window 1).
    sig_h, win_h = gaussian_window(sig_h, win_h) if (sig_h or win_h) else (0.0, 1)
    sig_w, win_w = gaussian_window(sig_w, win_w) if (sig_w or win_w) else (0.0, 1)

    work = image
    native = image.dtype in (np.uint8, np.uint16, np.int16, np.float32, np.float64)
    if not native or (out_dtype.kind == "f" and image.dtype.kind != "f"):
        # Float output from integer input must not round in between.
        work = image.astype(np.float64 if image.dtype == np.float64 else np.float32)
    if work.ndim == 3 and work.shape[2] > 4:
        planes = [
            gaussian_blur(work[..., c], (sig_h, sig_w), (win_h, win_w), border, fill_value)
            for c in range(work.shape[2])
        ]
        return convert_saturate(np.stack(planes, axis=-1), out_dtype)

    rad_h, rad_w = win_h // 2, win_w // 2
    mode = BORDER_MODES[border]
    if border == "wrap" or (border == "constant" and fill_value != 0):
        # np.pad also wraps windows wider than the image, which copyMakeBorder refuses.
        pads = ((rad_h, rad_h), (rad_w, rad_w)) + ((0, 0),) * (work.ndim - 2)
        if border == "wrap":
            src = np.pad(work, pads, mode="wrap")
        else:
            src = np.pad(work, pads, mode="constant", constant_values=fill_value)
        blurred = cv2.GaussianBlur(
            src, (win_w, win_h), sig_w, sigmaY=sig_h, borderType=cv2.BORDER_REPLICATE
        )
        blurred = blurred[rad_h : rad_h + work.shape[0], rad_w : rad_w + work.shape[1]]
    else:
        blurred = cv2.GaussianBlur(
            np.ascontiguousarray(work), (win_w, win_h), sig_w, sigmaY=sig_h, borderType=mode
        )
    blurred = blurred.reshape(work.shape)
    if blurred.dtype == out_dtype:
        return np.ascontiguousarray(blurred)
    return convert_saturate(blurred, out_dtype, overwrite=True)
