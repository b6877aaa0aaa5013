"""Resize: DALI's output-size rules, regions of interest, and resampling filters.

Filters (``interp_type`` / ``min_filter`` / ``mag_filter``):

- ``"nn"``: the input pixel containing the output pixel's centre, the centres computed in
  float32 as DALI does (rows by a running sum of the step), so the same source pixel is
  picked next to a boundary.
- ``"linear"`` (and ``"triangular"``, its DALI alias): bilinear; when downscaling with
  ``antialias=True`` the triangle is stretched by the scale factor (Pillow's antialiased
  ``BILINEAR`` weights).
- ``"cubic"`` (Keys, a = -0.5) and ``"lanczos3"``: with ``antialias=True`` their
  support is stretched when downscaling too, as Pillow's ``BICUBIC`` / ``LANCZOS``.
- ``"gaussian"``: DALI's Gaussian, sigma = radius / (2 sqrt 2), radius = max(scale, 1).

At the image edges a filter tap that falls outside reads the edge pixel with its full
weight (DALI clamps the source index; Pillow would drop the tap and renormalise): the image
is edge-replicated as far as the filter reaches. uint8 results are within 1 of DALI 2.4's
CPU operator (docs/parity.md).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
from PIL import Image

from chute.ops.geometry._border import as_hwc
from chute.ops.geometry._resample import resample
from chute.runtime import native, output_pool
from chute.runtime.limits import check_output

# the compiled kernel (core/csrc/native.c); without it Pillow resamples uint8
_native_resample = native.resample_u8

_MODES = ("default", "stretch", "not_smaller", "not_larger")
_FILTER_ALIASES = {
    "nn": "nn",
    "nearest": "nn",
    "linear": "linear",
    "triangular": "linear",
    "cubic": "cubic",
    "lanczos3": "lanczos3",
    "gaussian": "gaussian",
}
# a region of interest thinner than this (pixels) is widened, as DALI does
_MIN_ROI = 1e-3
# uint8 images: the compiled kernel computes the engine's filters in one GIL-free call
# (about 4x faster than Pillow); without it, Pillow's resampling does (the engine was
# written to match it), for these filters. The engine's NumPy blocks hold the GIL
# between many small products and do not scale with threads.
_NATIVE_FILTERS = ("linear", "cubic", "lanczos3", "gaussian")
# how far each filter reaches (in input pixels, times the downscaling factor)
_FILTER_REACH = {"linear": 1.0, "cubic": 2.0, "lanczos3": 3.0, "gaussian": 2.0}
_PILLOW_FILTERS = {"linear": Image.BILINEAR, "cubic": Image.BICUBIC, "lanczos3": Image.LANCZOS}


def interp_name(interp: Any) -> str:
    """Normalise an interpolation type (``types.INTERP_LINEAR``, "linear", ...) to a filter name."""
    value = getattr(interp, "arg", getattr(interp, "value", interp))
    name = str(value).lower()
    name = name.removeprefix("interptype.").removeprefix("interp_")
    try:
        return _FILTER_ALIASES[name]
    except KeyError:
        raise ValueError(
            f"unknown interpolation type {interp!r}; expected one of {sorted(_FILTER_ALIASES)}"
        ) from None


@dataclass(frozen=True)
class ResizePlan:
    """Output size and the input region (continuous coordinates, lo > hi = flipped) per axis."""

    out_h: int
    out_w: int
    roi_y: tuple[float, float]
    roi_x: tuple[float, float]


def _pair(value: float | Sequence[float], name: str) -> tuple[float, float]:
    values = np.asarray(value, dtype=np.float64).reshape(-1)
    if values.size == 1:
        return float(values[0]), float(values[0])
    if values.size != 2:
        raise ValueError(f"{name} must have 1 or 2 values (H, W), got {values.size}")
    return float(values[0]), float(values[1])


def _adjust_output_size(
    requested: list[float], in_size: list[float], mode: str, max_size: tuple[float, float] | None
) -> list[float]:
    """DALI's rules: fill in missing extents, apply the mode and the size limit."""
    provided = [r != 0 and s != 0 for r, s in zip(requested, in_size)]
    scale = [r / s if s else 1.0 for r, s in zip(requested, in_size)]
    out = list(requested)
    if not any(provided):
        return list(in_size)
    if mode in ("default", "stretch"):
        if not all(provided):
            if mode == "default":
                # missing extents take the geometric mean of the given scales
                given = [abs(s) for s, p in zip(scale, provided) if p]
                fill = math.prod(given) ** (1.0 / len(given))
            else:
                fill = 1.0
            for d, p in enumerate(provided):
                if not p:
                    scale[d] = fill
                    out[d] = in_size[d] * fill
        if max_size is not None:
            for d in range(2):
                if max_size[d] > 0 and abs(out[d]) > max_size[d]:
                    out[d] = math.copysign(max_size[d], out[d])
        return out
    # not_smaller / not_larger: one scale for all axes, chosen among the given ones
    # DALI compares these scales in float32; do the same so ties resolve identically
    given = [float(np.float32(abs(s))) for s, p in zip(scale, provided) if p]
    final = max(given) if mode == "not_smaller" else min(given)
    if max_size is not None:
        for d in range(2):
            if max_size[d] > 0:
                final = min(final, max_size[d] / in_size[d])
    for d in range(2):
        if not provided[d] or abs(scale[d]) != final:
            out[d] = in_size[d] * math.copysign(final, scale[d])
    return out


