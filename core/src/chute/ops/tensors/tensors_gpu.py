"""GPU backends of the tensor operators (ops/tensors): views per sample, copies per batch.

Shape-only operators (squeeze, expand_dims, reinterpret, per_frame) change no data: their
samples are CuPy views, made per sample with no kernel launch. Operators that move data
(constant, element_extract, sequence_rearrange, permute_batch, cast_like) take one CuPy call
over a dense batch and one per sample on ragged ones.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from chute.gpu.batches import batch_storage, gpu_batch
from chute.gpu.runtime import require_gpu

__all__ = [
    "cast_like",
    "constant",
    "element_extract",
    "per_sample",
    "permute_batch",
    "sequence_rearrange",
]


def _samples(batch: Any) -> list:
    """The samples of a batch: a TensorList's, or the list itself (a GPU source's, a host one's)."""
    return list(batch) if isinstance(batch, (list, tuple)) else batch.samples()


def _spec(batch: Any) -> Any:
    """What ``infer`` knows of a batch at run time: dtype, rank and layout (lists have none)."""
    from chute.graph.spec import Spec

    if isinstance(batch, (list, tuple)):
        first = batch[0] if len(batch) else None
        return Spec(
            None if first is None else np.dtype(first.dtype),
            None if first is None else first.ndim,
            None,
        )
    return Spec(batch.dtype, len(batch.shape()[0]) if len(batch) else None, batch.layout() or None)


def _layout(batch: Any) -> str:
    return "" if isinstance(batch, (list, tuple)) else batch.layout()


def out_layout(ctx: Any, inputs: list, k: int = 0) -> str:
    """Output ``k``'s layout as the node's ``infer`` gives it for these input batches."""
    return ctx.node.op.infer(ctx.node, [_spec(b) for b in inputs])[k].layout or ""


def per_sample(inputs: list, args: Any, ctx: Any, func: Callable[[Any, Any], Any]) -> Any:
    """``func(sample, sample_args)`` for each sample of input 0, on the operator's stream."""
    cp = require_gpu(ctx.node.schema.display_name, device_id=ctx.device_id)
    (batch,) = inputs
    with ctx.stream:
        out = [func(cp.asarray(x), args.sample(i)) for i, x in enumerate(_samples(batch))]
    return gpu_batch(out, out_layout(ctx, inputs), ctx)


def constant(op: Any, args: Any, ctx: Any) -> Any:
    """fn.constant on the GPU: one upload of the batch (every sample is the same tensor)."""
    cp = require_gpu("fn.constant", device_id=ctx.device_id)
    value = op.value(args.sample(0))
    n = args.n
    with ctx.stream:
        dense = cp.empty((n, *value.shape), value.dtype)
        dense.set(np.ascontiguousarray(np.broadcast_to(value, dense.shape)), stream=ctx.stream)
    return gpu_batch(dense, out_layout(ctx, []), ctx)


def cast_like(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.cast_like on the GPU: fn.cast's backend with the second input's type."""
    from chute.ops import tensor_gpu

    like = inputs[1]  # a GPU batch, or host samples
    dtype = like.dtype if not isinstance(like, (list, tuple)) else _spec(like).dtype
    return tensor_gpu.cast(op, inputs[:1], {"dtype": dtype}, ctx)


def element_extract(inputs: list, args: Any, ctx: Any) -> Any:
    """fn.element_extract on the GPU: one copy per output for a dense batch."""
    from chute.ops.tensors.sequence_ops import frame_indices

    cp = require_gpu("fn.element_extract", device_id=ctx.device_id)
    (batch,) = inputs
    storage = _samples(batch) if isinstance(batch, (list, tuple)) else batch_storage(batch)
    element_map = args["element_map"]
    outs = []
    layout = out_layout(ctx, inputs)
    with ctx.stream:
        for k in element_map:
            if isinstance(storage, cp.ndarray):
                frame_indices("fn.element_extract", "element_map", [k], storage.shape[1])
                outs.append(gpu_batch(storage[:, k].copy(), layout, ctx))
            else:
                samples = []
                for x in storage:
                    frame_indices("fn.element_extract", "element_map", [k], x.shape[0])
                    samples.append(cp.asarray(x)[k].copy())
                outs.append(gpu_batch(samples, layout, ctx))
    return outs[0] if len(outs) == 1 else tuple(outs)


def sequence_rearrange(inputs: list, args: Any, ctx: Any) -> Any:
    """fn.sequence_rearrange on the GPU: one gather for a dense batch with a constant order."""
    from chute.ops.tensors.sequence_ops import rearrange_order

    cp = require_gpu("fn.sequence_rearrange", device_id=ctx.device_id)
    (batch,) = inputs
    storage = _samples(batch) if isinstance(batch, (list, tuple)) else batch_storage(batch)
    with ctx.stream:
        if isinstance(storage, cp.ndarray) and not args.is_per_sample("new_order"):
            order = rearrange_order(args["new_order"], storage.shape[1])
            return gpu_batch(storage[:, cp.asarray(order)], _layout(batch), ctx)
        orders = args.column("new_order")
        out = [
            cp.asarray(x)[cp.asarray(rearrange_order(orders[i], x.shape[0]))]
            for i, x in enumerate(_samples(batch))
        ]
    return gpu_batch(out, _layout(batch), ctx)


def permute_batch(inputs: list, indices: list[int], ctx: Any) -> Any:
    """fn.permute_batch on the GPU: one gather for a dense batch, else the samples reordered."""
    cp = require_gpu("fn.permute_batch", device_id=ctx.device_id)
    (batch,) = inputs
    storage = _samples(batch) if isinstance(batch, (list, tuple)) else batch_storage(batch)
    with ctx.stream:
        if isinstance(storage, cp.ndarray):
            out: Any = storage[cp.asarray(np.asarray(indices, np.int64))]
        else:
            out = [cp.asarray(storage[i]) for i in indices]
    return gpu_batch(out, _layout(batch), ctx)
