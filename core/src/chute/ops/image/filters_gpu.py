"""GPU backends of fn.filter, fn.laplacian, fn.experimental.median_blur / dilate / erode.

One CuPy RawKernel launch per batch: a grid of (x tiles, y tiles, images) reads a table of
per-image parameters (pointer, row stride, sizes, window, anchor, fill, offset of its
weights). FHWC sequences are flattened into one table row per frame. fn.laplacian runs as
fn.filter with the one 2-D kernel its separable windows add up to (the sum is linear), so
both share the correlation kernel; its results match the CPU's within float rounding.

The tables (``sample_table``) and the laplacian kernel are plain NumPy, testable anywhere.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from chute.gpu.batches import gpu_batch
from chute.gpu.geometry_kernels import batch_outputs, launch, output_offsets
from chute.gpu.runtime import require_gpu
from chute.ops.image.filters_kernels import (
    as_pair,
    laplacian_kernel,
    laplacian_windows,
)
from chute.ops.image.frames_gpu import FrameImages, batch_layout, host_samples, sample_table

__all__ = [
    "BORDER_CODES",
    "filter_batch",
    "laplacian_batch",
    "median_batch",
    "morphology_batch",
]

#: Border names -> codes of the kernels below (DALI's names and chute's aliases).
BORDER_CODES = {
    "constant": 0,
    "replicate": 1,
    "clamp": 1,
    "reflect": 2,
    "reflect_1001": 2,
    "reflect_101": 3,
    "wrap": 4,
}
_KINDS = {
    np.dtype(np.uint8): 0,
    np.dtype(np.int8): 1,
    np.dtype(np.uint16): 2,
    np.dtype(np.int16): 3,
    np.dtype(np.float32): 5,
}
_MAX_MEDIAN = 225  # window area the median kernel sorts in registers (15 x 15)

_SOURCE = r"""
#if IN_KIND == 0
typedef unsigned char in_t;
#elif IN_KIND == 1
typedef signed char in_t;
#elif IN_KIND == 2
typedef unsigned short in_t;
#elif IN_KIND == 3
typedef short in_t;
#else
typedef float in_t;
#endif

#if OUT_KIND == 0
typedef unsigned char out_t;
#define OUT_LO 0.f
#define OUT_HI 255.f
#elif OUT_KIND == 1
typedef signed char out_t;
#define OUT_LO -128.f
#define OUT_HI 127.f
#elif OUT_KIND == 2
typedef unsigned short out_t;
#define OUT_LO 0.f
#define OUT_HI 65535.f
#elif OUT_KIND == 3
typedef short out_t;
#define OUT_LO -32768.f
#define OUT_HI 32767.f
#endif

#if OUT_KIND == 5
typedef float out_t;
__device__ __forceinline__ out_t to_out(float v) { return v; }
#else
// rounds half away from zero and saturates, as chute's convert_saturate
__device__ __forceinline__ out_t to_out(float v) {
    v = roundf(v);
    v = fminf(fmaxf(v, OUT_LO), OUT_HI);
    return (out_t)v;
}
#endif

struct FSample {
    unsigned long long in_ptr;
    long long in_row;
    long long out_off;
    long long k_off;
    int h, w, out_h, out_w, kh, kw, ay, ax;
    float fill;
};

// index i mapped onto [0, n) by the border mode; -1 = outside with a constant border
__device__ __forceinline__ int border_index(int i, int n, int border) {
    if ((unsigned)i < (unsigned)n) return i;
    if (border == 0) return -1;
    if (border == 1) return i < 0 ? 0 : n - 1;
    if (border == 4) { int r = i % n; return r < 0 ? r + n : r; }
    if (border == 2) {
        int period = 2 * n; int r = i % period; if (r < 0) r += period;
        return r < n ? r : period - 1 - r;
    }
    if (n == 1) return 0;
    int period = 2 * n - 2; int r = i % period; if (r < 0) r += period;
    return r < n ? r : period - r;
}