def resize_plan(
    in_h: int,
    in_w: int,
    *,
    resize_x: float | None = None,
    resize_y: float | None = None,
    size: Sequence[float] | None = None,
    resize_shorter: float | None = None,
    resize_longer: float | None = None,
    mode: str | None = None,
    max_size: float | Sequence[float] | None = None,
    roi_start: Sequence[float] | None = None,
    roi_end: Sequence[float] | None = None,
    roi_relative: bool = False,
    subpixel_scale: bool = True,
) -> ResizePlan:
    """Compute output size and input region exactly as DALI's resize documents them.

    Exactly one way of giving the size: ``resize_x``/``resize_y`` (either may be
    omitted or 0), ``size`` (H, W; 0 = unspecified), ``resize_shorter`` (= "not_smaller"
    with the same size on both axes) or ``resize_longer`` (= "not_larger"). Negative
    sizes flip. ``roi_start``/``roi_end`` are (y, x), in pixels or, with
    ``roi_relative``, fractions of the input size; start > end flips that axis.
    Fractional output sizes are rounded (halves away from zero) and, with
    ``subpixel_scale``, the region is widened or narrowed around its centre so the
    scale factor stays the one requested.
    """
    ways = (resize_x is not None or resize_y is not None) + (size is not None)
    ways += (resize_shorter is not None) + (resize_longer is not None)
    if ways != 1:
        raise ValueError(
            "give exactly one of: resize_x/resize_y, size, resize_shorter, resize_longer"
        )
    if (resize_shorter is not None or resize_longer is not None) and mode is not None:
        raise ValueError("mode cannot be combined with resize_shorter or resize_longer")
    if resize_shorter is not None:
        mode, requested = "not_smaller", [float(resize_shorter)] * 2
    elif resize_longer is not None:
        mode, requested = "not_larger", [float(resize_longer)] * 2
    elif size is not None:
        requested = list(_pair(size, "size"))
    else:
        requested = [float(resize_y or 0.0), float(resize_x or 0.0)]
    mode = mode or "default"
    if mode not in _MODES:
        raise ValueError(f"mode must be one of {_MODES}, got {mode!r}")
    limit = _pair(max_size, "max_size") if max_size is not None else None

    if (roi_start is None) != (roi_end is None):
        raise ValueError("roi_start and roi_end must be given together")
    lo, hi = [0.0, 0.0], [float(in_h), float(in_w)]
    if roi_start is not None:
        starts, ends = _pair(roi_start, "roi_start"), _pair(roi_end, "roi_end")
        for d, extent in enumerate((in_h, in_w)):
            a, b = starts[d], ends[d]
            if roi_relative:
                a, b = a * extent, b * extent
            if abs(b - a) < _MIN_ROI:
                half = 0.5 * _MIN_ROI if a <= b else -0.5 * _MIN_ROI
                a, b = a - half, b + half
            lo[d], hi[d] = a, b
    in_size = [0.0, 0.0]
    for d in range(2):
        extent = hi[d] - lo[d]
        if extent < 0:
            lo[d], hi[d] = hi[d], lo[d]
            requested[d] = -requested[d]
            extent = -extent
        in_size[d] = extent

    out = _adjust_output_size(requested, in_size, mode, limit)
    dst = [0, 0]
    for d in range(2):
        # DALI keeps sizes in float32; round through it so ties land the same way
        exact = float(np.float32(out[d]))
        dst[d] = max(1, math.floor(abs(exact) + 0.5))
        if exact < 0:
            lo[d], hi[d] = hi[d], lo[d]
        if subpixel_scale and dst[d] != abs(exact) and exact != 0:
            adjustment = min(max(dst[d] / abs(exact), -10.0), 10.0)
            center = 0.5 * (lo[d] + hi[d])
            lo[d] = center + (lo[d] - center) * adjustment
            hi[d] = center + (hi[d] - center) * adjustment
    return ResizePlan(dst[0], dst[1], (lo[0], hi[0]), (lo[1], hi[1]))


