"""fn.resize on the GPU for inputs other than uint8 (int16, uint16, int32, float, ...).

The batched resampling kernel (chute.gpu.kernels.resize_batch) reads uint8 images. Other
types take this path: per sample, the CPU backend's plan (output size, region, each
axis's filter) and its weights as two dense matrices, applied on the device as two
matrix products in float32 (the CPU engine's precision), then rounded to nearest and
saturated into the output type. Nearest-neighbour resizing is a gather with the CPU's
source indices, exact for every type. Taps past the image read the edge pixel, as DALI
and the CPU backend do.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from chute.gpu.batches import gpu_batch
from chute.gpu.runtime import require_gpu
from chute.ops.geometry._resample import FILTERS, axis_weights
from chute.ops.geometry.resize_kernels import (
    _FILTER_REACH,
    _nearest_index,
    axis_filters,
    resize_plan,
)
from chute.ops.geometry.window_any_gpu import saturate
from chute.runtime.limits import check_output
from chute.types import to_dtype

__all__ = ["axis_matrix", "resize_any"]


def axis_matrix(
    in_size: int, out_size: int, lo: float, hi: float, filter_name: str, antialias: bool
) -> np.ndarray:
    """The (out_size, in_size) float32 weights of one axis, edge taps clamped into the image."""
    if filter_name == "nn":  # the pixel holding each output centre (the CPU engine's rule)
        first, _ = axis_weights(in_size, out_size, lo, hi, "nn", antialias)
        dense = np.zeros((out_size, in_size), np.float32)
        dense[np.arange(out_size), first] = 1.0
        return dense
    if filter_name not in FILTERS:
        raise ValueError(f"unknown resampling filter {filter_name!r}")
    scale = max(abs(hi - lo) / max(1, out_size), 1.0)
    pad = math.ceil(_FILTER_REACH.get(filter_name, 3.0) * scale + 2.0)
    first, weights = axis_weights(
        in_size + 2 * pad, out_size, lo + pad, hi + pad, filter_name, antialias
    )
    index = np.clip(first[:, None] + np.arange(weights.shape[1])[None, :] - pad, 0, in_size - 1)
    dense = np.zeros((out_size, in_size), np.float64)
    rows = np.broadcast_to(np.arange(out_size)[:, None], index.shape)
    np.add.at(dense, (rows, index), weights)
    return dense.astype(np.float32)


def _resize_one(
    cupy: Any, image: Any, a: Any, out_dtype: np.dtype, size_kwargs: Callable[[Any], dict]
) -> Any:
    squeeze = image.ndim == 2
    hwc = image[:, :, None] if squeeze else image
    in_h, in_w = int(hwc.shape[0]), int(hwc.shape[1])
    plan = resize_plan(
        in_h,
        in_w,
        **size_kwargs(a),
        roi_start=a["roi_start"],
        roi_end=a["roi_end"],
        roi_relative=a["roi_relative"],
    )
    check_output((plan.out_h, plan.out_w, *hwc.shape[2:]), out_dtype, "size")
    fy, fx = axis_filters(plan, a["interp_type"], a["min_filter"], a["mag_filter"])
    antialias = bool(a["antialias"])
    (y0, y1), (x0, x1) = plan.roi_y, plan.roi_x
    if fy == "nn" and fx == "nn":
        rows = cupy.asarray(_nearest_index(in_h, plan.out_h, y0, y1, accumulate=True))
        cols = cupy.asarray(_nearest_index(in_w, plan.out_w, x0, x1))
        out = hwc.take(rows, axis=0).take(cols, axis=1).astype(out_dtype)
    else:
        wy = axis_matrix(in_h, plan.out_h, y0, y1, fy, antialias)
        wx = axis_matrix(in_w, plan.out_w, x0, x1, fx, antialias)
        src = hwc.astype(cupy.float32)
        c = src.shape[2]
        tmp = cupy.asarray(wy) @ src.reshape(in_h, in_w * c)  # (out_h, in_w * c)
        tmp = tmp.reshape(plan.out_h, in_w, c).transpose(1, 0, 2).reshape(in_w, -1)
        res = (cupy.asarray(wx) @ tmp).reshape(plan.out_w, plan.out_h, c).transpose(1, 0, 2)
        out = saturate(cupy, res, out_dtype)
    out = cupy.ascontiguousarray(out)
    return out[:, :, 0] if squeeze else out


def resize_any(
    op: Any, inputs: list, args: Any, ctx: Any, size_kwargs: Callable[[Any], dict]
) -> Any:
    """fn.resize on the GPU for a batch of any numeric type: one plan and two products per sample.

    ``size_kwargs`` gives resize_plan's size arguments from a sample's arguments (the
    operator's own rule, resize_ops.size_kwargs)."""
    cupy = require_gpu("fn.resize")
    (batch,) = inputs
    samples = batch.samples()
    first = args.sample(0)
    out_dtype = to_dtype(first["dtype"] or batch.dtype)
    outs = []
    with ctx.stream:
        for i, image in enumerate(samples):
            a = args.sample(i) if args.columns else first
            try:
                outs.append(_resize_one(cupy, image, a, np.dtype(out_dtype), size_kwargs))
            except ValueError as exc:
                raise ValueError(f"sample {i}: {exc}") from None
    return gpu_batch(outs, batch.layout() or ("HWC" if outs and outs[0].ndim == 3 else "HW"), ctx)
