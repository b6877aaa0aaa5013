"""GPU backends of fn.coord_flip and fn.coord_transform: whole-batch CuPy work, no sample loop.

The samples of a batch (ragged point lists, e.g. the polygon vertices of readers.coco) are
flattened into one ``(rows, D)`` array with a per-row sample index; per-sample arguments
become small ``(n, ...)`` tables on the device that the rows gather from. Samples whose
point width differs (rare) are handled a group at a time. Arithmetic is float64 and the
result is cast as on the CPU (:mod:`chute.ops.geometry.transforms_kernels`); coord_flip
works in the output type, as the CPU does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from chute.gpu.batches import batch_storage, gpu_batch
from chute.gpu.runtime import require_gpu
from chute.ops.geometry.transforms_kernels import affine_parts

__all__ = ["coord_flip", "coord_transform"]


def _grouped(
    cp: Any,
    samples: list,
    widths: list[int],
    run: Callable[[Any, np.ndarray, Any, int], Any],
    dtype: Any = np.float64,
) -> list:
    """Outputs per sample: ``run(rows, members, row_sample, width)`` for each group of
    samples of one point width; ``rows`` is the group's ``(total, width)`` points as
    ``dtype``, ``row_sample`` (device) the index into ``members`` of each row."""
    out: list = [None] * len(samples)
    for width in sorted(set(widths)):
        members = np.asarray([i for i, w in enumerate(widths) if w == width])
        counts = np.asarray([samples[i].size // width for i in members], np.int64)
        flat = [samples[i].reshape(-1, width).astype(dtype) for i in members]
        rows = cp.concatenate(flat) if flat else cp.zeros((0, width), dtype)
        row_sample = cp.asarray(np.repeat(np.arange(len(members)), counts))
        result = run(rows, members, row_sample, width)
        bounds = np.cumsum(counts)[:-1].tolist()
        for i, part in zip(members, cp.split(result, bounds)):
            out[i] = part
    return out


def coord_flip(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.coord_flip on the GPU: ``v -> 2 * center - v`` on the flipped axes of every point."""
    cp = require_gpu("fn.coord_flip", device_id=ctx.device_id)
    (batch,) = inputs
    n = len(batch)
    shapes = [tuple(s) for s in batch.shape()]
    layouts = [op.layout_of(args["layout"], shape) for shape in shapes]
    flags = {a: np.asarray(args.column(f"flip_{a}")) != 0 for a in "xyz"}
    centers = {a: np.asarray(args.column(f"center_{a}"), np.float64) for a in "xyz"}
    with ctx.stream:
        samples = list(batch_storage(batch))  # a dense batch's samples are views
        dtype = samples[0].dtype if n and samples[0].dtype.kind == "f" else np.dtype(np.float32)

        def run(rows: Any, members: np.ndarray, row_sample: Any, width: int) -> Any:
            layout = layouts[members[0]]
            flip = np.stack([flags[a][members] for a in layout], 1)
            center = np.stack([centers[a][members] for a in layout], 1)
            flip_rows = cp.asarray(flip)[row_sample]
            # as on the CPU: 2 * center (double) rounded to the output type, minus the point
            doubled = cp.asarray((2.0 * center).astype(dtype))[row_sample]
            return cp.where(flip_rows, doubled - rows, rows)

        widths = [len(layout) for layout in layouts]
        parts = _grouped(cp, samples, widths, run, dtype)
        result = [part.reshape(shape) for part, shape in zip(parts, shapes)]
    return gpu_batch(result, batch.layout(), ctx)


def coord_transform(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.coord_transform on the GPU: each point times its sample's matrix, plus its shift."""
    cp = require_gpu("fn.coord_transform", device_id=ctx.device_id)
    (batch,) = inputs
    shapes = [tuple(s) for s in batch.shape()]
    for i, shape in enumerate(shapes):
        if len(shape) != 2:
            raise ValueError(f"sample {i}: coordinates must be (N, D), got shape {shape}")
    parts_of = [
        affine_parts(shape[1], *(args.sample(i).raw(k) for k in ("M", "T", "MT")))
        for i, shape in enumerate(shapes)
    ]
    dtype = args["dtype"]
    with ctx.stream:
        samples = list(batch_storage(batch))  # a dense batch's samples are views

        def run(rows: Any, members: np.ndarray, row_sample: Any, width: int) -> Any:
            out_dims = {parts_of[i][0].shape[0] for i in members}
            if len(out_dims) != 1:
                raise ValueError(
                    f"samples {members.tolist()} map {width}-D points to different numbers of "
                    f"dimensions {sorted(out_dims)}: give them matrices of one shape"
                )
            linear = cp.asarray(np.stack([parts_of[i][0] for i in members]))
            shift = cp.asarray(np.stack([parts_of[i][1] for i in members]))
            moved = cp.matmul(linear[row_sample], rows[:, :, None])[:, :, 0]
            return (moved + shift[row_sample]).astype(dtype)

        result = _grouped(cp, samples, [shape[1] for shape in shapes], run)  # (N, out_dim) each
    return gpu_batch(result, "", ctx)
