"""GPU backends of the color operators and fn.cast: one batched kernel per batch.

Each function is an operator's ``run_gpu``: it gets the whole batch as a TensorListGPU,
computes the per-sample parameters in NumPy for the whole batch (the CPU backends'
formulas, from the same per-sample arguments) and launches one kernel of
:mod:`chute.gpu.color_kernels` on the pipeline's stream. Dense batches stay dense;
ragged batches come back as views into one buffer.

- brightness / contrast / brightness_contrast (and color matrices on 1-channel images):
  a per-sample affine map of every element;
- color_twist / hsv / hue / saturation: a per-sample 3x3 color matrix plus offset;
- color_space_conversion: one conversion for the batch (affine, or through HSV);
- cast: an identity affine map with fn.cast's rounding (half to even) and saturation.

Samples whose ``mask`` is 0 pass through converted to the output dtype, as on the CPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.gpu.batches import dense_array, gpu_batch

__all__ = [
    "batch_storage",
    "brightness_contrast_gpu",
    "cast_gpu",
    "color_matrix_gpu",
    "color_space_conversion_gpu",
    "per_sample",
]


def batch_storage(batch: Any) -> Any:
    """The batch as one contiguous CuPy array when it is stored as one, else its samples."""
    dense = dense_array(batch)
    if dense is None:
        # TensorListGPU's contiguous storage of any rank (dense_array gives HWC batches only)
        dense = getattr(batch, "_dense", None)
    return dense if dense is not None else batch.samples()


def per_sample(args: Any, name: str) -> Any:
    """An argument as an (N,) float64 array when given per sample, else its constant."""
    if args.is_per_sample(name):
        return np.asarray(args.column(name), np.float64)
    return args[name]


def _mask(args: Any, n: int) -> np.ndarray:
    if args.is_per_sample("mask"):
        return np.asarray(args.column("mask"), bool)
    return np.full(n, bool(args["mask"]))


def _out_dtype(args: Any, batch: Any) -> np.dtype:
    dtype = args["dtype"]
    return np.dtype(batch.dtype if dtype is None else dtype)


def _affine_rows(gain: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """(N, 8) affine_batch parameters: the same gain and offset for every channel."""
    params = np.empty((len(gain), 8))
    params[:, :4] = np.asarray(gain, np.float64)[:, None]
    params[:, 4:] = np.asarray(offset, np.float64)[:, None]
    return params


def _channels(batch: Any) -> int:
    shapes = {tuple(s) for s in batch.shape()} if len(batch) else {(3,)}
    channels = {s[-1] if len(s) >= 3 else 1 for s in shapes}
    if len(channels) != 1:
        raise ValueError(f"all samples need the same number of channels, got {sorted(channels)}")
    return channels.pop()


def brightness_contrast_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.brightness / contrast / brightness_contrast on the GPU: one affine launch."""
    from chute.gpu import color_kernels

    (batch,) = inputs
    n = len(batch)
    out_dtype = _out_dtype(args, batch)
    names = {a.name for a in op.schema.args}
    value = {k: per_sample(args, k) for k in names if k not in ("dtype", "mask")}
    gain, offset = color_kernels.brightness_contrast_params(n, batch.dtype, out_dtype, **value)
    unmasked = ~_mask(args, n)
    gain[unmasked], offset[unmasked] = 1.0, 0.0
    out = color_kernels.affine_batch(
        batch_storage(batch), _affine_rows(gain, offset), 1, out_dtype, stream=ctx.stream
    )
    return gpu_batch(out, batch.layout(), ctx)


def color_matrix_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.color_twist / hsv / hue / saturation on the GPU: one color-matrix launch."""
    from chute.gpu import color_kernels
    from chute.ops.color.color_kernels import is_bgr
    from chute.ops.image.convert_kernels import half_range

    (batch,) = inputs
    n = len(batch)
    out_dtype = _out_dtype(args, batch)
    name = op.schema.name
    if name == "hsv":
        params = color_kernels.hsv_params(
            n, per_sample(args, "hue"), per_sample(args, "saturation"), per_sample(args, "value")
        )
    else:
        twist = {"brightness": 1.0, "contrast": 1.0, "hue": 0.0, "saturation": 1.0}
        for key in twist:
            if key in op.schema.arg_index:
                twist[key] = per_sample(args, key)
        params = color_kernels.color_twist_params(
            n, **twist, center=half_range(batch.dtype), bgr=is_bgr(args["image_type"])
        )
    unmasked = ~_mask(args, n)
    storage = batch_storage(batch)
    channels = _channels(batch)
    if channels == 1:
        gain, offset = color_kernels.luma_params(params)
        gain[unmasked], offset[unmasked] = 1.0, 0.0
        rows = _affine_rows(gain, offset)
        out = color_kernels.affine_batch(storage, rows, 1, out_dtype, stream=ctx.stream)
    elif channels in (3, 4):
        params[unmasked] = color_kernels.identity_matrix_params(int(unmasked.sum()))
        out = color_kernels.matrix_batch(storage, params, out_dtype, stream=ctx.stream)
    else:
        raise ValueError(f"color adjustments need 1, 3 or 4 channels, got {channels}")
    return gpu_batch(out, batch.layout(), ctx)


def color_space_conversion_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.color_space_conversion on the GPU: one conversion launch for the batch."""
    from chute.gpu import color_kernels
    from chute.ops.color.color_space_kernels import image_type_name

    (batch,) = inputs
    src, dst = image_type_name(args["image_type"]), image_type_name(args["output_type"])
    out = color_kernels.color_space_batch(batch_storage(batch), src, dst, stream=ctx.stream)
    return gpu_batch(out, batch.layout(), ctx)


def cast_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.cast on the GPU: one launch for the batch (CuPy for types the kernel lacks)."""
    from chute.gpu import color_kernels
    from chute.gpu.runtime import require_gpu

    (batch,) = inputs
    dtype = np.dtype(args["dtype"])
    storage = batch_storage(batch)
    kinds = color_kernels.KERNEL_DTYPES
    if batch.dtype in kinds and dtype in kinds:
        rows = _affine_rows(np.ones(len(batch)), np.zeros(len(batch)))
        out = color_kernels.affine_batch(
            storage,
            rows,
            1,
            dtype,
            compute_double=True,  # exact for every integer up to 32 bits
            round_even=True,  # fn.cast rounds as np.rint
            whole=True,
            stream=ctx.stream,
        )
        return gpu_batch(out, batch.layout(), ctx)
    cp = require_gpu("fn.cast", device_id=ctx.device_id)
    with ctx.stream:
        if isinstance(storage, cp.ndarray):
            out = _convert(cp, storage, dtype)
        else:
            out = [_convert(cp, x, dtype) for x in storage]  # one launch per sample
    return gpu_batch(out, batch.layout(), ctx)


def _convert(cp: Any, x: Any, dtype: np.dtype) -> Any:
    """tensor_ops.convert on CuPy: round half to even and saturate into integer types."""
    if dtype.kind in "iu" and x.dtype.kind == "f":
        info = np.iinfo(dtype)
        return cp.clip(cp.rint(x), info.min, info.max).astype(dtype)
    if dtype.kind in "iu" and x.dtype.kind in "iu" and not np.can_cast(x.dtype, dtype):
        info = np.iinfo(dtype)
        return cp.clip(x, info.min, info.max).astype(dtype)
    return x.astype(dtype)