extern "C" __global__ void filter_batch(const FSample *table, const float *weights,
                                        out_t *out, int C, int border) {
    const FSample s = table[blockIdx.z];
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= s.out_w || y >= s.out_h) return;
    const in_t *in = (const in_t *)s.in_ptr;
    const float *k = weights + s.k_off;
    out_t *o = out + s.out_off + ((long long)y * s.out_w + x) * C;
    for (int c = 0; c < C; c++) {
        float acc = 0.f;
        for (int i = 0; i < s.kh; i++) {
            int yy = border_index(y + i - s.ay, s.h, border);
            for (int j = 0; j < s.kw; j++) {
                float wgt = k[i * s.kw + j];
                int xx = border_index(x + j - s.ax, s.w, border);
                float v = (yy < 0 || xx < 0) ? s.fill
                          : (float)in[yy * s.in_row + (long long)xx * C + c];
                acc += wgt * v;
            }
        }
        o[c] = to_out(acc);
    }
}

extern "C" __global__ void morph_batch(const FSample *table, out_t *out, int C, int border,
                                       int dilate) {
    const FSample s = table[blockIdx.z];
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= s.out_w || y >= s.out_h) return;
    const in_t *in = (const in_t *)s.in_ptr;
    out_t *o = out + s.out_off + ((long long)y * s.out_w + x) * C;
    for (int c = 0; c < C; c++) {
        float best = dilate ? -3.4e38f : 3.4e38f;
        for (int i = 0; i < s.kh; i++) {
            int yy = border_index(y + i - s.ay, s.h, border);
            if (yy < 0) continue;  // constant border: outside pixels take no part
            for (int j = 0; j < s.kw; j++) {
                int xx = border_index(x + j - s.ax, s.w, border);
                if (xx < 0) continue;
                float v = (float)in[yy * s.in_row + (long long)xx * C + c];
                best = dilate ? fmaxf(best, v) : fminf(best, v);
            }
        }
        o[c] = to_out(best);
    }
}

