"""GPU backend of fn.color_space_conversion: one conversion launch for the batch.

``color_space_params`` (plain NumPy) turns the pair of color spaces into the kernel's
parameters: without HSV the whole conversion is one affine map, as on the CPU
(color_space_kernels); with HSV, one map to or from RGB around the HSV step. The
launch is color.cu's ``color_space_batch`` through chute.gpu.color_kernels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.gpu.batches import batch_storage, gpu_batch
from chute.gpu.color_kernels import ElementBatch, flat_table, launch, sample_channels
from chute.gpu.runtime import require_gpu
from chute.ops.color.color_space_kernels import (
    from_rgb,
    image_type_channels,
    image_type_name,
    to_rgb,
)
from chute.ops.image.convert_kernels import half_range

__all__ = ["color_space_batch", "color_space_conversion", "color_space_params"]


def color_space_conversion(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.color_space_conversion on the GPU: one conversion launch for the batch."""
    (batch,) = inputs
    src, dst = image_type_name(args["image_type"]), image_type_name(args["output_type"])
    out = color_space_batch(batch_storage(batch), src, dst, stream=ctx.stream)
    return gpu_batch(out, batch.layout(), ctx)


def color_space_params(src: str, dst: str, dtype: Any) -> tuple[int, int, int, int, np.ndarray]:
    """Return (in_c, out_c, src_hsv, dst_hsv, 24 float64 parameters) of color_space_batch.

    Without HSV the whole conversion is one affine map (A; B is the identity), as on the
    CPU; with HSV, A takes the input to RGB or B takes RGB to the output.
    """
    mid = half_range(dtype)
    in_c, out_c = image_type_channels(src), image_type_channels(dst)
    identity = (np.eye(3), np.zeros(3))
    a, b = identity, identity
    if src == dst:
        pass  # a copy, as on the CPU
    elif "HSV" not in (src, dst):
        m_in, o_in = to_rgb(src, mid)
        m_out, o_out = from_rgb(dst, mid)
        a = (m_out @ m_in, m_out @ o_in + o_out)
    elif src == "HSV":
        b = from_rgb(dst, mid) if dst != "HSV" else identity
    else:
        a = to_rgb(src, mid)
    params = np.concatenate([_square(*a), _square(*b)])
    hsv = src != dst
    return in_c, out_c, int(hsv and src == "HSV"), int(hsv and dst == "HSV"), params


def _square(matrix: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """A (rows x cols) matrix and offset padded to 3x3 + 3 (gray reads column 0)."""
    full = np.zeros((3, 3))
    full[: matrix.shape[0], : matrix.shape[1]] = matrix
    off = np.zeros(3)
    off[: len(offset)] = offset
    return np.concatenate([full.ravel(), off])


def color_space_batch(batch: Any, src: str, dst: str, stream: Any = None) -> Any:
    """Convert every HWC sample from color space ``src`` to ``dst``; the dtype is kept.

    HW samples count as one channel (GRAY).
    """
    cupy = require_gpu("color_space_batch")
    with stream or cupy.cuda.get_current_stream():
        b = ElementBatch(cupy, batch)
        if not len(b):
            return b.output(b.dtype or np.uint8)[1]
        dtype = b.dtype
        hsv = "HSV" in (src, dst)
        if hsv and dtype != np.uint8 and dtype.kind != "f":
            raise TypeError(f"HSV conversion needs uint8 or float input, got {dtype}")
        in_c, out_c, src_hsv, dst_hsv, params = color_space_params(src, dst, dtype)
        for s in b.shapes:
            if sample_channels(s) != in_c:
                raise ValueError(f"{src} images have {in_c} channel(s), got shape {s}")
        out_ptrs, result = b.output(dtype, out_c)
        table = flat_table(b.ptrs, out_ptrs, b.counts // in_c)
        # OpenCV rounds its own types half to even; the rest go through convert_saturate
        round_even = dtype in (np.uint8, np.uint16, np.int16)
        extra = (in_c, out_c, src_hsv, dst_hsv, int(hsv and dtype == np.uint8), int(round_even))
        double = dtype == np.float64
        launch(cupy, "color_space_batch", dtype, dtype, double, table, params, extra, 2)
    return result
