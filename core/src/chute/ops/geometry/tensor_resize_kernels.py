"""fn.tensor_resize: DALI's size rules over any axes of a tensor, and separable resampling.

The plan (:func:`tensor_resize_plan`) follows DALI 2.4's TensorResize: every axis is
requested a size (``sizes``, or ``scales`` times the input extent; axes not listed in
``axes`` are requested at their own size), the mode rules and ``max_size`` apply across
all axes (so "default" fills a missing extent with the geometric mean of all the other
axes' scales, unlisted ones counting as 1, and "not_smaller" / "not_larger" scale every
axis by one factor, as DALI does), sizes are rounded by ``size_rounding`` and, with
``subpixel_scale``, the region is stretched about the point ``alignment`` puts in it so
the requested scale stays exact. Sizes are computed in float32, as DALI's.

:func:`resample_axes` resamples each changed axis in turn with the weights of
chute.ops.geometry._resample (the ones fn.resize uses), in float32.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from chute.ops.geometry._border import cast_to
from chute.ops.geometry._resample import axis_weights, is_identity
from chute.ops.geometry.resize_kernels import interp_name

__all__ = ["DTYPES", "TensorPlan", "resample_axes", "tensor_resize_plan"]

#: Input types (DALI's); the output is the input's type or float32.
DTYPES = (np.dtype(np.uint8), np.dtype(np.int16), np.dtype(np.uint16), np.dtype(np.float32))
MODES = ("default", "stretch", "not_smaller", "not_larger")
ROUNDINGS = ("round", "truncate", "ceil")
_MIN_ROI = 1e-3  # a thinner region is widened, as DALI does


@dataclass(frozen=True)
class TensorPlan:
    """Output extent and input region (lo, hi; lo > hi flips) of every axis."""

    out_shape: tuple[int, ...]
    roi: tuple[tuple[float, float], ...]


def _round(value: float, rounding: str) -> int:
    if rounding == "truncate":
        return int(value)
    if rounding == "ceil":
        return math.ceil(value)
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


def _adjust(requested: list[float], in_size: list[float], mode: str, max_size: list[float]):
    """DALI's AdjustOutputSize over all axes (float32 arithmetic)."""
    f32 = np.float32
    ndim = len(requested)
    provided = [r != 0 for r in requested]
    scale = [f32(r) / f32(s) if s else f32(1.0) for r, s in zip(requested, in_size)]
    out = [f32(r) for r in requested]
    if not any(provided):
        return [f32(s) for s in in_size]
    if mode in ("default", "stretch"):
        if not all(provided):
            if mode == "default":
                given = [abs(float(s)) for s, p in zip(scale, provided) if p]
                fill = f32(math.prod(given) ** (1.0 / len(given)))
            else:
                fill = f32(1.0)
            for d in range(ndim):
                if not provided[d]:
                    out[d] = f32(in_size[d]) * fill
        for d in range(ndim):
            if max_size[d] > 0 and abs(out[d]) > max_size[d]:
                out[d] = f32(math.copysign(max_size[d], out[d]))
        return out
    given = [abs(s) for s, p in zip(scale, provided) if p]
    final = max(given) if mode == "not_smaller" else min(given)
    for d in range(ndim):
        if max_size[d] > 0 and in_size[d] > 0:
            final = min(final, f32(max_size[d]) / f32(in_size[d]))
    for d in range(ndim):
        if not provided[d] or abs(scale[d]) != final:
            out[d] = f32(in_size[d]) * f32(math.copysign(final, scale[d]))
    return out


