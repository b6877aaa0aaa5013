"""GPU backend of fn.cast: one launch for the batch (CuPy for types the kernel lacks)."""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.gpu import color_kernels
from chute.gpu.batches import batch_storage, gpu_batch
from chute.gpu.runtime import require_gpu

__all__ = ["cast"]


def cast(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.cast on the GPU: one launch for the batch (CuPy for types the kernel lacks)."""
    (batch,) = inputs
    dtype = np.dtype(args["dtype"])
    storage = batch_storage(batch)
    kinds = color_kernels.KERNEL_DTYPES
    if batch.dtype in kinds and dtype in kinds:
        rows = color_kernels.affine_rows(np.ones(len(batch)), np.zeros(len(batch)))
        out = color_kernels.affine_batch(
            storage,
            rows,
            1,
            dtype,
            compute_double=True,  # exact for every integer up to 32 bits
            round_even=False,  # fn.cast rounds halves away from zero, as DALI
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
    """tensor_ops.convert on CuPy: round half away from zero and saturate into integer types."""
    if dtype.kind in "iu" and x.dtype.kind == "f":
        info = np.iinfo(dtype)
        trunc = cp.trunc(x)
        ties = cp.abs(x - trunc) == 0.5
        rounded = cp.where(ties, trunc + cp.sign(x), cp.rint(x))
        return cp.clip(rounded, info.min, info.max).astype(dtype)
    if dtype.kind in "iu" and x.dtype.kind in "iu" and not np.can_cast(x.dtype, dtype):
        info = np.iinfo(dtype)
        return cp.clip(x, info.min, info.max).astype(dtype)
    return x.astype(dtype)