def resize_output_size(in_h: int, in_w: int, **size_args: Any) -> tuple[int, int]:
    """Return ``(out_h, out_w)`` for DALI-style resize arguments (see :func:`resize_plan`)."""
    plan = resize_plan(in_h, in_w, **size_args)
    return plan.out_h, plan.out_w


def axis_filters(
    plan: ResizePlan,
    interp_type: Any = "linear",
    min_filter: Any = None,
    mag_filter: Any = None,
) -> tuple[str, str]:
    """Pick each axis's filter: ``min_filter`` where it shrinks, ``mag_filter`` where it grows."""
    shrink = interp_name(min_filter if min_filter is not None else interp_type)
    grow = interp_name(mag_filter if mag_filter is not None else interp_type)
    fy = shrink if plan.out_h < abs(plan.roi_y[1] - plan.roi_y[0]) else grow
    fx = shrink if plan.out_w < abs(plan.roi_x[1] - plan.roi_x[0]) else grow
    return fy, fx


def resample_plan(
    image: np.ndarray,
    plan: ResizePlan,
    filters: tuple[str, str],
    antialias: bool = True,
    dtype: Any = None,
    argument: str = "size",
) -> np.ndarray:
    """Resample ``image`` as ``plan`` says, taking OpenCV's fast path where it is exact.

    ``argument`` names what gave the output size, for the size limit's error."""
    hwc, squeeze = as_hwc(image)
    in_h, in_w = hwc.shape[:2]
    (y0, y1), (x0, x1) = plan.roi_y, plan.roi_x
    out_dtype = np.dtype(dtype) if dtype is not None else hwc.dtype
    check_output((plan.out_h, plan.out_w, *hwc.shape[2:]), out_dtype, argument)
    if filters == ("nn", "nn"):
        rows = _nearest_index(in_h, plan.out_h, y0, y1, accumulate=True)
        cols = _nearest_index(in_w, plan.out_w, x0, x1)
        out = _gather(hwc, rows, cols).astype(out_dtype, copy=False)
        return out[:, :, 0] if squeeze else out
    shrinks = plan.out_h < abs(y1 - y0) or plan.out_w < abs(x1 - x0)
    flips = _whole_image_window(plan, in_h, in_w)
    if (
        filters == ("linear", "linear")
        and (not antialias or not shrinks)
        and flips is not None
        and hwc.shape[2] in (1, 3, 4)
        and out_dtype == hwc.dtype
        and hwc.dtype in (np.uint8, np.float32)
    ):
        # plain bilinear over the whole image: cv2.resize computes the same weights
        flip_y, flip_x = flips
        out = cv2.resize(hwc, (plan.out_w, plan.out_h), interpolation=cv2.INTER_LINEAR)
        out = out.reshape(plan.out_h, plan.out_w, hwc.shape[2])
        if flip_y or flip_x:
            out = np.ascontiguousarray(out[:: -1 if flip_y else 1, :: -1 if flip_x else 1])
        return out[:, :, 0] if squeeze else out
    hwc, plan = _pad_edges(hwc, plan, filters)
    if (
        _native_resample is not None
        and hwc.dtype == np.uint8
        and out_dtype == np.uint8
        and filters[0] in _NATIVE_FILTERS
        and filters[1] in _NATIVE_FILTERS
        and hwc.shape[2] <= 4
    ):
        out = output_pool.empty((plan.out_h, plan.out_w, hwc.shape[2]), np.uint8)
        if hwc.strides[1:] != (hwc.shape[2], 1):
            hwc = np.ascontiguousarray(hwc)
        _native_resample(hwc, out, plan.roi_y, plan.roi_x, *filters, antialias)
        return out[:, :, 0] if squeeze else out
    if (
        antialias
        and filters[0] == filters[1]
        and filters[0] in _PILLOW_FILTERS
        and hwc.dtype == np.uint8
        and out_dtype == np.uint8
        and hwc.shape[2] in (1, 3)
        and 0.0 <= min(y0, y1) < max(y0, y1) <= in_h
        and 0.0 <= min(x0, x1) < max(x0, x1) <= in_w
    ):
        out = _pillow_resize(hwc, plan, _PILLOW_FILTERS[filters[0]])
        return out[:, :, 0] if squeeze else out
    out = resample(
        hwc,
        plan.out_h,
        plan.out_w,
        roi_y=plan.roi_y,
        roi_x=plan.roi_x,
        filter_y=filters[0],
        filter_x=filters[1],
        antialias=antialias,
        dtype=out_dtype,
    )
    return out[:, :, 0] if squeeze else out


