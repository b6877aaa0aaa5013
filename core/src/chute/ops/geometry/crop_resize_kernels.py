"""Crop-and-resize compositions, fused into one resampling pass: random_resized_crop and
resize_crop_mirror. Only the pixels the window needs are read, and the crop window
maps to a sub-pixel region of the input, so nothing is resampled twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from chute.ops.geometry.crop_kernels import crop_window
from chute.ops.geometry.resize_kernels import ResizePlan, axis_filters, resample_plan, resize_plan
from chute.runtime.crop_window import random_crop_window


def _size2(size: Sequence[float] | float) -> tuple[int, int]:
    values = np.asarray(size, dtype=np.float64).ravel()
    if values.size == 1:
        values = np.repeat(values, 2)
    if values.size != 2 or np.any(values <= 0):
        raise ValueError(f"size must be one or two positive values (H, W), got {size!r}")
    return round(float(values[0])), round(float(values[1]))


def random_resized_crop(
    image: np.ndarray,
    size: Sequence[float] | float,
    rng: np.random.Generator,
    random_area: Sequence[float] = (0.08, 1.0),
    random_aspect_ratio: Sequence[float] = (3 / 4, 4 / 3),
    num_attempts: int = 10,
    interp_type: Any = "linear",
    min_filter: Any = None,
    mag_filter: Any = None,
    antialias: bool = True,
    dtype: Any = None,
) -> np.ndarray:
    """Crop a random window (uniform area fraction, log-uniform aspect) and resize it to ``size``.

    The window is drawn from ``rng`` exactly as the cropping decoders draw theirs
    (:func:`chute.runtime.crop_window.random_crop_window`).
    """
    out_h, out_w = _size2(size)
    in_h, in_w = image.shape[:2]
    y0, x0, h, w = random_crop_window(
        in_h, in_w, tuple(random_area), tuple(random_aspect_ratio), num_attempts, rng
    )
    plan = ResizePlan(out_h, out_w, (float(y0), float(y0 + h)), (float(x0), float(x0 + w)))
    filters = axis_filters(plan, interp_type, min_filter, mag_filter)
    return resample_plan(image, plan, filters, antialias=antialias, dtype=dtype)


def crop_mirror_plan(
    in_h: int,
    in_w: int,
    *,
    crop: Sequence[float] | float | None = None,
    crop_h: float | None = None,
    crop_w: float | None = None,
    crop_pos_x: float = 0.5,
    crop_pos_y: float = 0.5,
    mirror: int | bool = 0,
    rounding: str = "round",
    roi_start: Sequence[float] | None = None,
    roi_end: Sequence[float] | None = None,
    roi_relative: bool = False,
    **size_args: Any,
) -> ResizePlan:
    """The one resampling (output size and input region) of fn.resize_crop_mirror.

    The resize (DALI's size arguments and region of interest, ``size_args`` as
    :func:`resize_plan` takes them) is planned first; the crop window is placed in the
    resized image (``crop_pos * (resized - crop)``, rounded by ``rounding``) and mapped
    back to a sub-pixel region of the input; ``mirror`` bit 1 flips it horizontally,
    bit 2 vertically (bit 4, depthwise, needs volumes). Shared by the CPU and GPU backends.
    """
    flips = int(mirror)
    if flips & 4:
        raise ValueError("mirror bit 4 (depthwise flip) needs volumes; images have no depth")
    plan = resize_plan(
        in_h, in_w, roi_start=roi_start, roi_end=roi_end, roi_relative=roi_relative, **size_args
    )
    # DALI reads crop_pos as float32: 0.7 * 5 is 3.4999999 there, which rounds to 3
    pos_x, pos_y = float(np.float32(crop_pos_x)), float(np.float32(crop_pos_y))
    y0, x0, h, w = crop_window(
        plan.out_h, plan.out_w, crop, crop_h, crop_w, None, pos_x, pos_y, rounding
    )
    (ry0, ry1), (rx0, rx1) = plan.roi_y, plan.roi_x
    step_y, step_x = (ry1 - ry0) / plan.out_h, (rx1 - rx0) / plan.out_w
    roi_y = (ry0 + y0 * step_y, ry0 + (y0 + h) * step_y)
    roi_x = (rx0 + x0 * step_x, rx0 + (x0 + w) * step_x)
    if flips & 1:
        roi_x = (roi_x[1], roi_x[0])
    if flips & 2:
        roi_y = (roi_y[1], roi_y[0])
    return ResizePlan(h, w, roi_y, roi_x)


def resize_crop_mirror(
    image: np.ndarray,
    *,
    interp_type: Any = "linear",
    min_filter: Any = None,
    mag_filter: Any = None,
    antialias: bool = True,
    dtype: Any = None,
    **plan_args: Any,
) -> np.ndarray:
    """Resize (DALI size arguments), crop the resized image, and flip it as ``mirror`` says.

    Equivalent to ``flip(crop(resize(image)))`` but resampled once, straight from the
    input (:func:`crop_mirror_plan` takes ``plan_args``). Parts of the crop window beyond
    the resized image repeat its edge.
    """
    in_h, in_w = image.shape[:2]
    window = crop_mirror_plan(in_h, in_w, **plan_args)
    filters = axis_filters(window, interp_type, min_filter, mag_filter)
    return resample_plan(image, window, filters, antialias=antialias, dtype=dtype)
