"""GPU backends of fn.experimental.warp_perspective and fn.experimental.remap: one launch.

Every image of the batch (each frame of a sequence) has a row of a table: its input,
its output place and size, its 3x3 matrix or its maps, interpolation, border and fill
values. The kernel computes each output pixel's sample point (the matrix in double, or
the maps) and samples as OpenCV 5 does on the CPU: exact positions, nearest neighbour
rounding halves to even, bilinear and Keys cubic (a = -0.75) taps extended by the
border one by one. Results equal the CPU backends' up to float rounding (and, for
nearest neighbour, the rare tie that the CPU's float32 division resolves the other way).

The tables (``perspective_table``, ``remap_table``) are plain NumPy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from chute.gpu.batches import gpu_batch, raw_samples
from chute.gpu.geometry_kernels import batch_outputs, launch, output_offsets
from chute.gpu.runtime import require_gpu
from chute.gpu.typed_kernels import function, kind
from chute.ops.geometry import remap_kernels
from chute.ops.geometry._border import BORDER_MODES, fill_tuple
from chute.ops.geometry.remap_ops import check_fill, maps_per_frame, resolve_matrix
from chute.ops.image.frames_gpu import FrameImages, host_samples

__all__ = [
    "SAMPLE_DTYPE",
    "frames_batch",
    "perspective_table",
    "remap",
    "remap_table",
    "warp_perspective",
]

_BORDERS = {name: code for code, name in enumerate(sorted(BORDER_MODES))}
_INTERPS = {"nn": 0, "linear": 1, "cubic": 2}

# Mirrors struct RSample below.
SAMPLE_DTYPE = np.dtype(
    {
        "names": [
            "in_ptr",
            "mx_ptr",
            "my_ptr",
            "in_row",
            "out_off",
            "map_row",
            "in_h",
            "in_w",
            "out_h",
            "out_w",
            "interp",
            "border",
            "shift",
            "fill_off",
            "m",
        ],
        "formats": [np.uint64] * 3
        + [np.int64] * 3
        + [np.int32] * 6
        + [np.float32, np.int32, (np.float64, 9)],
        "offsets": [0, 8, 16, 24, 32, 40, 48, 52, 56, 60, 64, 68, 72, 76, 80],
        "itemsize": 152,
    }
)

_SOURCE = r"""
struct RSample {
    unsigned long long in_ptr, mx_ptr, my_ptr;
    long long in_row, out_off, map_row;
    int in_h, in_w, out_h, out_w, interp, border;
    float shift;
    int fill_off;
    double m[9];
};

// border codes: sorted names (constant, reflect, reflect_101, replicate, wrap)
__device__ __forceinline__ int border_index(int i, int n, int border) {
    if ((unsigned)i < (unsigned)n) return i;
    if (border == 0) return -1;
    if (border == 3) return i < 0 ? 0 : n - 1;
    if (border == 4) { int r = i % n; return r < 0 ? r + n : r; }
    if (border == 1) {
        int period = 2 * n; int r = i % period; if (r < 0) r += period;
        return r < n ? r : period - 1 - r;
    }
    if (n == 1) return 0;
    int period = 2 * n - 2; int r = i % period; if (r < 0) r += period;
    return r < n ? r : period - r;
}

// acc[k] += w * input(y, x, c0 + k) for the channels c0 .. c0 + 3 below C
__device__ __forceinline__ void add_tap(const RSample &s, const float *fill, int C, int c0,
                                        int y, int x, float w, float *acc) {
    const int by = border_index(y, s.in_h, s.border);
    const int bx = border_index(x, s.in_w, s.border);
    if (by < 0 || bx < 0) {
        for (int k = 0; k < 4 && c0 + k < C; k++) acc[k] += w * fill[c0 + k];
        return;
    }
    const in_t *p = (const in_t *)s.in_ptr + (long long)by * s.in_row + (long long)bx * C + c0;
    for (int k = 0; k < 4 && c0 + k < C; k++) acc[k] += w * (float)p[k];
}

