"""GPU backends of fn.bb_flip and fn.box_encoder: whole-batch CuPy array work, no sample loop.

A ragged batch of boxes is concatenated into one ``(total, 4)`` array (one copy) with a
per-row sample index, so per-sample arguments become per-row columns:

- bb_flip: one elementwise pass over all rows; the result comes back as views of one buffer.
- box_encoder: boxes padded to ``(N, K, 4)``; IoUs with the anchors as one ``(N, K, M)``
  array; the matching of :func:`chute.ops.detection.bbox_kernels.encode_boxes` (last
  maximum wins ties, each box's best anchor forced to IoU 2) as batched reductions;
  outputs ``(N, M, 4)`` and ``(N, M)`` dense.

Arithmetic is float32 as on the CPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.gpu.batches import batch_storage, gpu_batch
from chute.gpu.runtime import require_gpu

__all__ = ["bb_flip", "box_encoder"]


def _column(args: Any, name: str, n: int) -> np.ndarray:
    if args.is_per_sample(name):
        return np.asarray(args.column(name))
    return np.full(n, args[name])


def _rows(cp: Any, batch: Any) -> tuple[Any, np.ndarray]:
    """All boxes of a batch as one (total, 4) float32 array, and the rows per sample."""
    storage = batch_storage(batch)
    if isinstance(storage, cp.ndarray):
        n = storage.shape[0]
        rows = storage.reshape(n, -1, 4) if n else storage.reshape(0, 0, 4)
        counts = np.full(n, rows.shape[1], np.int64)
        return rows.reshape(-1, 4).astype(cp.float32, copy=False), counts
    counts = np.asarray([s.size // 4 for s in storage], np.int64)
    if not len(storage):
        return cp.zeros((0, 4), cp.float32), counts
    flat = cp.concatenate([s.reshape(-1).astype(cp.float32, copy=False) for s in storage])
    return flat.reshape(-1, 4), counts


def _split(cp: Any, rows: Any, counts: np.ndarray, shapes: list[tuple[int, ...]]) -> list:
    bounds = np.cumsum(counts)[:-1].tolist()
    return [part.reshape(shape) for part, shape in zip(cp.split(rows, bounds), shapes)]


def bb_flip(inputs: list, args: Any, ctx: Any) -> Any:
    """fn.bb_flip on the GPU: one elementwise pass over every box of the batch."""
    cp = require_gpu("fn.bb_flip", device_id=ctx.device_id)
    (batch,) = inputs
    n = len(batch)
    dense = batch_storage(batch)
    with ctx.stream:
        rows, counts = _rows(cp, batch)
        sample_of_row = np.repeat(np.arange(n), counts)
        flags = np.stack(
            [_column(args, "horizontal", n) != 0, _column(args, "vertical", n) != 0], axis=1
        )
        flip = cp.asarray(flags[sample_of_row].astype(np.float32))  # (total, 2): 1 = flip
        lo, hi = rows[:, :2], rows[:, 2:]
        keep = 1.0 - flip
        if args["ltrb"]:
            new_lo = keep * lo + flip * (1.0 - hi)
            new_hi = keep * hi + flip * (1.0 - lo)
            out = cp.concatenate([new_lo, new_hi], axis=1)
        else:
            new_lo = keep * lo + flip * (1.0 - lo - hi)
            out = cp.concatenate([new_lo, hi], axis=1)
        if isinstance(dense, cp.ndarray):
            result: Any = out.reshape(dense.shape)
        else:
            result = _split(cp, out, counts, [tuple(s) for s in batch.shape()])
    return gpu_batch(result, batch.layout(), ctx)


def _last_argmax(cp: Any, values: Any, axis: int) -> Any:
    return values.shape[axis] - 1 - cp.argmax(cp.flip(values, axis=axis), axis=axis)


def box_encoder(inputs: list, args: Any, ctx: Any) -> tuple[Any, Any]:
    """fn.box_encoder on the GPU: padded IoU tensor and batched matching for the whole batch."""
    cp = require_gpu("fn.box_encoder", device_id=ctx.device_id)
    boxes_batch, labels_batch = inputs
    n = len(boxes_batch)
    anchors_host = np.asarray(args["anchors"], np.float32).reshape(-1, 4)
    m = anchors_host.shape[0]
    offset = bool(args["offset"])
    with ctx.stream:
        rows, counts = _rows(cp, boxes_batch)
        label_rows, label_counts = _label_rows(cp, labels_batch)
        if not np.array_equal(counts, label_counts):
            bad = int(np.nonzero(counts != label_counts)[0][0])
            raise ValueError(
                f"sample {bad}: got {counts[bad]} boxes but {label_counts[bad]} labels"
            )
        k = max(int(counts.max()) if n else 0, 1)
        sample_of_row = np.repeat(np.arange(n), counts)
        slot_of_row = np.arange(len(sample_of_row)) - np.repeat(np.cumsum(counts) - counts, counts)
        flat_index = cp.asarray(sample_of_row * k + slot_of_row)
        padded = cp.zeros((n * k, 4), cp.float32)
        padded[flat_index] = rows
        padded = padded.reshape(n, k, 4)
        valid = cp.zeros(n * k, bool)
        valid[flat_index] = True
        valid = valid.reshape(n, k)
        label_dtype = label_rows.dtype
        padded_labels = cp.zeros(n * k, label_dtype)
        padded_labels[flat_index] = label_rows
        padded_labels = padded_labels.reshape(n, k)

        anchors = cp.asarray(anchors_host)
        a_lo, a_hi = anchors[:, :2], anchors[:, 2:]
        b_lo, b_hi = padded[..., None, :2], padded[..., None, 2:]  # (n, k, 1, 2)
        inter = cp.prod(cp.maximum(cp.minimum(b_hi, a_hi) - cp.maximum(b_lo, a_lo), 0), axis=-1)
        b_vol = cp.prod(cp.maximum(padded[..., 2:] - padded[..., :2], 0), axis=-1)[..., None]
        a_vol = cp.prod(cp.maximum(a_hi - a_lo, 0), axis=-1)
        union = b_vol + a_vol - inter
        ious = cp.where(union > 0, inter / cp.where(union > 0, union, 1), 0).astype(cp.float32)
        best_anchor = _last_argmax(cp, ious, axis=2)  # (n, k)
        ni, ki = cp.meshgrid(cp.arange(n), cp.arange(k), indexing="ij")
        ious[ni, ki, best_anchor] = 2.0
        ious = cp.where(valid[..., None], ious, cp.float32(-1.0))
        best_box = _last_argmax(cp, ious, axis=1)  # (n, m)
        best_iou = cp.take_along_axis(ious, best_box[:, None, :], axis=1)[:, 0, :]
        matched = best_iou > cp.float32(args["criteria"])

        box = cp.take_along_axis(padded, best_box[..., None], axis=1)  # (n, m, 4)
        b_extent = box[..., 2:] - box[..., :2]
        b_center = box[..., :2] + b_extent * cp.float32(0.5)
        a_extent = a_hi - a_lo
        a_center = a_lo + a_extent * cp.float32(0.5)
        if offset:
            encoded = _offsets(cp, b_center, b_extent, a_center, a_extent, args)
            fallback = cp.zeros_like(encoded)
        else:
            encoded = cp.concatenate([b_center, b_extent], axis=-1)
            fallback = cp.broadcast_to(cp.concatenate([a_center, a_extent], axis=-1), encoded.shape)
        out_boxes = cp.where(matched[..., None], encoded, fallback).astype(cp.float32)
        labels = cp.take_along_axis(padded_labels, best_box, axis=1)
        out_labels = cp.where(matched, labels, cp.zeros((), label_dtype)).astype(label_dtype)
        out_boxes = cp.ascontiguousarray(out_boxes.reshape(n, m, 4))
        out_labels = cp.ascontiguousarray(out_labels.reshape(n, m))
    return gpu_batch(out_boxes, "", ctx), gpu_batch(out_labels, "", ctx)


def _label_rows(cp: Any, batch: Any) -> tuple[Any, np.ndarray]:
    storage = batch_storage(batch)
    if isinstance(storage, cp.ndarray):
        n = storage.shape[0]
        per = storage.reshape(n, -1) if n else storage.reshape(0, 0)
        return per.reshape(-1), np.full(n, per.shape[1], np.int64)
    counts = np.asarray([s.size for s in storage], np.int64)
    if not len(storage):
        return cp.zeros(0, cp.int32), counts
    return cp.concatenate([s.reshape(-1) for s in storage]), counts


def _offsets(cp: Any, b_center: Any, b_extent: Any, a_center: Any, a_extent: Any, args: Any) -> Any:
    s = cp.float32(args["scale"])
    mean = cp.asarray(np.asarray(args["means"], np.float32))
    std = cp.asarray(np.asarray(args["stds"], np.float32))
    b_center, b_extent, a_center, a_extent = b_center * s, b_extent * s, a_center * s, a_extent * s
    xy = ((b_center - a_center) / a_extent - mean[:2]) / std[:2]
    wh = (cp.log(b_extent / a_extent) - mean[2:]) / std[2:]
    return cp.concatenate([xy, wh], axis=-1)
