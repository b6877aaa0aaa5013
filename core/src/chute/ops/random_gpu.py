"""GPU backends of fn.random.uniform, normal and coin_flip: one launch per batch.

Each sample draws from its own Philox stream, keyed as its CPU generator is
(chute.gpu.random_kernels), so ``uniform`` (range or values) and ``coin_flip`` give the
CPU backend's values bit for bit; ``normal`` gives the same distribution (Box-Muller on
the GPU, NumPy's ziggurat on the CPU). Output shapes come from ``shape`` or the
``shape_like`` input; the samples are views into one buffer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.gpu.batches import gpu_batch
from chute.gpu.random_kernels import (
    dtype_code,
    launch_elements,
    launch_per_sample,
    sample_table,
)
from chute.gpu.runtime import require_gpu

__all__ = ["coin_flip", "normal", "uniform"]


def _shapes(inputs: list, args: Any) -> list[tuple[int, ...]]:
    """Each sample's output shape: the shape_like input's, or the ``shape`` argument."""
    if inputs:
        like = inputs[0]
        if isinstance(like, (list, tuple)):  # host samples
            return [tuple(x.shape) for x in like]
        return [tuple(int(d) for d in s) for s in like.shape()]
    return [tuple(int(d) for d in (s or ())) for s in args.column("shape")]


def _allocate(cp: Any, shapes: list[tuple[int, ...]], dtype: np.dtype) -> tuple[Any, list[int]]:
    counts = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    return cp.empty(max(sum(counts), 1), dtype), counts


def _views(buf: Any, shapes: list[tuple[int, ...]], counts: list[int]) -> list[Any]:
    views, start = [], 0
    for shape, count in zip(shapes, counts):
        views.append(buf[start : start + count].reshape(shape))
        start += count
    return views


def _run(
    op: str, kernel: str, inputs: list, args: Any, ctx: Any, dtype: np.dtype, fill: Any
) -> Any:
    """Allocate the outputs, fill the table's parameters with ``fill(table)``, launch."""
    cp = require_gpu(op, device_id=ctx.device_id)
    shapes = _shapes(inputs, args)
    code = dtype_code(op, dtype)
    with cp.cuda.Device(ctx.device_id), ctx.stream:
        buf, counts = _allocate(cp, shapes, dtype)
        table = sample_table(ctx, counts)
        if len(table):
            table["out_ptr"] = buf.data.ptr + np.concatenate([[0], np.cumsum(counts[:-1])]).astype(
                np.uint64
            ) * np.uint64(dtype.itemsize)
        keep = fill(table, cp)
        if kernel == "uniform_values":
            launch_per_sample(kernel, table, code, ctx)
        else:
            launch_elements(kernel, table, code, 2 if kernel == "normal" else 4, ctx)
        del keep  # device data the kernel reads: freed in stream order, after the launch
    return gpu_batch(_views(buf, shapes, counts), "", ctx)


def uniform(inputs: list, args: Any, ctx: Any) -> Any:
    """fn.random.uniform on the GPU: bit-equal to the CPU backend."""
    from chute.ops.random import _check_range

    op = "fn.random.uniform"
    dtype = np.dtype(args["dtype"] or np.float32)
    values = args.column("values")
    if any(v is not None for v in values):

        def fill_values(table: np.ndarray, cp: Any) -> Any:
            lists = [np.asarray(v, np.float64).ravel() for v in values]
            for i, v in enumerate(lists):
                if v.size == 0:
                    raise ValueError(f"{op}: argument 'values' must not be empty (sample {i})")
            flat = cp.asarray(np.concatenate(lists)) if lists else None
            starts = np.concatenate([[0], np.cumsum([v.size for v in lists[:-1]])])
            if len(table):
                table["in_ptr"] = flat.data.ptr + starts.astype(np.uint64) * np.uint64(8)
                table["inner"] = [v.size for v in lists]
            return flat

        return _run(op, "uniform_values", inputs, args, ctx, dtype, fill_values)

    def fill_range(table: np.ndarray, cp: Any) -> None:
        for i, r in enumerate(args.column("range")):
            lo, hi = _check_range(r)
            table["a"][i] = lo
            table["b"][i] = float(hi) - float(lo)  # Generator.uniform's range, in double

    return _run(op, "uniform_range", inputs, args, ctx, dtype, fill_range)


def normal(inputs: list, args: Any, ctx: Any) -> Any:
    """fn.random.normal on the GPU: Box-Muller from each sample's stream."""
    op = "fn.random.normal"

    def fill(table: np.ndarray, cp: Any) -> None:
        for i, (mean, std) in enumerate(zip(args.column("mean"), args.column("stddev"))):
            if std < 0:
                raise ValueError(f"{op}: argument 'stddev' must be >= 0, got {std} (sample {i})")
            table["a"][i], table["b"][i] = mean, std

    return _run(op, "normal", inputs, args, ctx, np.dtype(args["dtype"] or np.float32), fill)


def coin_flip(inputs: list, args: Any, ctx: Any) -> Any:
    """fn.random.coin_flip on the GPU: bit-equal to the CPU backend."""
    op = "fn.random.coin_flip"

    def fill(table: np.ndarray, cp: Any) -> None:
        for i, p in enumerate(args.column("probability")):
            if not 0.0 <= p <= 1.0:
                raise ValueError(
                    f"{op}: argument 'probability' must be in [0, 1], got {p} (sample {i})"
                )
            table["a"][i] = p

    return _run(op, "coin_flip", inputs, args, ctx, np.dtype(args["dtype"] or np.int32), fill)