extern "C" __global__ void median_batch(const FSample *table, out_t *out, int C) {
    const FSample s = table[blockIdx.z];
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= s.out_w || y >= s.out_h) return;
    const in_t *in = (const in_t *)s.in_ptr;
    out_t *o = out + s.out_off + ((long long)y * s.out_w + x) * C;
    float v[MAX_MEDIAN];
    const int count = s.kh * s.kw;
    for (int c = 0; c < C; c++) {
        int m = 0;
        for (int i = 0; i < s.kh; i++) {
            int yy = border_index(y + i - s.ay, s.h, 1);
            for (int j = 0; j < s.kw; j++) {
                int xx = border_index(x + j - s.ax, s.w, 1);
                v[m++] = (float)in[yy * s.in_row + (long long)xx * C + c];
            }
        }
        // partial selection sort up to the middle element
        const int mid = count / 2;
        for (int a = 0; a <= mid; a++) {
            int best = a;
            for (int b = a + 1; b < count; b++) if (v[b] < v[best]) best = b;
            float t = v[a]; v[a] = v[best]; v[best] = t;
        }
        o[c] = to_out(v[mid]);
    }
}
"""


@functools.cache
def _function(name: str, in_kind: int, out_kind: int, device: int) -> Any:
    cupy = require_gpu("chute's GPU filter kernels")
    options = (
        "-std=c++14",
        f"-DIN_KIND={in_kind}",
        f"-DOUT_KIND={out_kind}",
        f"-DMAX_MEDIAN={_MAX_MEDIAN}",
    )
    with cupy.cuda.Device(device):
        return cupy.RawModule(code=_SOURCE, options=options).get_function(name)


def _kind(dtype: Any, op: str) -> int:
    try:
        return _KINDS[np.dtype(dtype)]
    except KeyError:
        raise TypeError(
            f"{op}: on the GPU the type must be uint8, int8, uint16, int16 or float32, got "
            f"{np.dtype(dtype)}"
        ) from None


def _run(
    name: str,
    images: FrameImages,
    table: np.ndarray,
    out_hw: np.ndarray,
    out_dtype: Any,
    op: str,
    ctx: Any,
    extra: tuple = (),
    weights: np.ndarray | None = None,
    layout: str = "HWC",
) -> Any:
    cupy = require_gpu(op)
    c = images.channels
    offsets, total = output_offsets(out_hw, c)
    table["out_off"] = offsets
    dt = np.dtype(out_dtype)
    with ctx.stream:
        out = cupy.empty(total, dt)
        if len(table):
            kernel = _function(name, _kind(images.dtype, op), _kind(dt, op), cupy.cuda.Device().id)
            table_dev = cupy.asarray(table.view(np.uint8))
            args: tuple = (table_dev,)
            if weights is not None:
                args += (cupy.asarray(weights, np.float32),)
            launch(kernel, len(table), out_hw, (*args, out, np.int32(c), *extra))
    if images.frames is None:
        result = batch_outputs(out, out_hw, offsets, c, images.squeeze)
    else:
        result, row = [], 0
        for f in images.frames:
            h, w = (int(v) for v in out_hw[row]) if f else (0, 0)
            start = int(offsets[row]) if f else 0
            shape = (f, h, w) if images.squeeze else (f, h, w, c)
            result.append(out[start : start + f * h * w * c].reshape(shape))
            row += f
    return gpu_batch(result, layout, ctx)


def filter_batch(inputs: list, args: Any, ctx: Any) -> Any:
    """fn.filter on the GPU: one correlation launch over every image (frame) of the batch."""
    op = "fn.filter"
    images = FrameImages(inputs[0], op, ctx.state)
    filters = host_samples(inputs[1])
    n = len(filters)
    fills = [0.0] * n
    if len(inputs) > 2:
        fills = [float(np.asarray(v).ravel()[0]) for v in host_samples(inputs[2])]
    kernels: list[np.ndarray] = []
    for i, (k, f) in enumerate(zip(filters, images.sample_frames)):
        k = np.asarray(k, np.float32)
        if k.ndim == 3 and images.frames is not None and len(k) == f:
            kernels.extend(k)
        elif k.ndim == 2 and k.size:
            kernels.extend([k] * f)
        else:
            raise ValueError(f"{op}: sample {i}: the filter must be a 2-D array, got {k.shape}")
    mode, border = args["mode"], args["border"]
    anchors_in = images.per_image(list(args.column("anchor")))
    windows = np.asarray([k.shape for k in kernels], np.int64).reshape(-1, 2)
    anchors = np.zeros_like(windows)
    out_hw = images.hw.copy()
    for r, (kh, kw) in enumerate(windows.tolist()):
        if mode == "valid":
            out_hw[r] = images.hw[r] - (kh - 1, kw - 1)
            if np.any(out_hw[r] < 1):
                raise ValueError(f"{op}: mode='valid' needs a filter no larger than the image")
        else:
            ay, ax = as_pair(anchors_in[r], "anchor")
            anchors[r] = (kh // 2 if ay == -1 else ay, kw // 2 if ax == -1 else ax)
            if not (0 <= anchors[r, 0] < kh and 0 <= anchors[r, 1] < kw):
                raise ValueError(f"{op}: argument 'anchor' must be -1 or inside the filter")
    sizes = windows[:, 0] * windows[:, 1]
    k_offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    weights = np.concatenate([k.ravel() for k in kernels]) if kernels else np.zeros(1, np.float32)
    table = sample_table(
        images.ptrs,
        images.rows,
        images.hw,
        out_hw,
        np.zeros(len(out_hw), np.int64),
        windows,
        anchors,
        k_offsets,
        images.per_image(fills),
    )
    dtype = args["dtype"] or images.dtype
    code = 0 if mode == "valid" else BORDER_CODES[border]
    return _run(
        "filter_batch",
        images,
        table,
        out_hw,
        dtype,
        op,
        ctx,
        (np.int32(code),),
        weights,
        _layout(inputs[0], ctx),
    )


def laplacian_batch(inputs: list, args: Any, ctx: Any) -> Any:
    """fn.laplacian on the GPU: each sample's summed 2-D kernel, one correlation launch."""
    op = "fn.laplacian"
    images = FrameImages(inputs[0], op, ctx.state)
    cache: dict = {}
    kernels = []
    columns = zip(args.column("window_size"), args.column("smoothing_size"), args.column("scale"))
    for win, smooth, scale in columns:
        key = (
            tuple(np.ravel(win).tolist()),
            None if smooth is None else tuple(np.ravel(smooth).tolist()),
            tuple(np.ravel(scale).tolist()),
        )
        if key not in cache:
            parts = laplacian_windows(win, smooth, scale, args["normalized_kernel"])
            cache[key] = laplacian_kernel(parts).astype(np.float32)
        kernels.append(cache[key])
    kernels = images.per_image(kernels)
    windows = np.asarray([k.shape for k in kernels], np.int64).reshape(-1, 2)
    anchors = windows // 2
    sizes = windows[:, 0] * windows[:, 1]
    k_offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    weights = np.concatenate([k.ravel() for k in kernels]) if kernels else np.zeros(1, np.float32)
    table = sample_table(
        images.ptrs,
        images.rows,
        images.hw,
        images.hw,
        np.zeros(len(images.hw), np.int64),
        windows,
        anchors,
        k_offsets,
    )
    dtype = args["dtype"] or images.dtype
    return _run(
        "filter_batch",
        images,
        table,
        images.hw,
        dtype,
        op,
        ctx,
        (np.int32(BORDER_CODES["reflect_101"]),),
        weights,
        _layout(inputs[0], ctx),
    )


