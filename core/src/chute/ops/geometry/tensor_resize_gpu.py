"""GPU backend of fn.tensor_resize: one launch per resized axis, every sample in each.

The host makes the CPU backend's plans (tensor_resize_ops.sample_plan) and, for each
axis some sample resizes, one table row per sample: its input (the previous pass's
output), its shape seen as (outer, axis, inner), and its weights and first taps along
the axis (chute.ops.geometry._resample.axis_weights, what the CPU resamples with;
samples that keep the axis copy it with one unit tap). Passes accumulate in float32;
the last one converts to the output type (halves to even, saturated, as the CPU).
The tables (``pass_table``) are plain NumPy.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import numpy as np

from chute.gpu.batches import gpu_batch, raw_samples
from chute.gpu.runtime import require_gpu
from chute.gpu.typed_kernels import function, kind
from chute.ops.geometry import tensor_resize_kernels as trk
from chute.ops.geometry._resample import axis_weights
from chute.ops.geometry.tensor_resize_ops import _check_dtypes, sample_plan

__all__ = ["PASS_DTYPE", "pass_table", "tensor_resize"]

_BLOCK = 256
_MAX_BLOCKS = 65535

# Mirrors struct TPass below.
PASS_DTYPE = np.dtype(
    {
        "names": [
            "in_ptr",
            "out_off",
            "outer",
            "inner",
            "w_off",
            "f_off",
            "in_len",
            "out_len",
            "taps",
        ],
        "formats": [np.uint64] + [np.int64] * 5 + [np.int32] * 3,
        "offsets": [0, 8, 16, 24, 32, 40, 48, 52, 56],
        "itemsize": 64,
    }
)

_SOURCE = r"""
struct TPass {
    unsigned long long in_ptr;
    long long out_off, outer, inner, w_off, f_off;
    int in_len, out_len, taps, pad;
};

