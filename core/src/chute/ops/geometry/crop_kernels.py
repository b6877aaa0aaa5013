"""Windows cut from, or laid around, an image: crop, slice, flip, pad, erase, paste.

These work on n-d arrays (HWC images, HW masks, CHW, ...) where the arguments allow;
out-of-bounds windows are filled with ``fill_values`` or extended with a ``border``
mode (see :data:`chute.ops.geometry._border.BORDER_MODES` for the names).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from chute.ops.geometry._border import NUMPY_PAD_MODES, cv_border, fill_tuple
from chute.runtime.limits import check_output

_POLICIES = ("error", "pad", "trim_to_shape")


def round_half_away(value: float) -> int:
    """Round to the nearest integer, halves away from zero (DALI's "round")."""
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


def _to_int(value: float, rounding: str) -> int:
    if rounding == "round":
        return round_half_away(value)
    if rounding == "truncate":
        return math.trunc(value)
    raise ValueError(f"rounding must be 'round' or 'truncate', got {rounding!r}")


def border_index(index: np.ndarray, size: int, border: str) -> np.ndarray:
    """Map (possibly out-of-range) indices into ``[0, size)`` as OpenCV's border modes do."""
    if border == "replicate":
        return np.clip(index, 0, size - 1)
    if border == "wrap":
        return np.mod(index, size)
    if border == "reflect":  # fedcba|abcdef
        period = np.mod(index, 2 * size)
        return np.where(period < size, period, 2 * size - 1 - period)
    if border == "reflect_101":  # gfedcb|abcdefg
        if size == 1:
            return np.zeros_like(index)
        period = np.mod(index, 2 * size - 2)
        return np.where(period < size, period, 2 * size - 2 - period)
    raise ValueError(f"no index rule for border {border!r}")


def extract_window(
    array: np.ndarray,
    starts: Sequence[int],
    stops: Sequence[int],
    border: str = "constant",
    fill_values: float | Sequence[float] = 0,
    channel_axis: int | None = -1,
) -> np.ndarray:
    """Copy ``array[starts:stops]`` (one bound per axis), inventing out-of-range elements.

    With ``border="constant"`` they take ``fill_values`` (a scalar, or one value per
    entry of ``channel_axis``); other modes extend the array as OpenCV would.
    """
    shape = tuple(b - a for a, b in zip(starts, stops))
    if any(extent <= 0 for extent in shape):
        raise ValueError(f"empty window {list(zip(starts, stops))}")
    inside = all(a >= 0 and b <= n for a, b, n in zip(starts, stops, array.shape))
    if inside:
        return array[tuple(slice(a, b) for a, b in zip(starts, stops))].copy()
    if border == "constant":
        out = np.empty(shape, dtype=array.dtype)
        fill = np.asarray(fill_values, dtype=np.float64).ravel()
        if fill.size == 1 or channel_axis is None:
            out[...] = fill[0]
        else:
            axis = channel_axis % array.ndim
            fill = np.asarray(fill_tuple(fill, shape[axis]), dtype=np.float64)
            view = np.moveaxis(out, axis, -1)
            view[...] = fill.astype(array.dtype)
        src, dst = [], []
        for a, b, n in zip(starts, stops, array.shape):
            lo, hi = max(a, 0), min(b, n)
            if hi <= lo:
                return out  # the window misses the array entirely
            src.append(slice(lo, hi))
            dst.append(slice(lo - a, hi - a))
        out[tuple(dst)] = array[tuple(src)]
        return out
    cv_border(border)  # validates the name
    result = array
    for axis, (a, b, n) in enumerate(zip(starts, stops, array.shape)):
        if a >= 0 and b <= n:
            result = result[(slice(None),) * axis + (slice(a, b),)]
        else:
            result = result.take(border_index(np.arange(a, b), n, border), axis=axis)
    return np.ascontiguousarray(result) if result is not array else result.copy()


def _window(
    array: np.ndarray,
    starts: list[int],
    stops: list[int],
    out_of_bounds_policy: str,
    border: str,
    fill_values: Any,
    channel_axis: int | None,
) -> np.ndarray:
    if out_of_bounds_policy not in _POLICIES:
        raise ValueError(
            f"out_of_bounds_policy must be one of {_POLICIES}, got {out_of_bounds_policy!r}"
        )
    outside = any(a < 0 or b > n for a, b, n in zip(starts, stops, array.shape))
    if outside and out_of_bounds_policy == "error":
        raise ValueError(
            f"window {list(zip(starts, stops))} is outside the input of shape {array.shape}; "
            "use out_of_bounds_policy='pad' or 'trim_to_shape'"
        )
    if out_of_bounds_policy == "trim_to_shape":
        starts = [min(max(a, 0), n) for a, n in zip(starts, array.shape)]
        stops = [min(max(b, a), n) for a, b, n in zip(starts, stops, array.shape)]
        if any(b <= a for a, b in zip(starts, stops)):
            shape = tuple(b - a for a, b in zip(starts, stops))
            return np.empty(shape, dtype=array.dtype)
    return extract_window(array, starts, stops, border, fill_values, channel_axis)


def crop_window(
    in_h: int,
    in_w: int,
    crop: Sequence[float] | float | None = None,
    crop_h: float | None = None,
    crop_w: float | None = None,
    rel_crop: Sequence[float] | float | None = None,
    crop_pos_x: float = 0.5,
    crop_pos_y: float = 0.5,
    rounding: str = "round",
) -> tuple[int, int, int, int]:
    """Return ``(y0, x0, h, w)`` of a DALI crop: size from ``crop`` (H, W), ``crop_h``/``crop_w``
    or ``rel_crop`` (fractions of the input size), anchored at ``crop_pos * (in - crop)``.
    """
    if rel_crop is not None:
        rel = np.broadcast_to(np.asarray(rel_crop, dtype=np.float64).ravel(), (2,))
        h, w = round_half_away(rel[0] * in_h), round_half_away(rel[1] * in_w)
    else:
        if crop is not None:
            sizes = np.broadcast_to(np.asarray(crop, dtype=np.float64).ravel(), (2,))
            crop_h = crop_h if crop_h is not None else sizes[0]
            crop_w = crop_w if crop_w is not None else sizes[1]
        h = in_h if crop_h is None or crop_h == 0 else round_half_away(float(crop_h))
        w = in_w if crop_w is None or crop_w == 0 else round_half_away(float(crop_w))
    if h <= 0 or w <= 0:
        raise ValueError(f"crop size must be positive, got {h}x{w} (HxW)")
    if not (0.0 <= crop_pos_x <= 1.0 and 0.0 <= crop_pos_y <= 1.0):
        raise ValueError(
            f"crop_pos_x/crop_pos_y must lie in [0, 1], got {crop_pos_x}, {crop_pos_y}"
        )
    # DALI's position is a float32 (0.7 is 0.69999999): 0.7 * 35 gives 24.4999996, anchor 24
    y0 = _to_int(float(np.float32(crop_pos_y)) * (in_h - h), rounding)
    x0 = _to_int(float(np.float32(crop_pos_x)) * (in_w - w), rounding)
    return y0, x0, h, w


def crop(
    image: np.ndarray,
    crop: Sequence[float] | float | None = None,
    crop_h: float | None = None,
    crop_w: float | None = None,
    rel_crop: Sequence[float] | float | None = None,
    crop_pos_x: float = 0.5,
    crop_pos_y: float = 0.5,
    out_of_bounds_policy: str = "error",
    fill_values: float | Sequence[float] = 0,
    border: str = "constant",
    rounding: str = "round",
) -> np.ndarray:
    """Cut a window from an HWC/HW image as DALI's ``fn.crop`` (see :func:`crop_window`).

    ``out_of_bounds_policy``: "error" raises when the window leaves the image, "pad"
    fills the outside with ``fill_values`` (or extends it with ``border``),
    "trim_to_shape" shrinks the window to the image.
    """
    y0, x0, h, w = crop_window(
        image.shape[0],
        image.shape[1],
        crop,
        crop_h,
        crop_w,
        rel_crop,
        crop_pos_x,
        crop_pos_y,
        rounding,
    )
    starts = [y0, x0] + [0] * (image.ndim - 2)
    stops = [y0 + h, x0 + w, *image.shape[2:]]
    channel_axis = -1 if image.ndim == 3 else None
    return _window(image, starts, stops, out_of_bounds_policy, border, fill_values, channel_axis)


def axes_from(
    ndim: int,
    axes: Sequence[int] | None,
    axis_names: str | None,
    layout: str | None,
    default: Sequence[int],
) -> list[int]:
    """Resolve ``axis_names`` (letters of ``layout``) or ``axes`` (indices) to axis indices."""
    if axis_names is not None:
        layout = layout or ("HWC"[:ndim] if ndim <= 3 else None)
        if layout is None or any(name not in layout for name in axis_names):
            raise ValueError(f"axis_names {axis_names!r} do not all occur in layout {layout!r}")
        return [layout.index(name) for name in axis_names]
    chosen = list(default if axes is None else axes)
    return [a % ndim for a in chosen]


def slice_window(
    shape: Sequence[int],
    anchor: Sequence[float],
    extent: Sequence[float],
    axes: Sequence[int] | None = None,
    axis_names: str | None = None,
    layout: str | None = None,
    normalized_anchor: bool = True,
    normalized_shape: bool = True,
    rounding: str = "round",
) -> tuple[list[int], list[int]]:
    """Return per-axis ``(starts, stops)`` for DALI slice arguments.

    ``anchor`` and ``extent`` list one value per entry of ``axes`` (default ``(1, 0)``,
    i.e. x then y for HWC, as DALI) or of ``axis_names`` looked up in ``layout``.
    The end is rounded from ``anchor + extent`` so that neighbouring slices tile.
    """
    ndim = len(shape)
    chosen = axes_from(ndim, axes, axis_names, layout, (1, 0))
    anchor = np.asarray(anchor, dtype=np.float64).ravel()
    extent = np.asarray(extent, dtype=np.float64).ravel()
    if anchor.size != len(chosen) or extent.size != len(chosen):
        raise ValueError(f"anchor and shape need {len(chosen)} values (one per sliced axis)")
    starts, stops = [0] * ndim, list(shape)
    for a, begin, size in zip(chosen, anchor, extent):
        begin = begin * shape[a] if normalized_anchor else begin
        size = size * shape[a] if normalized_shape else size
        starts[a] = _to_int(begin, rounding)
        stops[a] = _to_int(begin + size, rounding)
    return starts, stops


def slice_(
    data: np.ndarray,
    anchor: Sequence[float],
    shape: Sequence[float],
    axes: Sequence[int] | None = None,
    axis_names: str | None = None,
    layout: str | None = None,
    normalized_anchor: bool = True,
    normalized_shape: bool = True,
    out_of_bounds_policy: str = "error",
    fill_values: float | Sequence[float] = 0,
    border: str = "constant",
    rounding: str = "round",
) -> np.ndarray:
    """Cut a window from an n-d array as DALI's ``fn.slice`` (see :func:`slice_window`)."""
    starts, stops = slice_window(
        data.shape,
        anchor,
        shape,
        axes,
        axis_names,
        layout,
        normalized_anchor,
        normalized_shape,
        rounding,
    )
    channel_axis = -1 if data.ndim == 3 else None
    return _window(data, starts, stops, out_of_bounds_policy, border, fill_values, channel_axis)


def flip(image: np.ndarray, horizontal: int | bool = 1, vertical: int | bool = 0) -> np.ndarray:
    """Mirror an HWC/HW image left-right (``horizontal``) and/or upside down (``vertical``)."""
    if not horizontal and not vertical:
        return image.copy()
    channels = image.shape[2] if image.ndim == 3 else 1
    if channels <= 4 and image.dtype in (np.uint8, np.float32, np.uint16, np.int16):
        code = -1 if (horizontal and vertical) else (1 if horizontal else 0)
        return cv2.flip(np.ascontiguousarray(image), code).reshape(image.shape)
    return np.ascontiguousarray(image[:: -1 if vertical else 1, :: -1 if horizontal else 1])


def pad(
    data: np.ndarray,
    axes: Sequence[int] | None = None,
    axis_names: str | None = None,
    layout: str | None = None,
    shape: Sequence[int] | None = None,
    align: Sequence[int] | int | None = None,
    fill_value: float | Sequence[float] = 0,
    border: str = "constant",
) -> np.ndarray:
    """Pad the end of the chosen axes (default: all) up to ``shape`` and to a multiple of ``align``.

    As DALI's ``fn.pad`` per sample: an entry of ``shape`` that is -1 (or smaller than
    the data) keeps the data's extent. The operator passes the batch's largest extent
    as ``shape`` where DALI pads to the batch maximum. ``fill_value`` may be per channel.
    """
    chosen = axes_from(data.ndim, axes, axis_names, layout, range(data.ndim))
    targets = list(data.shape)
    wanted = [-1] * len(chosen) if shape is None else list(np.asarray(shape).ravel())
    aligns = (
        [1] * len(chosen)
        if align is None
        else list(np.broadcast_to(np.asarray(align).ravel(), (len(chosen),)))
    )
    if len(wanted) != len(chosen):
        raise ValueError(f"shape needs {len(chosen)} values (one per padded axis)")
    for a, target, step in zip(chosen, wanted, aligns):
        extent = max(data.shape[a], int(target))
        step = max(int(step), 1)
        targets[a] = -(-extent // step) * step
    check_output(targets, data.dtype, "shape/align")
    if targets == list(data.shape):
        return data.copy()
    extra = [t - n for t, n in zip(targets, data.shape)]
    image_like = data.ndim in (2, 3) and all(e == 0 for e in extra[2:])
    channels = data.shape[2] if data.ndim == 3 else 1
    if image_like and channels <= 4 and data.dtype in (np.uint8, np.float32, np.uint16, np.int16):
        fill = fill_tuple(fill_value, channels)
        out = cv2.copyMakeBorder(
            np.ascontiguousarray(data), 0, extra[0], 0, extra[1], cv_border(border), value=fill
        )
        return out.reshape(targets)
    widths = [(0, e) for e in extra]
    if border != "constant":
        return np.pad(data, widths, mode=NUMPY_PAD_MODES[border])
    return extract_window(
        data, [0] * data.ndim, targets, "constant", fill_value, -1 if data.ndim == 3 else None
    )


def erase(
    image: np.ndarray,
    anchor: Sequence[float] = (),
    shape: Sequence[float] = (),
    axes: Sequence[int] | None = None,
    axis_names: str | None = None,
    layout: str | None = None,
    fill_value: float | Sequence[float] = 0,
    normalized: bool | None = None,
    normalized_anchor: bool = False,
    normalized_shape: bool = False,
    centered_anchor: bool = False,
) -> np.ndarray:
    """Fill one or more rectangular regions with ``fill_value`` (DALI's ``fn.erase``).

    ``anchor`` and ``shape`` hold ``k * len(axes)`` values for ``k`` regions, each in the
    order of ``axis_names`` (default "HW") or ``axes``; regions are clipped to the image.
    ``centered_anchor`` makes anchors the regions' centres.
    """
    if normalized is not None:
        normalized_anchor = normalized_shape = bool(normalized)
    if axes is None and axis_names is None:
        axis_names = "HW"
    chosen = axes_from(image.ndim, axes, axis_names, layout, (0, 1))
    shape = np.asarray(shape, dtype=np.float64).ravel()
    anchor = (
        np.zeros_like(shape) if len(anchor) == 0 else np.asarray(anchor, dtype=np.float64).ravel()
    )
    if anchor.size != shape.size or shape.size % len(chosen):
        raise ValueError(f"anchor and shape need a multiple of {len(chosen)} values, equally many")
    out = image.copy()
    channel_axis = image.ndim - 1 if image.ndim == 3 else None
    fill = np.asarray(fill_value, dtype=np.float64).ravel()
    if fill.size > 1:
        if channel_axis is None:
            raise ValueError("a per-channel fill value needs an image with a channel axis")
        fill = np.asarray(fill_tuple(fill, image.shape[channel_axis]), dtype=np.float64)
    fill = fill.astype(image.dtype) if fill.size > 1 else image.dtype.type(fill[0])
    for r in range(shape.size // len(chosen)):
        index: list[slice] = [slice(None)] * image.ndim
        for j, a in enumerate(chosen):
            begin = anchor[r * len(chosen) + j]
            size = shape[r * len(chosen) + j]
            begin = begin * image.shape[a] if normalized_anchor else begin
            size = size * image.shape[a] if normalized_shape else size
            if centered_anchor:
                begin -= size / 2
            # DALI floors both ends: [10.5, 16.0) covers 10..15, [7.5, 12.5) covers 7..11
            lo = min(max(math.floor(begin), 0), image.shape[a])
            hi = min(max(math.floor(begin + size), lo), image.shape[a])
            index[a] = slice(lo, hi)
        out[tuple(index)] = fill
    return out


def paste(
    image: np.ndarray,
    ratio: float,
    fill_value: float | Sequence[float] = 0,
    paste_x: float = 0.5,
    paste_y: float = 0.5,
    min_canvas_size: float = 0.0,
) -> np.ndarray:
    """Place an HWC image on a canvas ``ratio`` times larger, filled with ``fill_value``.

    As DALI's ``fn.paste``: canvas extents are ``int(ratio * size)`` (at least
    ``min_canvas_size``), and the image's top-left corner lands at
    ``int(paste * (canvas - size))``.
    """
    if ratio < 1.0:
        raise ValueError(f"ratio must be >= 1, got {ratio}")
    if not (0.0 <= paste_x <= 1.0 and 0.0 <= paste_y <= 1.0):
        raise ValueError(f"paste_x/paste_y must lie in [0, 1], got {paste_x}, {paste_y}")
    in_h, in_w = image.shape[:2]
    canvas = (max(ratio * in_h, min_canvas_size), max(ratio * in_w, min_canvas_size))
    check_output((*canvas, *image.shape[2:]), image.dtype, "ratio/min_canvas_size")
    out_h = max(int(ratio * in_h), int(min_canvas_size))
    out_w = max(int(ratio * in_w), int(min_canvas_size))
    y0 = int(paste_y * (out_h - in_h))
    x0 = int(paste_x * (out_w - in_w))
    starts = [-y0, -x0] + [0] * (image.ndim - 2)
    stops = [out_h - y0, out_w - x0, *image.shape[2:]]
    return extract_window(
        image, starts, stops, "constant", fill_value, -1 if image.ndim == 3 else None
    )