// Keys' cubic convolution weights, a = -0.75 (OpenCV's INTER_CUBIC), taps at -1..2
__device__ __forceinline__ void cubic_weights(float t, float *k) {
    const float a = -0.75f;
    const float u = t + 1.f, v = 1.f - t;
    k[0] = ((a * u - 5.f * a) * u + 8.f * a) * u - 4.f * a;
    k[1] = ((a + 2.f) * t - (a + 3.f)) * t * t + 1.f;
    k[2] = ((a + 2.f) * v - (a + 3.f)) * v * v + 1.f;
    k[3] = 1.f - k[0] - k[1] - k[2];
}

__device__ __forceinline__ double clamp_coord(double v) {
    return fmin(fmax(v, -1.0e9), 1.0e9);  // far points land outside; NaN too
}

// grid (x tiles, y tiles, images); mode 0: perspective matrix, 1: maps
extern "C" __global__ void sample_batch(const RSample *table, const float *fills,
                                        out_t *out, int C, int mode) {
    const RSample &s = table[blockIdx.z];
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= s.out_w || y >= s.out_h) return;
    double sx, sy;
    if (mode == 0) {
        const double X = s.m[0] * x + s.m[1] * y + s.m[2];
        const double Y = s.m[3] * x + s.m[4] * y + s.m[5];
        double W = s.m[6] * x + s.m[7] * y + s.m[8];
        W = W != 0.0 ? 1.0 / W : 0.0;
        sx = X * W;
        sy = Y * W;
    } else {
        const long long at = (long long)y * s.map_row + x;
        sx = (double)(((const float *)s.mx_ptr)[at] + s.shift);
        sy = (double)(((const float *)s.my_ptr)[at] + s.shift);
    }
    sx = clamp_coord(sx);
    sy = clamp_coord(sy);
    const float *fill = fills + s.fill_off;
    out_t *o = out + s.out_off + ((long long)y * s.out_w + x) * C;
    const double fx0 = floor(sx), fy0 = floor(sy);
    const int x0 = (int)fx0, y0 = (int)fy0;
    const float tx = (float)(sx - fx0), ty = (float)(sy - fy0);
    float kx[4], ky[4];
    if (s.interp == 2) {
        cubic_weights(tx, kx);
        cubic_weights(ty, ky);
    }
    for (int c0 = 0; c0 < C; c0 += 4) {
        float acc[4] = {0.f, 0.f, 0.f, 0.f};
        if (s.interp == 0) {
            add_tap(s, fill, C, c0, (int)rint(sy), (int)rint(sx), 1.f, acc);
        } else if (s.interp == 1) {
            float r0[4] = {0.f, 0.f, 0.f, 0.f}, r1[4] = {0.f, 0.f, 0.f, 0.f};
            add_tap(s, fill, C, c0, y0, x0, 1.f - tx, r0);
            add_tap(s, fill, C, c0, y0, x0 + 1, tx, r0);
            add_tap(s, fill, C, c0, y0 + 1, x0, 1.f - tx, r1);
            add_tap(s, fill, C, c0, y0 + 1, x0 + 1, tx, r1);
            for (int k = 0; k < 4; k++) acc[k] = (1.f - ty) * r0[k] + ty * r1[k];
        } else {
            for (int j = 0; j < 4; j++) {
                float row[4] = {0.f, 0.f, 0.f, 0.f};
                for (int i = 0; i < 4; i++) add_tap(s, fill, C, c0, y0 - 1 + j, x0 - 1 + i, kx[i], row);
                for (int k = 0; k < 4; k++) acc[k] += ky[j] * row[k];
            }
        }
        for (int k = 0; k < 4 && c0 + k < C; k++) o[c0 + k] = to_out((double)acc[k]);
    }
}
"""


def _table(images: FrameImages, out_hw: np.ndarray, interp: Sequence[str], border: Sequence[str]):
    n = len(images.hw)
    table = np.zeros(n, SAMPLE_DTYPE)
    table["in_ptr"], table["in_row"] = images.ptrs, images.rows
    table["in_h"], table["in_w"] = images.hw[:, 0], images.hw[:, 1]
    table["out_h"], table["out_w"] = out_hw[:, 0], out_hw[:, 1]
    table["interp"] = [_INTERPS[i] for i in interp]
    table["border"] = [_BORDERS[b] for b in border]
    table["fill_off"] = np.arange(n, dtype=np.int32) * images.channels
    return table


def perspective_table(
    images: FrameImages, matrices: np.ndarray, out_hw: np.ndarray, interp: str, border: str
) -> np.ndarray:
    """The table of a perspective warp: ``matrices`` (n images, 3, 3) map output to input
    points in OpenCV's coordinates; ``out_hw`` (n, 2). Empty inputs read the fill."""
    n = len(images.hw)
    empty = (images.hw == 0).any(axis=1)
    borders = ["constant" if e else border for e in empty]
    table = _table(images, out_hw, [interp] * n, borders)
    table["m"] = np.asarray(matrices, np.float64).reshape(n, 9)
    return table