// grid (element blocks, samples): out[o, j, i] = sum_t w[j, t] * in[o, first[j] + t, i]
extern "C" __global__ void resample_axis(const TPass *table, const float *weights,
                                         const int *firsts, out_t *out) {
    const TPass s = table[blockIdx.y];
    const long long total = s.outer * (long long)s.out_len * s.inner;
    const long long step = (long long)gridDim.x * blockDim.x;
    for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += step) {
        const long long i = e % s.inner;
        const long long rest = e / s.inner;
        const int j = (int)(rest % s.out_len);
        const long long o = rest / s.out_len;
        const float *w = weights + s.w_off + (long long)j * s.taps;
        const int first = firsts[s.f_off + j];
        const in_t *in = (const in_t *)s.in_ptr + o * s.in_len * s.inner + i;
        float acc = 0.f;
        for (int t = 0; t < s.taps; t++) {
            const int k = first + t;
            if (k >= s.in_len) break;
            if (w[t] != 0.f) acc += w[t] * (float)in[(long long)k * s.inner];
        }
        out[s.out_off + e] = to_out((double)acc);
    }
}
"""


def pass_table(
    ptrs: list[int],
    shapes: list[tuple[int, ...]],
    out_lens: list[int],
    axis: int,
    weights: list[tuple[np.ndarray, np.ndarray]],
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]]:
    """(table, float32 weights, int32 first taps, element offsets) of one pass over ``axis``.

    ``weights[i]`` is sample i's (first (out,), weights (out, taps)); its input (``ptrs[i]``,
    ``shapes[i]``) becomes ``shapes[i]`` with ``out_lens[i]`` along the axis. The offsets
    place the samples back to back in the pass's output (the last entry is its size).
    """
    n = len(shapes)
    table = np.zeros(n, PASS_DTYPE)
    flat_w, flat_f, offsets = [], [], [0]
    w_at = f_at = 0
    for i, (shape, out_len, (first, w)) in enumerate(zip(shapes, out_lens, weights)):
        outer = math.prod(shape[:axis])
        inner = math.prod(shape[axis + 1 :])
        table[i] = (
            ptrs[i],
            offsets[-1],
            outer,
            inner,
            w_at,
            f_at,
            shape[axis],
            out_len,
            w.shape[1],
        )
        flat_w.append(np.asarray(w, np.float32).ravel())
        flat_f.append(np.asarray(first, np.int32).ravel())
        w_at += w.size
        f_at += first.size
        offsets.append(offsets[-1] + outer * out_len * inner)
    weights_all = np.concatenate(flat_w) if flat_w else np.zeros(0, np.float32)
    firsts_all = np.concatenate(flat_f) if flat_f else np.zeros(0, np.int32)
    # one spare entry each: never an empty upload
    weights_all = np.append(weights_all, 0).astype(np.float32)
    firsts_all = np.append(firsts_all, 0).astype(np.int32)
    return table, weights_all, firsts_all, offsets


def _identity(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.arange(n, dtype=np.int64), np.ones((n, 1), np.float64)


def tensor_resize(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.tensor_resize on the GPU: the CPU's plans, one launch per resized axis."""
    name = op.schema.display_name
    cupy = require_gpu(name)
    batch = inputs[0]
    with ctx.stream:
        samples = [cupy.ascontiguousarray(cupy.asarray(s)) for s in raw_samples(batch)]
    layout = ctx.state or (batch.layout() if callable(getattr(batch, "layout", None)) else "")
    in_dtype = samples[0].dtype if samples else np.dtype(np.float32)
    _check_dtypes(name, in_dtype, args["dtype"])
    out_dtype = np.dtype(args["dtype"]) if args["dtype"] is not None else np.dtype(in_dtype)
    plans = []
    for i, s in enumerate(samples):
        if s.dtype != in_dtype:
            raise TypeError(f"{name}: sample {i} is {s.dtype}, sample 0 {in_dtype}")
        plans.append(sample_plan(name, s.shape, args.sample(i), layout))
    axes = sorted({d for s, (p, _f) in zip(samples, plans) for d in trk.changed_axes(s.shape, p)})
    axes = axes or [0]  # at least one pass: it copies (and converts)
    shapes = [tuple(s.shape) for s in samples]
    ptrs = [s.data.ptr for s in samples]
    current_kind = kind(in_dtype, name, trk.DTYPES)
    buffers = list(samples)  # what the passes read, alive until the last launch is queued
    out = None
    offsets: list[int] = [0]
    for step, d in enumerate(axes):
        last = step == len(axes) - 1
        weights, out_lens = [], []
        for shape, (plan, filters) in zip(shapes, plans):
            n_in, n_out = shape[d], plan.out_shape[d]
            lo, hi = plan.roi[d]
            if n_in == 0 or n_out == 0 or d not in trk.changed_axes(shape, plan):
                weights.append(_identity(n_in if n_out else 0))
                out_lens.append(n_in if n_out else 0)
            else:
                weights.append(axis_weights(n_in, n_out, lo, hi, filters[d], args["antialias"]))
                out_lens.append(n_out)
        table, w, f, offsets = pass_table(ptrs, shapes, out_lens, d, weights)
        dt = out_dtype if last else np.dtype(np.float32)
        out_kind = kind(dt, name)
        with ctx.stream:
            out = cupy.empty(offsets[-1], dt)
            biggest = max((b - a for a, b in itertools.pairwise(offsets)), default=0)
            if len(table) and biggest:
                kernel = function(
                    _SOURCE, "resample_axis", current_kind, out_kind, cupy.cuda.Device().id
                )
                grid = (min(-(-biggest // _BLOCK), _MAX_BLOCKS), len(table), 1)
                kernel(
                    grid,
                    (_BLOCK, 1, 1),
                    (cupy.asarray(table.view(np.uint8)), cupy.asarray(w), cupy.asarray(f), out),
                )
        buffers.append(out)
        shapes = [(*s[:d], n, *s[d + 1 :]) for s, n in zip(shapes, out_lens)]
        ptrs = [out.data.ptr + a * dt.itemsize for a in offsets[:-1]]
        current_kind = out_kind
    result = (
        [out[a:b].reshape(s) for a, b, s in zip(offsets[:-1], offsets[1:], shapes)]
        if out is not None
        else []
    )
    return gpu_batch(result, layout or "", ctx)
