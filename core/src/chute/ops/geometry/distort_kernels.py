"""Displacement distortions: jitter, water and sphere, on OpenCV's remap.

As in DALI's displacement filters, each output pixel ``(x, y)`` samples the input at
a point given in continuous coordinates (pixel centres at +0.5); the default sampling
is nearest-neighbour and points outside the image take ``fill_value`` (0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from chute.ops.geometry._border import cv_apply, cv_border
from chute.ops.geometry.resize_kernels import interp_name

_CV_INTERP = {"nn": cv2.INTER_NEAREST, "linear": cv2.INTER_LINEAR}


def remap(
    image: np.ndarray,
    src_x: np.ndarray,
    src_y: np.ndarray,
    interp_type: Any = "nn",
    fill_value: float | Sequence[float] | None = 0,
    border: str = "constant",
) -> np.ndarray:
    """Sample an HWC/HW image at per-output-pixel points given in continuous coordinates."""
    name = interp_name(interp_type)
    if name not in _CV_INTERP:
        raise ValueError(f"displacement filters support 'nn' and 'linear', got {name!r}")
    if name == "nn":
        # the pixel containing the point; whole-number maps keep OpenCV's rounding
        # (ties to even) out of it, so points on pixel corners stay exact
        map_x = np.floor(src_x).astype(np.float32)
        map_y = np.floor(src_y).astype(np.float32)
    else:
        # OpenCV's pixel centres are at whole numbers
        map_x = (src_x - 0.5).astype(np.float32)
        map_y = (src_y - 0.5).astype(np.float32)
    mode = cv_border(border)

    def run(chunk: np.ndarray, fill: tuple) -> np.ndarray:
        return cv2.remap(chunk, map_x, map_y, _CV_INTERP[name], borderMode=mode, borderValue=fill)

    return cv_apply(image, run, fill_value)


def jitter(
    image: np.ndarray,
    rng: np.random.Generator,
    nDegree: int = 2,
    interp_type: Any = "nn",
) -> np.ndarray:
    """Move every pixel by a random whole-pixel offset in ``[-nDegree//2, nDegree - nDegree//2]``.

    Offsets are drawn per pixel (the same for all channels) from ``rng`` and the
    source is clamped to the image, as DALI's ``fn.jitter``.
    """
    if nDegree < 0:
        raise ValueError(f"nDegree must be >= 0, got {nDegree}")
    h, w = image.shape[:2]
    low = -(nDegree // 2)
    offsets = rng.integers(low, low + nDegree, size=(2, h, w), endpoint=True, dtype=np.int32)
    cols = np.clip(np.arange(w, dtype=np.int32)[None, :] + offsets[0], 0, w - 1)
    rows = np.clip(np.arange(h, dtype=np.int32)[:, None] + offsets[1], 0, h - 1)
    return remap(image, cols + 0.5, rows + 0.5, interp_type, None, "replicate")


def water(
    image: np.ndarray,
    ampl_x: float = 10.0,
    ampl_y: float = 10.0,
    freq_x: float = 2 * math.pi / 128,
    freq_y: float = 2 * math.pi / 128,
    phase_x: float = 0.0,
    phase_y: float = 0.0,
    interp_type: Any = "nn",
    fill_value: float | Sequence[float] = 0,
    border: str = "constant",
) -> np.ndarray:
    """Ripple an image: pixel (x, y) reads ``(x + ampl_x sin(freq_x y + phase_x),
    y + ampl_y cos(freq_y x + phase_y))`` (DALI's ``fn.water``)."""
    h, w = image.shape[:2]
    ys = np.arange(h, dtype=np.float64)[:, None]
    xs = np.arange(w, dtype=np.float64)[None, :]
    src_x = xs + ampl_x * np.sin(freq_x * ys + phase_x)
    src_y = ys + ampl_y * np.cos(freq_y * xs + phase_y)
    src_x, src_y = np.broadcast_arrays(src_x, src_y)
    return remap(image, src_x, src_y, interp_type, fill_value, border)


def sphere(
    image: np.ndarray,
    interp_type: Any = "nn",
    fill_value: float | Sequence[float] = 0,
    border: str = "constant",
) -> np.ndarray:
    """Bulge an image as if seen on a sphere (DALI's ``fn.sphere``).

    A pixel at distance ``r`` from the centre reads the input at distance ``r^2 / d``
    along the same ray, ``d`` being the larger half-extent.
    """
    h, w = image.shape[:2]
    mid_x, mid_y = w * 0.5, h * 0.5
    d = int(max(mid_x, mid_y))
    dy = np.arange(h, dtype=np.float64)[:, None] + 0.5 - mid_y
    dx = np.arange(w, dtype=np.float64)[None, :] + 0.5 - mid_x
    radius = np.sqrt(dx * dx + dy * dy) / d
    return remap(image, mid_x + radius * dx, mid_y + radius * dy, interp_type, fill_value, border)