def _pad_edges(
    hwc: np.ndarray, plan: ResizePlan, filters: tuple[str, str]
) -> tuple[np.ndarray, ResizePlan]:
    """Replicate the edge pixels past the image as far as the filters reach, shifting the region.

    DALI clamps a filter tap that falls outside the image to the edge pixel (the tap keeps its
    weight); the engines here drop such taps and renormalise. Over replicated edges the two
    agree: a tap outside the image reads the edge pixel either way.
    """
    in_h, in_w = hwc.shape[:2]
    pads = []
    axes = ((plan.roi_y, in_h, plan.out_h, filters[0]), (plan.roi_x, in_w, plan.out_w, filters[1]))
    for (a, b), extent, out_size, name in axes:
        if name == "nn":
            pads.append(0)
            continue
        scale = max(abs(b - a) / max(1, out_size), 1.0)
        reach = _FILTER_REACH.get(name, 3.0) * scale + 2.0
        low, high = min(a, b) - reach, max(a, b) + reach
        pads.append(math.ceil(reach) if low < 0 or high > extent else 0)
    pad_y, pad_x = pads
    if not (pad_y or pad_x):
        return hwc, plan
    padded = cv2.copyMakeBorder(hwc, pad_y, pad_y, pad_x, pad_x, cv2.BORDER_REPLICATE)
    padded = padded.reshape(in_h + 2 * pad_y, in_w + 2 * pad_x, hwc.shape[2])
    shifted = ResizePlan(
        plan.out_h,
        plan.out_w,
        (plan.roi_y[0] + pad_y, plan.roi_y[1] + pad_y),
        (plan.roi_x[0] + pad_x, plan.roi_x[1] + pad_x),
    )
    return padded, shifted


def _pillow_resize(hwc: np.ndarray, plan: ResizePlan, resample_filter: int) -> np.ndarray:
    """Antialiased uint8 resampling of the plan's region with Pillow (1 or 3 channels)."""
    (y0, y1), (x0, x1) = plan.roi_y, plan.roi_x
    channels = hwc.shape[2]
    source = Image.fromarray(hwc[:, :, 0] if channels == 1 else hwc)
    box = (min(x0, x1), min(y0, y1), max(x0, x1), max(y0, y1))
    resized = source.resize((plan.out_w, plan.out_h), resample_filter, box=box, reducing_gap=None)
    out = np.asarray(resized).reshape(plan.out_h, plan.out_w, channels)
    # a reversed region mirrors the output; the copy also makes it writable (Pillow's is not)
    return np.array(out[:: -1 if y0 > y1 else 1, :: -1 if x0 > x1 else 1])


_REMAP_TYPES = (np.uint8, np.uint16, np.int16, np.float32, np.float64)


