"""GPU backend of fn.decoders.inflate: every chunk of the batch in one launch.

The chunk table (where each chunk starts in its input sample, how long it is, where its
inflated bytes go and how many fit) is built on the host by the CPU backend's rules
(inflate_ops.chunk_table), uploaded with one copy, and ``kernels/lz4_inflate.cu``
inflates one chunk per thread. The outputs are views into one buffer. The statuses
come back to the host so that malformed data raises, naming the sample and chunk.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from chute.gpu.batches import gpu_batch
from chute.gpu.runtime import require_gpu
from chute.ops.decoders.inflate_ops import chunk_shape, chunk_table

__all__ = ["chunk_plan", "inflate"]

_KERNEL = Path(__file__).resolve().parents[2] / "kernels" / "lz4_inflate.cu"
_THREADS = 128
_OP = "fn.decoders.inflate"


@functools.cache
def _function(device: int) -> Any:
    cupy = require_gpu(_OP)
    with cupy.cuda.Device(device):
        return cupy.RawModule(code=_KERNEL.read_text(), options=("-std=c++14",)).get_function(
            "lz4_inflate"
        )


def chunk_plan(
    sizes: list[int], shapes: list[tuple[int, ...]], tables: list[Any], itemsize: int
) -> tuple[np.ndarray, np.ndarray, list[tuple[int, ...]], int]:
    """Per chunk (sample, offset in it, length, output offset, capacity) and per sample the
    output shape and the total output bytes; plain NumPy, testable without a GPU."""
    rows = []
    out_shapes = []
    out_offsets = []
    total = 0
    for i, (nbytes, shape, table) in enumerate(zip(sizes, shapes, tables)):
        capacity = int(np.prod(shape, dtype=np.int64)) * itemsize
        offsets, lengths = table if table is not None else ([0], [nbytes])
        out_shapes.append(shape if table is None else (len(offsets), *shape))
        out_offsets.append(total)
        for k, (o, n) in enumerate(zip(offsets, lengths)):
            rows.append((i, o, n, total + k * capacity, capacity))
        total += capacity * len(offsets)
    plan = np.asarray(rows, np.int64).reshape(-1, 5)
    return plan, np.asarray(out_offsets, np.int64), out_shapes, total


def inflate(inputs: list, args: Any, ctx: Any) -> Any:
    """fn.decoders.inflate on the GPU: one thread per chunk, one launch per batch."""
    cp = require_gpu(_OP, device_id=ctx.device_id)
    (batch,) = inputs
    with cp.cuda.Device(ctx.device_id), ctx.stream:  # host samples (a CPU source) go up
        samples = [cp.asarray(s) for s in (batch.samples() if hasattr(batch, "samples") else batch)]
    n = len(samples)
    dtype = np.dtype(args["dtype"])
    sizes, shapes, tables = [], [], []
    for i in range(n):
        x = samples[i]
        if x.ndim != 1 or x.dtype != np.uint8:
            raise TypeError(
                f"{_OP}: sample {i}: expected a 1-D uint8 sample, got {x.ndim}-D {x.dtype}"
            )
        sample_args = args.sample(i)
        offsets = sample_args.raw("chunk_offsets") if sample_args.given("chunk_offsets") else None
        lengths = sample_args.raw("chunk_sizes") if sample_args.given("chunk_sizes") else None
        sizes.append(int(x.size))
        shapes.append(chunk_shape(sample_args.raw("shape")))
        tables.append(chunk_table(int(x.size), offsets, lengths))
    plan, out_offsets, out_shapes, total = chunk_plan(sizes, shapes, tables, dtype.itemsize)
    with cp.cuda.Device(ctx.device_id), ctx.stream:
        buf = cp.empty(max(total, 1), np.uint8)
        chunks = len(plan)
        if chunks:
            base = np.asarray([int(s.data.ptr) for s in samples], np.uint64)
            in_ptr = base[plan[:, 0]] + plan[:, 1].astype(np.uint64)
            out_ptr = np.uint64(buf.data.ptr) + plan[:, 3].astype(np.uint64)
            table = np.concatenate([in_ptr, plan[:, 2].astype(np.uint64), out_ptr]).view(np.int64)
            dev = cp.asarray(np.concatenate([table, plan[:, 4]]))
            status = cp.zeros(chunks, np.int32)
            kernel = _function(ctx.device_id or 0)
            grid = (-(-chunks // _THREADS),)
            kernel(
                grid,
                (_THREADS,),
                (
                    dev[:chunks],
                    dev[chunks : 2 * chunks],
                    dev[2 * chunks : 3 * chunks],
                    dev[3 * chunks :],
                    status,
                    np.int32(chunks),
                ),
            )
            _raise_on_error(cp.asnumpy(status, stream=ctx.stream), plan, ctx)
        outputs = []
        for i, shape in enumerate(out_shapes):
            nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
            start = int(out_offsets[i])
            outputs.append(buf[start : start + nbytes].view(dtype).reshape(shape))
    layout = ctx.node.op.infer(ctx.node, [_input_spec()])[0].layout or ""
    return gpu_batch(outputs, layout, ctx)


def _input_spec() -> Any:
    from chute.graph.spec import Spec

    return Spec(np.dtype(np.uint8), 1, None)


def _raise_on_error(status: np.ndarray, plan: np.ndarray, ctx: Any) -> None:
    ctx.stream.synchronize()
    bad = np.flatnonzero(status)
    if not len(bad):
        return
    k = int(bad[0])
    sample = int(plan[k, 0])
    first = int(np.flatnonzero(plan[:, 0] == sample)[0])
    why = "is malformed LZ4 data" if status[k] == 1 else "inflates to more bytes than fit"
    raise ValueError(
        f"{_OP}: sample {sample}, chunk {k - first} {why} (capacity {int(plan[k, 4])} bytes, "
        "from 'shape' and 'dtype')"
    )
