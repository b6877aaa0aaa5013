"""GPU backends of fn.equalize, fn.grid_mask and fn.jpeg_compression_distortion.

* equalize: three launches per batch: per-(image, channel) 256-bin histograms (shared-memory
  atomics), one table per (image, channel) by OpenCV's rule, then the lookup.
* grid_mask: one launch over every image, its parameters in a table.
* jpeg_compression_distortion: a host round trip (the batch goes to the CPU, through
  OpenCV's JPEG encoder and decoder, and back): there is no JPEG encoder on the GPU here.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from chute.gpu.batches import gpu_batch
from chute.gpu.geometry_kernels import batch_outputs, launch, output_offsets
from chute.gpu.runtime import require_gpu
from chute.ops.image.distortion_kernels import jpeg_distort
from chute.ops.image.frames_gpu import SAMPLE_DTYPE, FrameImages, host_samples, sample_table

__all__ = ["equalize_batch", "grid_mask_batch", "jpeg_distortion_batch", "lut_batch"]

_KINDS = {
    np.dtype(np.uint8): 0,
    np.dtype(np.int8): 1,
    np.dtype(np.uint16): 2,
    np.dtype(np.int16): 3,
    np.dtype(np.int32): 4,
    np.dtype(np.float32): 5,
}

_SOURCE = r"""
#if KIND == 0
typedef unsigned char T;
#elif KIND == 1
typedef signed char T;
#elif KIND == 2
typedef unsigned short T;
#elif KIND == 3
typedef short T;
#elif KIND == 4
typedef int T;
#else
typedef float T;
#endif

struct FSample {
    unsigned long long in_ptr;
    long long in_row;
    long long out_off;
    long long k_off;
    int h, w, out_h, out_w, kh, kw, ay, ax;
    float fill;
};

// grid (x tiles, y tiles, images); params: tile, ratio, cos, sin, shift_x, shift_y per image
extern "C" __global__ void grid_mask(const FSample *table, const float *params, T *out, int C) {
    const FSample s = table[blockIdx.z];
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= s.w || y >= s.h) return;
    const float *p = params + 6 * blockIdx.z;
    float u = ((float)x * p[2] + (float)y * p[3] - p[4]) / p[0];
    float v = (-(float)x * p[3] + (float)y * p[2] - p[5]) / p[0];
    bool zero = (u - floorf(u) < p[1]) && (v - floorf(v) < p[1]);
    const T *in = (const T *)s.in_ptr + (long long)y * s.in_row + (long long)x * C;
    T *o = out + s.out_off + ((long long)y * s.w + x) * C;
    for (int c = 0; c < C; c++) o[c] = zero ? (T)0 : in[c];
}

// grid (x tiles, y tiles, images); hist: (images, C, 256)
extern "C" __global__ void histogram(const FSample *table, unsigned int *hist, int C) {
    __shared__ unsigned int local[4 * 256];
    const FSample s = table[blockIdx.z];
    int t = threadIdx.y * blockDim.x + threadIdx.x;
    int nt = blockDim.x * blockDim.y;
    for (int i = t; i < C * 256 && i < 4 * 256; i += nt) local[i] = 0;
    __syncthreads();
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    unsigned int *mine = hist + (long long)blockIdx.z * C * 256;
    if (x < s.w && y < s.h) {
        const unsigned char *in = (const unsigned char *)s.in_ptr + (long long)y * s.in_row
                                  + (long long)x * C;
        for (int c = 0; c < C; c++) {
            if (C <= 4) atomicAdd(&local[c * 256 + in[c]], 1u);
            else atomicAdd(&mine[c * 256 + in[c]], 1u);
        }
    }
    __syncthreads();
    if (C <= 4)
        for (int i = t; i < C * 256; i += nt)
            if (local[i]) atomicAdd(&mine[i], local[i]);
}

