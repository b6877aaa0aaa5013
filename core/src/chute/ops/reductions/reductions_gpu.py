"""GPU backend of fn.reductions.*: one CuPy reduction per dense batch, one per sample else.

A dense batch is reduced as one (N, ...) array over the sample axes shifted by one (the
batch axis is never reduced); std_dev / variance stack the per-sample means in front.
Ragged batches reduce each sample with the same function as the CPU (``reduce``).
"""

from __future__ import annotations

from typing import Any

from chute.gpu.batches import batch_storage, gpu_batch
from chute.gpu.runtime import require_gpu
from chute.ops.reductions.reduction_ops import reduce

__all__ = ["reduce_batch"]


def reduce_batch(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """Run reduction ``op`` over a GPU batch (and the batch of means for std_dev/variance)."""
    cp = require_gpu(op.schema.display_name, device_id=ctx.device_id)
    batch = inputs[0]
    storage = batch if isinstance(batch, (list, tuple)) else batch_storage(batch)
    means = inputs[1] if len(inputs) > 1 else None
    keep = args["keep_dims"]
    kind = op.kind_name
    with ctx.stream:
        if means is not None:  # a GPU batch, or host samples (a constant mean is a CPU node)
            means = [cp.asarray(m) for m in _samples(means)]
        if isinstance(storage, cp.ndarray) and len(batch):
            ndim = storage.ndim - 1
            axes = op._axes(args["axes"], ndim)
            layout = _layout(batch, axes, keep)
            dtype = op.out_dtype(args, storage.dtype)
            mean = None
            if means is not None:
                mean = _stacked_means(cp, means, storage.shape, axes)
            if kind in ("min", "max") and not axes:
                out = storage.copy()
            else:
                out = reduce(cp, kind, storage, tuple(a + 1 for a in axes), keep, dtype, args, mean)
            return gpu_batch(out, layout, ctx)
        out = []
        layout = ""
        for i, x in enumerate(_samples(batch)):
            axes = op._axes(args["axes"], x.ndim)
            dtype = op.out_dtype(args, x.dtype)
            mean = means[i] if means is not None else None
            out.append(reduce(cp, kind, cp.asarray(x), axes, keep, dtype, args, mean))
            layout = _layout(batch, axes, keep)
    return gpu_batch(out, layout, ctx)


def _samples(batch: Any) -> list:
    """The samples of a batch: a TensorList's, or the list itself (host or CuPy samples)."""
    return list(batch) if isinstance(batch, (list, tuple)) else batch.samples()


def _stacked_means(cp: Any, means: list, shape: tuple, axes: tuple[int, ...]) -> Any:
    """The batch of means (CuPy samples) as (N, ...) broadcasting against the (N, ...) data."""
    n = shape[0]
    kept = tuple(1 if i in axes else s for i, s in enumerate(shape[1:]))
    dropped = tuple(s for i, s in enumerate(shape[1:]) if i not in axes)
    samples = means[:n]
    sizes = {int(m.size) for m in samples}
    if sizes == {1}:
        return cp.stack([m.reshape(()) for m in samples]).reshape((n,) + (1,) * len(kept))
    out = []
    for m in samples:
        if tuple(m.shape) == dropped:
            m = m.reshape(kept)
        elif tuple(m.shape) != kept:
            raise ValueError(
                f"input 'mean' of shape {tuple(m.shape)} does not match the reduced shape "
                f"{dropped} (or {kept} with kept dims) of samples of shape {tuple(shape[1:])}"
            )
        out.append(m)
    return cp.stack(out)


def _layout(batch: Any, axes: tuple[int, ...], keep: bool) -> str:
    """The output layout, as Reduction.infer gives it: the input's without the reduced axes."""
    layout = "" if isinstance(batch, (list, tuple)) else batch.layout()
    if keep or not layout:
        return layout
    return "".join(c for i, c in enumerate(layout) if i not in axes)