def remap_table(
    images: FrameImages,
    mx_ptrs: np.ndarray,
    my_ptrs: np.ndarray,
    map_hw: np.ndarray,
    interp: str,
    shift: float,
) -> np.ndarray:
    """The table of a remap: one pair of float32 (H, W) maps per image, read with ``shift``
    added (-0.5 for corner-origin maps); the output has the maps' size, outside reads 0."""
    n = len(images.hw)
    table = _table(images, map_hw, [interp] * n, ["constant"] * n)
    table["mx_ptr"], table["my_ptr"] = mx_ptrs, my_ptrs
    table["map_row"] = map_hw[:, 1]
    table["shift"] = shift
    return table


def _launch(
    images: FrameImages, table: np.ndarray, fills: np.ndarray, mode: int, ctx: Any, op: str
):
    cupy = require_gpu(op)
    c = images.channels
    out_hw = np.stack([table["out_h"], table["out_w"]], 1).astype(np.int64)
    offsets, total = output_offsets(out_hw, c)
    table["out_off"] = offsets
    k = kind(images.dtype, op, remap_kernels.DTYPES)
    fills = np.asarray(fills, np.float64)
    if images.dtype.kind in "iu":  # OpenCV converts the border value to the image type first
        info = np.iinfo(images.dtype)
        fills = np.clip(np.rint(fills), info.min, info.max)
    with ctx.stream:
        out = cupy.empty(total, images.dtype)
        if len(table):
            kernel = function(_SOURCE, "sample_batch", k, k, cupy.cuda.Device().id)
            table_dev = cupy.asarray(table.view(np.uint8))
            fills_dev = cupy.asarray(np.asarray(fills, np.float32).reshape(-1))
            launch(
                kernel, len(table), out_hw, (table_dev, fills_dev, out, np.int32(c), np.int32(mode))
            )
    return out, out_hw, offsets


def frames_batch(
    images: FrameImages,
    out: Any,
    out_hw: np.ndarray,
    offsets: np.ndarray,
    channels: int,
    layout: str,
    ctx: Any,
    squeeze: bool | None = None,
) -> Any:
    """The output buffer as a TensorListGPU: images as they came, sequences restacked.

    ``squeeze`` (default: as the input) drops the channel axis.
    """
    squeeze = images.squeeze if squeeze is None else squeeze
    if images.frames is None:
        data = batch_outputs(out, out_hw, offsets, channels, squeeze)
        return gpu_batch(data, layout, ctx)
    result, row = [], 0
    for f in images.frames:
        h, w = (int(v) for v in out_hw[row]) if f else (0, 0)
        start = int(offsets[row]) if f else 0
        shape = (f, h, w) if squeeze else (f, h, w, channels)
        result.append(out[start : start + f * h * w * channels].reshape(shape))
        row += f
    return gpu_batch(result, layout, ctx)


def _layout(batch: Any, ctx: Any) -> str:
    return ctx.state or (batch.layout() if callable(getattr(batch, "layout", None)) else "") or ""