// one thread per (image, channel): OpenCV's equalizeHist table
extern "C" __global__ void make_lut(const unsigned int *hist, unsigned char *lut, int count) {
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= count) return;
    const unsigned int *h = hist + 256LL * k;
    unsigned char *l = lut + 256LL * k;
    long long total = 0;
    for (int i = 0; i < 256; i++) total += h[i];
    int low = 0;
    while (low < 256 && h[low] == 0) low++;
    if (total == 0 || (long long)h[low] == total) {
        for (int i = 0; i < 256; i++) l[i] = (unsigned char)i;
        return;
    }
    // float arithmetic and round-half-even, as OpenCV's equalizeHist
    float scale = 255.f / (float)(total - h[low]);
    int sum = 0;
    for (int i = 0; i <= low; i++) l[i] = 0;
    for (int i = low + 1; i < 256; i++) {
        sum += h[i];
        float v = rintf((float)sum * scale);
        l[i] = (unsigned char)fminf(fmaxf(v, 0.f), 255.f);
    }
}

extern "C" __global__ void apply_lut(const FSample *table, const unsigned char *lut,
                                     unsigned char *out, int C) {
    const FSample s = table[blockIdx.z];
    int x = blockIdx.x * blockDim.x + threadIdx.x;
    int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= s.w || y >= s.h) return;
    const unsigned char *in = (const unsigned char *)s.in_ptr + (long long)y * s.in_row
                              + (long long)x * C;
    const unsigned char *l = lut + (long long)blockIdx.z * C * 256;
    unsigned char *o = out + s.out_off + ((long long)y * s.w + x) * C;
    for (int c = 0; c < C; c++) o[c] = l[c * 256 + in[c]];
}
"""


@functools.cache
def _function(name: str, kind: int, device: int) -> Any:
    cupy = require_gpu("chute's GPU distortion kernels")
    with cupy.cuda.Device(device):
        module = cupy.RawModule(code=_SOURCE, options=("-std=c++14", f"-DKIND={kind}"))
        return module.get_function(name)


def _table(images: FrameImages) -> tuple[np.ndarray, np.ndarray, int]:
    offsets, total = output_offsets(images.hw, images.channels)
    zeros = np.zeros((len(images.hw), 2), np.int64)
    table = sample_table(images.ptrs, images.rows, images.hw, images.hw, offsets, zeros, zeros)
    assert table.dtype == SAMPLE_DTYPE
    return table, offsets, total


def _result(images: FrameImages, out: Any, offsets: np.ndarray, layout: str, ctx: Any) -> Any:
    c = images.channels
    if images.frames is None:
        return gpu_batch(batch_outputs(out, images.hw, offsets, c, images.squeeze), layout, ctx)
    result, row = [], 0
    for f in images.frames:
        h, w = (int(v) for v in images.hw[row]) if f else (0, 0)
        start = int(offsets[row]) if f else 0
        shape = (f, h, w) if images.squeeze else (f, h, w, c)
        result.append(out[start : start + f * h * w * c].reshape(shape))
        row += f
    return gpu_batch(result, layout, ctx)


def _layout(batch: Any, ctx: Any) -> str:
    """The output layout: the input's (build-time, else the batch's), as the CPU ``infer``."""
    return ctx.state or (batch.layout() if callable(getattr(batch, "layout", None)) else "") or ""


def equalize_batch(inputs: list, args: Any, ctx: Any, op: str) -> Any:
    """Histogram equalization of a uint8 batch: histogram, table, lookup (three launches)."""
    cupy = require_gpu(op)
    images = FrameImages(inputs[0], op, ctx.state)
    if images.dtype != np.uint8:
        raise TypeError(f"{op}: takes uint8 images, got {images.dtype}")
    table, offsets, total = _table(images)
    n, c = len(table), images.channels
    with ctx.stream:
        out = cupy.empty(total, np.uint8)
        if n:
            device = cupy.cuda.Device().id
            table_dev = cupy.asarray(table.view(np.uint8))
            hist = cupy.zeros(n * c * 256, np.uint32)
            lut = cupy.empty(n * c * 256, np.uint8)
            launch(_function("histogram", 0, device), n, images.hw, (table_dev, hist, np.int32(c)))
            count = n * c
            _function("make_lut", 0, device)(
                (-(-count // 128),), (128,), (hist, lut, np.int32(count))
            )
            launch(
                _function("apply_lut", 0, device), n, images.hw, (table_dev, lut, out, np.int32(c))
            )
    return _result(images, out, offsets, _layout(inputs[0], ctx), ctx)


def grid_mask_batch(inputs: list, args: Any, ctx: Any) -> Any:
    """fn.grid_mask on the GPU: one launch over every image of the batch."""
    op = "fn.grid_mask"
    cupy = require_gpu(op)
    images = FrameImages(inputs[0], op, ctx.state)
    kind = _KINDS.get(images.dtype)
    if kind is None:
        raise TypeError(f"{op}: on the GPU the type must be one of {sorted(map(str, _KINDS))}")
    params = []
    for tile, ratio, angle, sx, sy in zip(
        args.column("tile"),
        args.column("ratio"),
        args.column("angle"),
        args.column("shift_x"),
        args.column("shift_y"),
    ):
        if int(tile) < 1:
            raise ValueError(f"{op}: argument 'tile' must be at least 1, got {tile}")
        if not 0.0 <= float(ratio) <= 1.0:
            raise ValueError(f"{op}: argument 'ratio' must be in [0, 1], got {ratio}")
        params.append([int(tile), ratio, np.cos(angle), np.sin(angle), sx, sy])
    params_img = np.asarray(images.per_image(params), np.float32).reshape(-1, 6)
    table, offsets, total = _table(images)
    n, c = len(table), images.channels
    with ctx.stream:
        out = cupy.empty(total, images.dtype)
        if n:
            kernel = _function("grid_mask", kind, cupy.cuda.Device().id)
            table_dev = cupy.asarray(table.view(np.uint8))
            launch(kernel, n, images.hw, (table_dev, cupy.asarray(params_img), out, np.int32(c)))
    return _result(images, out, offsets, _layout(inputs[0], ctx), ctx)


def jpeg_distortion_batch(inputs: list, args: Any, ctx: Any) -> Any:
    """fn.jpeg_compression_distortion on the GPU: a host round trip through OpenCV."""
    cupy = require_gpu("fn.jpeg_compression_distortion")
    batch = inputs[0]
    host = host_samples(batch)
    out = []
    for i, quality in enumerate(args.column("quality")):
        sample = host[i]
        if sample.ndim == 4:
            out.append(np.stack([jpeg_distort(f, quality) for f in sample]))
        else:
            out.append(jpeg_distort(sample, quality))
    with ctx.stream:
        device = [cupy.asarray(s) for s in out]
    return gpu_batch(device, _layout(batch, ctx), ctx)


def lut_batch(
    inputs: list,
    ctx: Any,
    op: str,
    make_luts: Callable[[np.ndarray | None, FrameImages], np.ndarray],
    histograms: bool,
) -> Any:
    """A uint8 batch through per-(image, channel) tables that the host builds.

    ``make_luts(hist, images)`` gets the ``(n, C, 256)`` histograms of the batch's ``n``
    images (frames of sequences count one each; counted on the device in one launch, copied
    back) when ``histograms``, else None, and the images (``images.per_image`` spreads
    per-sample values over frames); it returns the ``(n, C, 256)`` uint8 tables. One more
    launch looks every pixel up.
    """
    cupy = require_gpu(op)
    images = FrameImages(inputs[0], op, ctx.state)
    if images.dtype != np.uint8:
        raise TypeError(f"{op}: takes uint8 images, got {images.dtype}")
    table, offsets, total = _table(images)
    n, c = len(table), images.channels
    with ctx.stream:
        out = cupy.empty(total, np.uint8)
        if n:
            device = cupy.cuda.Device().id
            table_dev = cupy.asarray(table.view(np.uint8))
            hist = None
            if histograms:
                counts = cupy.zeros(n * c * 256, np.uint32)
                launch(
                    _function("histogram", 0, device),
                    n,
                    images.hw,
                    (table_dev, counts, np.int32(c)),
                )
                hist = cupy.asnumpy(counts).reshape(n, c, 256)
            luts = np.ascontiguousarray(make_luts(hist, images), dtype=np.uint8)
            if luts.shape != (n, c, 256):
                raise ValueError(f"{op}: tables of shape {luts.shape}, expected {(n, c, 256)}")
            lut = cupy.asarray(luts.reshape(-1))
            launch(
                _function("apply_lut", 0, device), n, images.hw, (table_dev, lut, out, np.int32(c))
            )
    return _result(images, out, offsets, _layout(inputs[0], ctx), ctx)