def _gather(hwc: np.ndarray, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """``hwc[rows][:, cols]``: OpenCV's nearest-neighbour remap at those exact integer
    coordinates where it takes the image (2.3-2.6x NumPy's two takes on 480x640 RGB),
    else NumPy."""
    h, w = len(rows), len(cols)
    if (
        hwc.dtype in _REMAP_TYPES
        and 1 <= hwc.shape[2] <= 4
        and 0 < h < 32767
        and 0 < w < 32767
        and max(hwc.shape[:2]) < 32767
    ):
        map_x = np.empty((h, w), np.float32)
        map_x[:] = cols.astype(np.float32)[None, :]
        map_y = np.empty((h, w), np.float32)
        map_y[:] = rows.astype(np.float32)[:, None]
        out = cv2.remap(np.ascontiguousarray(hwc), map_x, map_y, cv2.INTER_NEAREST)
        return out.reshape(h, w, hwc.shape[2])
    return hwc.take(rows, axis=0).take(cols, axis=1)


def _nearest_index(
    in_size: int, out_size: int, lo: float, hi: float, accumulate: bool = False
) -> np.ndarray:
    """Source index per output pixel: the pixel holding its centre, in DALI's float32 steps.

    DALI computes column centres as ``lo + (x + 0.5) * step`` and row centres by adding
    ``step`` to a running float32 sum (``accumulate``); the rounding of either picks another
    source pixel near a boundary, so both are reproduced.
    """
    f32 = np.float32
    step = f32((hi - lo) / out_size)
    if accumulate and out_size:
        steps = np.full(out_size, step, dtype=f32)
        steps[0] = f32(lo) + f32(0.5) * step
        centers = np.cumsum(steps, dtype=f32)
    else:
        centers = f32(lo) + (np.arange(out_size, dtype=f32) + f32(0.5)) * step
    return np.clip(np.floor(centers), 0, in_size - 1).astype(np.intp)


def _whole_image_window(plan: ResizePlan, in_h: int, in_w: int):
    """``(flip_y, flip_x)`` if the region is the whole image on both axes, else None.

    Only then may OpenCV's resize stand in for the engine: inside a smaller region
    the filter must still read the pixels around it, which cropping first would lose.
    """
    flips = []
    for (a, b), extent in ((plan.roi_y, in_h), (plan.roi_x, in_w)):
        if (min(a, b), max(a, b)) != (0.0, float(extent)):
            return None
        flips.append(a > b)
    return flips[0], flips[1]


def resize(
    image: np.ndarray,
    *,
    resize_x: float | None = None,
    resize_y: float | None = None,
    size: Sequence[float] | None = None,
    resize_shorter: float | None = None,
    resize_longer: float | None = None,
    mode: str | None = None,
    max_size: float | Sequence[float] | None = None,
    roi_start: Sequence[float] | None = None,
    roi_end: Sequence[float] | None = None,
    roi_relative: bool = False,
    subpixel_scale: bool = True,
    interp_type: Any = "linear",
    min_filter: Any = None,
    mag_filter: Any = None,
    antialias: bool = True,
    dtype: Any = None,
) -> np.ndarray:
    """Resize an HWC (or HW) image with DALI's ``fn.resize`` arguments.

    See :func:`resize_plan` for the size and ROI rules and the module docstring for
    the filters. ``dtype`` is the output type (default: the input's).
    """
    in_h, in_w = image.shape[:2]
    plan = resize_plan(
        in_h,
        in_w,
        resize_x=resize_x,
        resize_y=resize_y,
        size=size,
        resize_shorter=resize_shorter,
        resize_longer=resize_longer,
        mode=mode,
        max_size=max_size,
        roi_start=roi_start,
        roi_end=roi_end,
        roi_relative=roi_relative,
        subpixel_scale=subpixel_scale,
    )
    filters = axis_filters(plan, interp_type, min_filter, mag_filter)
    given = {"resize_x": resize_x, "resize_y": resize_y, "size": size}
    given.update(resize_shorter=resize_shorter, resize_longer=resize_longer)
    argument = "/".join(k for k, v in given.items() if v is not None) or "size"
    return resample_plan(image, plan, filters, antialias=antialias, dtype=dtype, argument=argument)