def warp_perspective(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.experimental.warp_perspective on the GPU: per-sample matrices and sizes, one launch."""
    name = op.schema.display_name
    layout = _layout(inputs[0], ctx)
    images = FrameImages(inputs[0], name, layout)
    remap_kernels.check_dtype(name, images.dtype)
    c = images.channels
    fill, border = args["fill_value"], args["border_mode"]
    check_fill(name, fill, c)
    interp = remap_kernels.interp_kind(name, args["interp_type"], "interp_type")
    origin, inverse = args["pixel_origin"], args["inverse_map"]
    matrix_in = host_samples(inputs[1]) if len(inputs) > 1 else None
    matrices = []
    for i in range(len(images.sample_frames)):
        own = (None, matrix_in[i]) if matrix_in is not None else (None,)
        m = resolve_matrix(name, own, args.sample(i), i)
        matrices.append(remap_kernels.opencv_perspective(m, origin, inverse))
    sizes = images.per_image(args.column("size"))
    out_hw = np.array(
        [remap_kernels.perspective_size(s, tuple(hw)) for s, hw in zip(sizes, images.hw.tolist())],
        np.int64,
    ).reshape(-1, 2)
    per_image = np.asarray(images.per_image(matrices), np.float64).reshape(-1, 3, 3)
    table = perspective_table(images, per_image, out_hw, interp, border)
    fills = np.tile(np.asarray(fill_tuple(fill, c), np.float32), (len(table), 1))
    if border != "constant":
        fills[(images.hw == 0).any(axis=1)] = 0.0  # an empty input warps to zeros (the CPU's)
    out, out_hw, offsets = _launch(images, table, fills, 0, ctx, name)
    return frames_batch(images, out, out_hw, offsets, c, layout, ctx)


def remap(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.experimental.remap on the GPU: every image's maps in one table, one launch."""
    cupy = require_gpu(op.schema.display_name)
    name = op.schema.display_name
    layout = _layout(inputs[0], ctx)
    images = FrameImages(inputs[0], name, layout)
    remap_kernels.check_dtype(name, images.dtype)
    interp = remap_kernels.interp_kind(name, args["interp"], "interp")
    seq = images.frames is not None
    mx_ptrs, my_ptrs, map_hw, keep = [], [], [], []
    with ctx.stream:
        pairs = zip(raw_samples(inputs[1]), raw_samples(inputs[2]))
        for i, (mx, my) in enumerate(pairs):
            mx, my = cupy.asarray(mx), cupy.asarray(my)
            for what, m in (("mapx", mx), ("mapy", my)):
                if m.dtype.kind != "f":
                    raise TypeError(
                        f"{name}: input '{what}' of sample {i} must be float, got {m.dtype}"
                    )
            frames = images.sample_frames[i]
            per_frame = maps_per_frame(name, mx.shape, my.shape, frames if seq else None)
            mx = cupy.ascontiguousarray(mx.astype(np.float32, copy=False))
            my = cupy.ascontiguousarray(my.astype(np.float32, copy=False))
            keep += [mx, my]
            for f in range(frames):
                fx, fy = (mx[f], my[f]) if per_frame else (mx, my)
                mx_ptrs.append(fx.data.ptr)
                my_ptrs.append(fy.data.ptr)
                map_hw.append(fx.shape[:2])
    hw = np.asarray(map_hw, np.int64).reshape(-1, 2)
    shift = -0.5 if args["pixel_origin"] == "corner" else 0.0
    ptrs_x, ptrs_y = np.asarray(mx_ptrs, np.uint64), np.asarray(my_ptrs, np.uint64)
    table = remap_table(images, ptrs_x, ptrs_y, hw, interp, shift)
    fills = np.zeros((max(len(table), 1), images.channels), np.float32)
    out, out_hw, offsets = _launch(images, table, fills, 1, ctx, name)
    # ``keep`` held the float32 maps past the launch (CuPy's pool reuses in stream order)
    return frames_batch(images, out, out_hw, offsets, images.channels, layout, ctx)