def median_batch(inputs: list, args: Any, ctx: Any) -> Any:
    """fn.experimental.median_blur on the GPU: one launch, replicated border."""
    op = "fn.experimental.median_blur"
    images = FrameImages(inputs[0], op, ctx.state)
    windows = []
    for w in images.per_image(list(args.column("window_size"))):
        ww, wh = as_pair(w, "window_size")
        if ww < 1 or wh < 1 or ww % 2 == 0 or wh % 2 == 0:
            raise ValueError(f"{op}: argument 'window_size' must be odd and positive, got {w}")
        if ww * wh > _MAX_MEDIAN:
            raise ValueError(f"{op}: on the GPU the window holds at most {_MAX_MEDIAN} pixels")
        windows.append((wh, ww))
    windows = np.asarray(windows, np.int64).reshape(-1, 2)
    table = sample_table(
        images.ptrs,
        images.rows,
        images.hw,
        images.hw,
        np.zeros(len(images.hw), np.int64),
        windows,
        windows // 2,
    )
    return _run(
        "median_batch",
        images,
        table,
        images.hw,
        images.dtype,
        op,
        ctx,
        layout=_layout(inputs[0], ctx),
    )


def morphology_batch(kind: str, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.experimental.dilate / erode on the GPU: one launch over the enlarged rectangles."""
    op = f"fn.experimental.{kind}"
    images = FrameImages(inputs[0], op, ctx.state)
    iterations = int(args["iterations"])
    windows, anchors = [], []
    for size, anchor in zip(
        images.per_image(list(args.column("mask_size"))),
        images.per_image(list(args.column("anchor"))),
    ):
        mw, mh = as_pair(size, "mask_size")
        ax, ay = as_pair(anchor, "anchor")
        ax, ay = (mw // 2 if ax == -1 else ax), (mh // 2 if ay == -1 else ay)
        if not (0 <= ax < mw and 0 <= ay < mh):
            raise ValueError(f"{op}: argument 'anchor' must be -1 or inside the mask")
        windows.append((iterations * (mh - 1) + 1, iterations * (mw - 1) + 1))
        anchors.append((iterations * ay, iterations * ax))
    windows = np.asarray(windows, np.int64).reshape(-1, 2)
    anchors = np.asarray(anchors, np.int64).reshape(-1, 2)
    table = sample_table(
        images.ptrs,
        images.rows,
        images.hw,
        images.hw,
        np.zeros(len(images.hw), np.int64),
        windows,
        anchors,
    )
    border = np.int32(BORDER_CODES[args["border_mode"]])
    return _run(
        "morph_batch",
        images,
        table,
        images.hw,
        images.dtype,
        op,
        ctx,
        (border, np.int32(kind == "dilate")),
        layout=_layout(inputs[0], ctx),
    )


def _layout(batch: Any, ctx: Any) -> str:
    """The output layout: the input's (build-time, else the batch's), as the CPU ``infer``."""
    return ctx.state or batch_layout(batch)
