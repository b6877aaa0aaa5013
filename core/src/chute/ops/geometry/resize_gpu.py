"""GPU backends of fn.resize, fn.random_resized_crop and fn.resize_crop_mirror.

Each backend gets the whole batch as a TensorListGPU, computes the per-sample sizes
and resampling windows on the host with the CPU backends' rules (resize_kernels'
size arithmetic, vectorized over the batch where the rules allow; the same random
streams for random_resized_crop) and launches one resampling kernel for the batch
(chute.gpu.kernels) on the context's stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from chute.gpu.batches import dense_array, gpu_batch, raw_samples, sample_shapes
from chute.gpu.geometry_kernels import (
    INTERP_CODES,
    batch_outputs,
    describe_batch,
    launch,
    out_kind,
    output_offsets,
)
from chute.gpu.kernels import build_sample_table, kernel_function, resize_batch
from chute.gpu.runtime import require_gpu
from chute.graph.passes.hints import FusedResizeCrop
from chute.ops.geometry.crop_resize_kernels import crop_mirror_plan
from chute.ops.geometry.resize_kernels import axis_filters, resize_output_size
from chute.ops.geometry.resize_ops import crop_mirror_kwargs, size_kwargs
from chute.runtime.crop_window import random_crop_window
from chute.runtime.limits import check_output
from chute.types import to_dtype

__all__ = [
    "crop_mirror_windows",
    "output_sizes",
    "random_resized_crop",
    "resize",
    "resize_crop_mirror",
]


def _filters(a: Any) -> dict:
    """The resampling arguments of kernels.resize_batch from fn.resize's arguments."""
    name = str(a["interp_type"] if a.given("interp_type") else "linear")
    return {
        "interp": {"nn": "nn", "linear": "linear", "cubic": "cubic"}.get(name, "linear"),
        "antialias": bool(a["antialias"]) if a.given("antialias") else True,
    }


