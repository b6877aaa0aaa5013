"""GPU backends of the geometry operators: warp_affine, rotate, crop, pad,
resize_crop_mirror and gaussian_blur.

Each ``*_gpu`` function is an operator's ``run_gpu``: it turns the batch's arguments
into per-sample parameters on the host with the CPU backend's rules
(chute.ops.gpu_geometry_plans, plain NumPy) and launches one kernel for the whole
batch (chute.gpu.geometry_kernels; resize_crop_mirror reuses chute.gpu.kernels'
resampling kernel). Masked-out samples ride along in the same launch as identity
warps or one-tap blurs, so they come back unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.gpu.batches import gpu_batch
from chute.ops.geometry._border import fill_tuple
from chute.ops.gpu_geometry_plans import (
    affines,
    blur_plan,
    crop_mirror_windows,
    crop_plan,
    pad_plan,
    rotate_plan,
    warp_plan,
    window_fill,
)

__all__ = [
    "crop_gpu",
    "gaussian_blur_gpu",
    "pad_gpu",
    "resize_crop_mirror_gpu",
    "rotate_gpu",
    "warp_affine_gpu",
]


def _mask(args: Any, n: int) -> np.ndarray:
    if "mask" not in args.node.schema.arg_index:
        return np.ones(n, bool)
    return np.asarray([bool(m) for m in args.column("mask")], bool).reshape(n)


def _host_samples(value: Any) -> list:
    """The samples of a (CPU or GPU) batch input as host arrays (small ones: matrices)."""
    if hasattr(value, "as_cpu"):
        value = value.as_cpu()
    if hasattr(value, "at"):
        return [np.asarray(value.at(i)) for i in range(len(value))]
    return [np.asarray(v) for v in value]


# ---- warp_affine / rotate ------------------------------------------------------------------


def _sizes(args: Any, n: int) -> list:
    from chute.ops.geometry.warp_ops import output_size

    if args.is_per_sample("size"):
        return [output_size(v) for v in args.column("size")]
    return [output_size(args["size"])] * n


def _run_warp(batch: Any, matrices: np.ndarray, sizes: list, inverse: bool, args: Any, ctx: Any):
    from chute.gpu.geometry_kernels import warp_affine_batch

    images = _images(batch)
    n = len(images.shapes)
    plan = warp_plan(
        images.shapes[:, :2],
        matrices,
        sizes,
        inverse,
        args.column("interp_type"),
        args.column("fill_value"),
        args["border"],
        _mask(args, n),
        images.channels,
        images.dtype,
    )
    out = warp_affine_batch(
        images,
        plan["matrices"],
        plan["out_hw"],
        plan["interp"],
        plan["border"],
        plan["fill"],
        ctx.stream,
    )
    return gpu_batch(out, batch.layout() or "HWC", ctx)


def _images(batch: Any) -> Any:
    from chute.gpu.geometry_kernels import describe_batch

    return describe_batch(batch)


def warp_affine_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.warp_affine on the GPU: per-sample matrices and sizes, one launch."""
    batch = inputs[0]
    n = len(batch)
    if len(inputs) > 1:
        matrices = _host_samples(inputs[1])
    elif args.is_per_sample("matrix"):
        matrices = [np.asarray(v) for v in args.columns["matrix"]]
    else:
        if args["matrix"] is None:
            raise ValueError("give the 2x3 'matrix' as an argument or as the second input")
        one = affines([args["matrix"]])
        return _run_warp(
            batch, np.repeat(one, n, 0), _sizes(args, n), args["inverse_map"], args, ctx
        )
    return _run_warp(batch, affines(matrices), _sizes(args, n), args["inverse_map"], args, ctx)


def rotate_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.rotate on the GPU: the CPU backend's canvas sizes and matrices, one warp launch."""
    from chute.gpu.batches import sample_shapes

    batch = inputs[0]
    n = len(batch)
    in_hw = sample_shapes(batch)[:, :2]
    out_hw, matrices = rotate_plan(
        in_hw, args.column("angle"), bool(args["keep_size"]), _sizes(args, n)
    )
    sizes = [tuple(s) for s in out_hw.tolist()]
    return _run_warp(batch, matrices, sizes, True, args, ctx)


# ---- crop / pad ----------------------------------------------------------------------------


def crop_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.crop on the GPU: the CPU backend's windows, borders and fill, one launch."""
    from chute.gpu.geometry_kernels import BORDER_CODES, window_batch

    (batch,) = inputs
    images = _images(batch)
    anchors, out_hw = crop_plan(
        images.shapes[:, :2],
        args.column("crop"),
        args.column("crop_h"),
        args.column("crop_w"),
        args.column("rel_crop"),
        args.column("crop_pos_x"),
        args.column("crop_pos_y"),
        args["rounding"],
        args["out_of_bounds_policy"],
    )
    fill = window_fill(args.column("fill_values"), images.channels, images.squeeze, images.dtype)
    out = window_batch(
        images,
        anchors,
        out_hw,
        BORDER_CODES[args["border"]],
        fill,
        args["dtype"] or images.dtype,
        ctx.stream,
    )
    return gpu_batch(out, batch.layout() or "HWC", ctx)


