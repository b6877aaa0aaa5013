"""GPU backends of brightness / contrast and the color-matrix operators: one launch per batch.

Each backend gets the whole batch as a TensorListGPU, computes the per-sample
parameters in NumPy for the whole batch (the CPU backends' float64 formulas of
color_kernels, from the same per-sample arguments; the ``*_params`` builders need no
GPU) and launches one kernel of chute.gpu.color_kernels on the pipeline's stream.
Dense batches stay dense; ragged batches come back as views into one buffer.

- brightness / contrast / brightness_contrast (and color matrices on 1-channel images):
  a per-sample affine map of every element;
- color_twist / hsv / hue / saturation: a per-sample 3x3 color matrix plus offset.

Samples whose ``mask`` is 0 pass through converted to the output dtype, as on the CPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.gpu.batches import batch_storage, gpu_batch
from chute.gpu.color_kernels import affine_batch, affine_rows, matrix_batch
from chute.ops.color.color_kernels import RGB_TO_YIQ, YIQ_TO_RGB, is_bgr
from chute.ops.image.convert_kernels import full_range, half_range

__all__ = [
    "brightness_contrast",
    "brightness_contrast_params",
    "color_matrix",
    "color_twist_params",
    "hsv_params",
    "identity_matrix_params",
    "luma_params",
]


def _per_sample(args: Any, name: str) -> Any:
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


def _channels(batch: Any) -> int:
    shapes = {tuple(s) for s in batch.shape()} if len(batch) else {(3,)}
    channels = {s[-1] if len(s) >= 3 else 1 for s in shapes}
    if len(channels) != 1:
        raise ValueError(f"all samples need the same number of channels, got {sorted(channels)}")
    return channels.pop()


def brightness_contrast(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.brightness / contrast / brightness_contrast on the GPU: one affine launch."""
    (batch,) = inputs
    n = len(batch)
    out_dtype = _out_dtype(args, batch)
    names = {a.name for a in op.schema.args}
    value = {k: _per_sample(args, k) for k in names if k not in ("dtype", "mask")}
    gain, offset = brightness_contrast_params(n, batch.dtype, out_dtype, **value)
    unmasked = ~_mask(args, n)
    gain[unmasked], offset[unmasked] = 1.0, 0.0
    out = affine_batch(
        batch_storage(batch), affine_rows(gain, offset), 1, out_dtype, stream=ctx.stream
    )
    return gpu_batch(out, batch.layout(), ctx)


def color_matrix(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.color_twist / hsv / hue / saturation on the GPU: one color-matrix launch."""
    (batch,) = inputs
    n = len(batch)
    out_dtype = _out_dtype(args, batch)
    name = op.schema.name
    if name == "hsv":
        params = hsv_params(
            n, _per_sample(args, "hue"), _per_sample(args, "saturation"), _per_sample(args, "value")
        )
    else:
        twist = {"brightness": 1.0, "contrast": 1.0, "hue": 0.0, "saturation": 1.0}
        for key in twist:
            if key in op.schema.arg_index:
                twist[key] = _per_sample(args, key)
        params = color_twist_params(
            n, **twist, center=half_range(batch.dtype), bgr=is_bgr(args["image_type"])
        )
    unmasked = ~_mask(args, n)
    storage = batch_storage(batch)
    channels = _channels(batch)
    if channels == 1:
        gain, offset = luma_params(params)
        gain[unmasked], offset[unmasked] = 1.0, 0.0
        rows = affine_rows(gain, offset)
        out = affine_batch(storage, rows, 1, out_dtype, stream=ctx.stream)
    elif channels in (3, 4):
        params[unmasked] = identity_matrix_params(int(unmasked.sum()))
        out = matrix_batch(storage, params, out_dtype, stream=ctx.stream)
    else:
        raise ValueError(f"color adjustments need 1, 3 or 4 channels, got {channels}")
    return gpu_batch(out, batch.layout(), ctx)


def _column(value: Any, n: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(value, np.float64), (n,)).copy()


def brightness_contrast_params(
    n: int,
    in_dtype: Any,
    out_dtype: Any,
    brightness: Any = 1.0,
    brightness_shift: Any = 0.0,
    contrast: Any = 1.0,
    contrast_center: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample (gain, offset) of brightness_contrast, as color_kernels.brightness_contrast."""
    b, shift, c = _column(brightness, n), _column(brightness_shift, n), _column(contrast, n)
    center = np.array(
        [half_range(in_dtype) if v is None else float(v) for v in _objects(contrast_center, n)]
    )
    out_range = full_range(out_dtype)
    norm = b  # no rescaling between types, as DALI
    gain = norm * c
    offset = shift * out_range + norm * (center - c * center)
    return gain, offset


def _objects(value: Any, n: int) -> list:
    if isinstance(value, (list, tuple, np.ndarray)) and np.ndim(value) == 1:
        return list(value)
    return [value] * n


def hsv_matrices(hue: Any, saturation: Any, value: Any, n: int) -> np.ndarray:
    """(N, 3, 3) RGB matrices rotating hue (degrees), scaling saturation and value in YIQ."""
    h = np.radians(_column(hue, n))
    cos_h, sin_h = np.cos(h), np.sin(h)
    s = _column(saturation, n)
    yiq = np.zeros((n, 3, 3))
    yiq[:, 0, 0] = 1.0
    yiq[:, 1, 1] = yiq[:, 2, 2] = s * cos_h
    yiq[:, 1, 2] = s * sin_h
    yiq[:, 2, 1] = -s * sin_h
    return _column(value, n)[:, None, None] * (YIQ_TO_RGB @ yiq @ RGB_TO_YIQ)


def color_twist_params(
    n: int,
    brightness: Any = 1.0,
    contrast: Any = 1.0,
    hue: Any = 0.0,
    saturation: Any = 1.0,
    center: float = 0.5,
    bgr: bool = False,
) -> np.ndarray:
    """(N, 12) matrix_batch parameters (3x3 matrix, offset) of color_twist per sample."""
    b, c = _column(brightness, n), _column(contrast, n)
    matrix = (b * c)[:, None, None] * hsv_matrices(hue, saturation, 1.0, n)
    offset = np.repeat((b * (1.0 - c) * center)[:, None], 3, axis=1)
    return _matrix_params(matrix, offset, bgr)


def hsv_params(n: int, hue: Any = 0.0, saturation: Any = 1.0, value: Any = 1.0) -> np.ndarray:
    """(N, 12) matrix_batch parameters of fn.hsv per sample."""
    return _matrix_params(hsv_matrices(hue, saturation, value, n), np.zeros((n, 3)), False)


def _matrix_params(matrix: np.ndarray, offset: np.ndarray, bgr: bool) -> np.ndarray:
    if bgr:  # the same map with the channel order reversed on both sides
        matrix, offset = matrix[:, ::-1, ::-1], offset[:, ::-1]
    return np.concatenate([matrix.reshape(-1, 9), offset], axis=1)


def luma_params(params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(gain, offset) per sample of a color matrix applied to 1-channel (gray) images.

    Gray stands for R = G = B; the output is the luma of the transformed pixel, as
    color_kernels' color matrices do on the CPU.
    """
    luma = RGB_TO_YIQ[0]
    matrix = params[:, :9].reshape(-1, 3, 3)
    gain = (luma @ matrix) @ np.ones(3)
    return gain, params[:, 9:] @ luma


def identity_matrix_params(n: int) -> np.ndarray:
    """(N, 12) parameters of the identity color map (masked samples)."""
    return _matrix_params(np.tile(np.eye(3), (n, 1, 1)), np.zeros((n, 3)), False)