def resize(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.resize on the GPU: DALI's size rules per sample, one resampling launch."""
    (batch,) = inputs
    first = args.sample(0)
    if isinstance(ctx.state, FusedResizeCrop):  # Resize.setup's hint: the crop resamples
        from chute.ops.geometry.gpu_fusion import pending_resize

        dtype = first["dtype"] or batch.dtype
        return pending_resize(batch, ctx.state, _filters(first), dtype, ctx)
    if np.dtype(batch.dtype) != np.uint8:  # the batched resampler reads uint8 only
        from chute.ops.geometry.resize_any_gpu import resize_any

        return resize_any(op, inputs, args, ctx, size_kwargs)
    dense = dense_array(batch)
    samples = dense if dense is not None else raw_samples(batch)
    shapes = sample_shapes(batch)
    n = len(shapes)
    if not args.columns:
        # constant arguments: one size per distinct input size, no per-sample arguments
        sizes = output_sizes(shapes[:, :2], size_kwargs(first))
        window = _roi_window(first, 1, 1)
        windows = None
        if window is not None:
            windows = [_roi_window(first, int(h), int(w)) for h, w in shapes[:, :2].tolist()]
    else:
        sizes, windows = np.zeros((n, 2), np.int64), []
        for i, (h, w) in enumerate(shapes[:, :2].tolist()):
            a = args.sample(i)
            sizes[i] = resize_output_size(h, w, **size_kwargs(a))
            windows.append(_roi_window(a, h, w))
        if all(w is None for w in windows):
            windows = None
    out_dtype = to_dtype(first["dtype"] or batch.dtype)
    over = over_limit(sizes, shapes, out_dtype, size_argument(first), ctx)
    uniform = n > 0 and bool(np.all(sizes == sizes[0]))
    out = resize_batch(
        samples,
        tuple(int(v) for v in sizes[0]) if uniform else sizes,
        **_filters(first),
        windows=None if windows is None else _fill_windows(windows, shapes),
        dtype=to_dtype(first["dtype"] or batch.dtype),
        stream=ctx.stream,
    )
    result = gpu_batch(out, batch.layout() or "HWC", ctx)
    if over:
        result.failed = over  # on_error skip/warn: the executor replaces these samples
    return result


def size_argument(a: Any) -> str:
    """The size argument(s) given, as the CPU backend names them in the output-limit error."""
    names = ("resize_x", "resize_y", "size", "resize_shorter", "resize_longer")
    return "/".join(k for k in names if a.given(k)) or "size"


def over_limit(
    sizes: np.ndarray, shapes: np.ndarray, dtype: Any, argument: str, ctx: Any
) -> dict[int, str]:
    """Check every sample's output against the per-sample limit before anything is allocated.

    Raises for the first sample over it, unless ``on_error`` is skip/warn: then those samples
    become 1x1 (their size set in ``sizes``) and are returned with the reason, for the
    executor to replace and report, as on the CPU.
    """
    over: dict[int, str] = {}
    for i, (size, shape) in enumerate(zip(sizes.tolist(), shapes.tolist())):
        try:
            check_output((*size, *shape[2:]), dtype, argument)
        except ValueError as exc:
            if getattr(ctx, "on_error", "raise") not in ("skip", "warn"):
                raise ValueError(f"sample {i}: {exc}") from None
            over[i] = f"sample {i}: {exc}"
            sizes[i] = (1, 1)
    return over


def output_sizes(hw: np.ndarray, kwargs: dict) -> np.ndarray:
    """resize_output_size(h, w, **kwargs) for every (h, w) row, for constant arguments.

    Without a ROI, sizes given on both axes ("default"/"stretch" mode) do not depend on
    the input, and resize_shorter / resize_longer scale each image by one factor: both
    are computed for the batch at once with the operations (and float32 roundings)
    of resize_kernels.resize_plan. Anything else goes per distinct input size.
    """
    n = len(hw)
    if n == 0:
        return np.zeros((0, 2), np.int64)
    mode = kwargs.get("mode") or "default"
    requested = kwargs.get("size")
    if requested is None and ("resize_x" in kwargs or "resize_y" in kwargs):
        requested = (kwargs.get("resize_y") or 0.0, kwargs.get("resize_x") or 0.0)
    req = np.asarray(requested, np.float64).reshape(-1) if requested is not None else None
    if (
        req is not None
        and req.size == 2
        and mode in ("default", "stretch")
        and np.all(req != 0)
        and np.all(hw > 0)
        and kwargs.get("roi_start") is None
    ):
        size = resize_output_size(int(hw[0, 0]), int(hw[0, 1]), **kwargs)
        return np.tile(np.asarray(size, np.int64), (n, 1))
    shorter, longer = kwargs.get("resize_shorter"), kwargs.get("resize_longer")
    if (
        (shorter is None) != (longer is None)
        and requested is None
        and (shorter or longer)
        and kwargs.get("mode") is None
        and kwargs.get("max_size") is None
        and kwargs.get("roi_start") is None
        and np.all(hw > 0)
    ):
        return _scaled_sizes(hw, float(shorter or longer), shorter is not None)
    unique, inverse = np.unique(hw, axis=0, return_inverse=True)
    sizes = [resize_output_size(int(h), int(w), **kwargs) for h, w in unique.tolist()]
    return np.asarray(sizes, np.int64).reshape(-1, 2)[inverse.reshape(-1)]


def _scaled_sizes(hw: np.ndarray, side: float, shorter: bool) -> np.ndarray:
    """resize_plan's "not_smaller" / "not_larger" sizes for one requested side, vectorized."""
    in_size = hw.astype(np.float64)
    scale = side / in_size
    # DALI compares the scales in float32 and keeps sizes in float32
    scale32 = np.abs(scale).astype(np.float32).astype(np.float64)
    final = scale32.max(axis=1) if shorter else scale32.min(axis=1)
    out = np.where(
        np.abs(scale) != final[:, None], in_size * np.copysign(final[:, None], scale), side
    )
    exact = out.astype(np.float32).astype(np.float64)
    return np.maximum(1, np.floor(np.abs(exact) + 0.5)).astype(np.int64)


def _roi_window(a: Any, h: int, w: int) -> tuple | None:
    start, end = a["roi_start"], a["roi_end"]
    if start is None:
        return None
    if a["roi_relative"]:
        start = (start[0] * h, start[1] * w)
        end = (end[0] * h, end[1] * w)
    return (start[0], start[1], end[0] - start[0], end[1] - start[1])


def _fill_windows(windows: list, shapes: np.ndarray) -> np.ndarray:
    return np.array(
        [w if w is not None else (0, 0, *s[:2]) for w, s in zip(windows, shapes.tolist())],
        np.float32,
    )


def random_resized_crop(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.random_resized_crop on the GPU: the CPU backend's windows, one resampling launch."""
    (batch,) = inputs
    dense = dense_array(batch)
    samples = dense if dense is not None else raw_samples(batch)
    windows = []
    for i, (h, w) in enumerate(sample_shapes(batch)[:, :2].tolist()):
        a = args.sample(i)
        windows.append(
            random_crop_window(
                h,
                w,
                area=a["random_area"],
                aspect_ratio=a["random_aspect_ratio"],
                num_attempts=a["num_attempts"],
                rng=ctx.rng(i),
            )
        )
    first = args.sample(0)
    size = first["size"]
    size = (size[0], size[0]) if len(size) == 1 else size
    out = resize_batch(
        samples,
        (int(size[0]), int(size[1])),
        **_filters(first),
        windows=np.asarray(windows, np.float32),
        dtype=to_dtype(first["dtype"] or batch.dtype),
        stream=ctx.stream,
    )
    return gpu_batch(out, batch.layout() or "HWC", ctx)


def resize_crop_mirror(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.resize_crop_mirror on the GPU: one launch of chute.gpu.kernels' resampler."""
    cupy = require_gpu("fn.resize_crop_mirror")
    (batch,) = inputs
    images = describe_batch(batch)
    n = len(images.shapes)
    if images.dtype != np.uint8:
        raise TypeError(f"on the GPU fn.resize_crop_mirror takes uint8 images, got {images.dtype}")
    in_hw = images.shapes[:, :2]
    if not args.columns:
        # constant arguments: one plan per distinct input size
        unique, inverse = np.unique(in_hw, axis=0, return_inverse=True)
        a = args.sample(0)
        win, hw, mir, filt = crop_mirror_windows(unique, [a] * len(unique))
        inverse = inverse.reshape(-1)
        windows, out_hw, mirror = win[inverse], hw[inverse], mir[inverse]
        filters = [filt[j] for j in inverse.tolist()]
    else:
        windows, out_hw, mirror, filters = crop_mirror_windows(
            in_hw, [args.sample(i) for i in range(n)]
        )
    kinds = {f for pair in filters for f in pair}
    if len(kinds) > 1 or not kinds <= {"nn", "linear", "cubic"}:
        raise ValueError(
            f"on the GPU fn.resize_crop_mirror needs one filter of nn, linear or cubic for "
            f"every sample and axis, got {sorted(kinds)}"
        )
    interp = INTERP_CODES[kinds.pop() if kinds else "linear"]
    c = images.channels
    offsets, total = output_offsets(out_hw, c)
    dt = np.dtype(args["dtype"] or images.dtype)
    table = build_sample_table(
        images.ptrs,
        images.shapes,
        images.row_strides,  # uint8: elements are bytes
        windows.astype(np.float32),
        out_hw,
        offsets,
        mirror,
    )
    with ctx.stream:
        buf = cupy.empty(total, dt)
        if n:
            # the resampler's OUT_KIND codes are geometry_kernels' (0 uint8, 1 f16, 2 f32)
            kernel = kernel_function(
                "resample.cu", "resample_batch", out_kind(dt), cupy.cuda.Device().id
            )
            table_dev = cupy.asarray(table.view(np.uint8))
            flags = (np.int32(0), np.int32(interp), np.int32(bool(args["antialias"])))
            launch(kernel, n, out_hw, (table_dev, buf, np.int32(c), *flags))
    out = batch_outputs(buf, out_hw, offsets, c, images.squeeze)
    return gpu_batch(out, batch.layout() or "HWC", ctx)


def crop_mirror_windows(
    in_hw: np.ndarray, sample_args: Sequence[Any]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    """Per-sample resampling windows (y, x, h, w), output sizes, flip bits (1 horizontal,
    2 vertical) and filters of fn.resize_crop_mirror, from the CPU backend's plan
    (crop_resize_kernels.crop_mirror_plan)."""

    n = len(in_hw)
    windows = np.zeros((n, 4), np.float64)
    out_hw = np.zeros((n, 2), np.int64)
    mirror = np.zeros(n, np.int32)
    filters = []
    for i, a in enumerate(sample_args):
        h, w = (int(v) for v in in_hw[i])
        plan = crop_mirror_plan(h, w, **crop_mirror_kwargs(a))
        roi_y, roi_x = plan.roi_y, plan.roi_x
        mirror[i] = (roi_x[0] > roi_x[1]) | ((roi_y[0] > roi_y[1]) << 1)
        windows[i] = (min(roi_y), min(roi_x), abs(roi_y[1] - roi_y[0]), abs(roi_x[1] - roi_x[0]))
        out_hw[i] = plan.out_h, plan.out_w
        filters.append(axis_filters(plan, a["interp_type"], a["min_filter"], a["mag_filter"]))
    return windows, out_hw, mirror, filters