def pad_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.pad on the GPU: the end of H and W padded with a border or fill, one launch."""
    from chute.gpu.batches import sample_shapes
    from chute.gpu.geometry_kernels import BORDER_CODES, window_batch
    from chute.ops.geometry._op_common import default_layout
    from chute.ops.geometry.crop_kernels import axes_from

    (batch,) = inputs
    n = len(batch)
    if n == 0:
        return batch
    ndim = len(batch.shape()[0])
    layout = default_layout(ndim, ctx.state)
    if ndim not in (2, 3) or (layout and not layout.startswith("HW")):
        raise ValueError(f"on the GPU fn.pad takes HWC or HW images, got layout {layout!r}")
    chosen = axes_from(ndim, args["axes"], args["axis_names"], layout, range(ndim))
    shapes = sample_shapes(batch)[:, :ndim]
    padded = pad_plan(shapes, chosen, args.column("shape"), args.column("align"))
    if ndim == 3 and np.any(padded[:, 2] != shapes[:, 2]):
        raise ValueError("on the GPU fn.pad pads height and width, not channels")
    images = _images(batch)
    fill = np.zeros((n, 4))
    fill[:, : images.channels] = fill_tuple(args["fill_value"], images.channels)
    if images.dtype == np.uint8:
        fill = np.clip(np.rint(fill), 0, 255)  # OpenCV's copyMakeBorder converts it so
    out = window_batch(
        images,
        np.zeros((n, 2), np.int64),
        padded[:, :2],
        BORDER_CODES[args["border"]],
        fill,
        images.dtype,
        ctx.stream,
    )
    return gpu_batch(out, batch.layout(), ctx)


# ---- resize_crop_mirror --------------------------------------------------------------------


def resize_crop_mirror_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.resize_crop_mirror on the GPU: one launch of chute.gpu.kernels' resampler."""
    from chute.gpu import geometry_kernels as gk
    from chute.gpu import kernels
    from chute.gpu.runtime import require_gpu

    cupy = require_gpu("fn.resize_crop_mirror")
    (batch,) = inputs
    images = _images(batch)
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
    interp = gk.INTERP_CODES[kinds.pop() if kinds else "linear"]
    c = images.channels
    offsets, total = gk.output_offsets(out_hw, c)
    dt = np.dtype(args["dtype"] or images.dtype)
    table = kernels.build_sample_table(
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
            kernel = kernels.kernel_function(
                "resample.cu", "resample_batch", gk.out_kind(dt), cupy.cuda.Device().id
            )
            table_dev = cupy.asarray(table.view(np.uint8))
            flags = (np.int32(0), np.int32(interp), np.int32(bool(args["antialias"])))
            gk.launch(kernel, n, out_hw, (table_dev, buf, np.int32(c), *flags))
    out = gk.batch_outputs(buf, out_hw, offsets, c, images.squeeze)
    return gpu_batch(out, batch.layout() or "HWC", ctx)


# ---- gaussian_blur -------------------------------------------------------------------------


def gaussian_blur_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.gaussian_blur on the GPU: per-sample kernels, rows then columns (two launches)."""
    from chute.gpu.geometry_kernels import describe_batch, gaussian_blur_batch

    (batch,) = inputs
    n = len(batch)
    frames = None
    source: Any = batch
    if n and len(batch.shape()[0]) == 4:
        # FHWC sequences: every frame is a row of the table, blurred alike
        frames = [int(s[0]) for s in batch.shape()]
        data = getattr(batch, "_dense", None)
        if data is not None and data.ndim == 5:
            source = data.reshape(-1, *data.shape[2:])
        else:
            source = [x[f] for x in batch.samples() for f in range(x.shape[0])]
    images = describe_batch(source)
    sig, win = blur_plan(args.column("sigma"), args.column("window_size"), _mask(args, n))
    in_dtype = images.dtype
    out_dtype = np.dtype(args["dtype"] or in_dtype)
    # the CPU backend pads in its working type: float when a float output comes from ints
    work = np.float32 if (out_dtype.kind == "f" and in_dtype.kind != "f") else in_dtype
    fill = np.array([float(v) for v in args.column("fill_value")], np.float64).astype(work)
    if frames is not None:
        sig, win = np.repeat(sig, frames, axis=0), np.repeat(win, frames, axis=0)
        fill = np.repeat(fill, frames)
    border = args["border"]
    out = gaussian_blur_batch(images, sig, win, border, fill, out_dtype, ctx.stream, frames)
    return gpu_batch(out, batch.layout() or "HWC", ctx)