def tensor_resize_plan(
    shape: Sequence[int],
    axes: Sequence[int],
    *,
    sizes: Sequence[float] | None = None,
    scales: Sequence[float] | None = None,
    size_rounding: str = "round",
    alignment: Sequence[float] | None = None,
    mode: str = "default",
    max_size: Sequence[float] | None = None,
    roi_start: Sequence[float] | None = None,
    roi_end: Sequence[float] | None = None,
    roi_relative: bool = False,
    subpixel_scale: bool = True,
) -> TensorPlan:
    """The output shape and input regions of a tensor of ``shape``; the per-axis arguments
    (sizes, scales, alignment, max_size, roi_start, roi_end) refer to ``axes``."""
    ndim = len(shape)
    k = len(axes)

    def per_axis(name: str, values: Any, default: float, broadcast: bool = False) -> list[float]:
        full = [default] * ndim
        if values is None:
            return full
        vals = [float(v) for v in np.asarray(values, np.float64).ravel()]
        if broadcast and len(vals) == 1:
            vals = vals * k
        if len(vals) != k:
            raise ValueError(f"argument '{name}' has {len(vals)} values for {k} axes {tuple(axes)}")
        for a, v in zip(axes, vals):
            full[a] = v
        return full

    if (sizes is None) == (scales is None):
        raise ValueError("give exactly one of 'sizes' and 'scales'")
    if (roi_start is None) != (roi_end is None):
        raise ValueError("'roi_start' and 'roi_end' must be given together")
    empty = math.prod(shape) == 0
    lo, hi = [0.0] * ndim, [float(s) for s in shape]
    if roi_start is not None:
        starts = per_axis("roi_start", roi_start, 0.0)
        ends = per_axis("roi_end", roi_end, 1.0 if roi_relative else float("nan"))
        for d in range(ndim):
            a, b = starts[d], ends[d]
            if d not in axes:
                a, b = 0.0, float(shape[d])
            elif roi_relative:
                a, b = a * shape[d], b * shape[d]
            if abs(b - a) < _MIN_ROI and not empty:
                half = 0.5 * _MIN_ROI if a <= b else -0.5 * _MIN_ROI
                a, b = a - half, b + half
            lo[d], hi[d] = a, b
    if sizes is not None:
        requested = per_axis("sizes", sizes, 0.0)
        for d in range(ndim):
            if d not in axes:
                requested[d] = float(shape[d])
    else:
        factors = per_axis("scales", scales, 1.0)
        requested = [float(np.float32(f) * np.float32(s)) for f, s in zip(factors, shape)]
    align = per_axis("alignment", alignment, 0.5, broadcast=True)
    limits = per_axis("max_size", max_size, 0.0, broadcast=True)
    in_size = []
    for d in range(ndim):
        extent = hi[d] - lo[d]
        if extent < 0:
            lo[d], hi[d] = hi[d], lo[d]
            requested[d] = -requested[d]
            extent = -extent
        in_size.append(extent)
    out = _adjust(requested, in_size, mode, limits)
    dst = []
    for d in range(ndim):
        exact = float(out[d])
        if in_size[d] == 0 and exact != 0 and not empty:
            raise ValueError(f"axis {d} has an empty region but is asked for {exact:g} elements")
        size = max(0 if empty else 1, _round(abs(exact), size_rounding))
        if shape[d] == 0:
            size = 0
        if exact < 0:
            lo[d], hi[d] = hi[d], lo[d]
        if subpixel_scale and exact != 0 and size != abs(exact):
            adjustment = min(max(size / abs(exact), -10.0), 10.0)
            center = (1.0 - align[d]) * lo[d] + align[d] * hi[d]
            lo[d] = min(max(center + (lo[d] - center) * adjustment, -1e9), 1e9)
            hi[d] = min(max(center + (hi[d] - center) * adjustment, -1e9), 1e9)
        dst.append(size)
    return TensorPlan(tuple(dst), tuple(zip(lo, hi)))


def axis_filter(in_extent: float, out_size: int, interp: Any, min_filter: Any, mag_filter: Any):
    """The filter of one axis: ``min_filter`` where it shrinks, ``mag_filter`` where it grows."""
    shrink = interp_name(min_filter if min_filter is not None else interp)
    grow = interp_name(mag_filter if mag_filter is not None else interp)
    return shrink if out_size < abs(in_extent) else grow


def changed_axes(shape: Sequence[int], plan: TensorPlan) -> list[int]:
    """The axes the plan resamples (an axis mapped onto itself pixel for pixel is kept)."""
    return [
        d
        for d, (n, (lo, hi)) in enumerate(zip(shape, plan.roi))
        if n > 0 and plan.out_shape[d] > 0 and not is_identity(n, plan.out_shape[d], lo, hi)
    ]


def resample_axes(
    data: np.ndarray,
    plan: TensorPlan,
    filters: Sequence[str],
    antialias: bool = True,
    dtype: Any = None,
) -> np.ndarray:
    """Resample ``data`` axis by axis as ``plan`` says (``filters[d]``: axis d's filter)."""
    out_dtype = np.dtype(dtype) if dtype is not None else data.dtype
    if math.prod(plan.out_shape) == 0 or math.prod(data.shape) == 0:
        return np.zeros(plan.out_shape, out_dtype)
    work: np.ndarray = data
    for d in changed_axes(data.shape, plan):
        lo, hi = plan.roi[d]
        first, weights = axis_weights(
            data.shape[d], plan.out_shape[d], lo, hi, filters[d], antialias
        )
        moved = np.moveaxis(work, d, 0)
        acc = np.zeros((plan.out_shape[d], *moved.shape[1:]), np.float32)
        n_in = moved.shape[0]
        for t in range(weights.shape[1]):
            index = np.minimum(first + t, n_in - 1)
            w = weights[:, t].astype(np.float32).reshape(-1, *([1] * (moved.ndim - 1)))
            acc += w * moved[index]
        work = np.moveaxis(acc, 0, d)
    if work is data:
        return data.copy() if data.dtype == out_dtype else cast_to(data, out_dtype)
    return cast_to(np.ascontiguousarray(work), out_dtype)
