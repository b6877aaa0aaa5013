"""GPU backend of fn.clahe: OpenCV's CLAHE on every plane of the batch, two launches
(three more around them for RGB luminance).

A plane is one channel of one image (grayscale images, RGB per channel) or the Lab L
of an RGB image (``luma_only``). ``clahe_luts`` gives each (plane, tile) a block of 256
threads: the tile's histogram (shared-memory atomics, the image extended reflect_101
as OpenCV extends it), then one thread clips, redistributes and sums it into the
tile's table. ``clahe_apply`` blends the four nearest tables per pixel in float32
without fused multiply-adds (OpenCV's arithmetic), so the results equal the CPU's.
The Lab conversions are OpenCV's own, through two 2^24-entry tables (RGB -> Lab and
Lab -> RGB, 48 MiB each) made once per device by cv2.cvtColor on the host.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from chute.gpu.geometry_kernels import launch, output_offsets
from chute.gpu.runtime import require_gpu
from chute.ops.geometry.remap_gpu import frames_batch
from chute.ops.image.clahe_kernels import BINS, clahe_tiles
from chute.ops.image.clahe_ops import OP, check_clahe_args
from chute.ops.image.frames_gpu import FrameImages

__all__ = [
    "LAB_DTYPE",
    "PLANE_DTYPE",
    "clahe",
    "lab_table_arrays",
    "lab_tables",
    "plane_table",
]

# Mirrors struct CPlane below.
PLANE_DTYPE = np.dtype(
    {
        "names": [
            "in_ptr",
            "out_ptr",
            "in_row",
            "out_row",
            "in_pix",
            "out_pix",
            "h",
            "w",
            "tw",
            "th",
            "clip",
            "lut_scale",
            "inv_tw",
            "inv_th",
            "tiles_x",
            "tiles_y",
        ],
        "formats": [np.uint64, np.uint64, np.int64, np.int64]
        + [np.int32] * 7
        + [np.float32] * 3
        + [np.int32] * 2,
        "offsets": [0, 8, 16, 24, 32, 36, 40, 44, 48, 52, 56, 60, 64, 68, 72, 76],
        "itemsize": 80,
    }
)
# Mirrors struct LImage below.
LAB_DTYPE = np.dtype(
    {
        "names": ["in_ptr", "in_row", "l_off", "out_off", "h", "w"],
        "formats": [np.uint64, np.int64, np.int64, np.int64, np.int32, np.int32],
        "offsets": [0, 8, 16, 24, 32, 36],
        "itemsize": 40,
    }
)

_SOURCE = r"""
struct CPlane {
    unsigned long long in_ptr, out_ptr;
    long long in_row, out_row;
    int in_pix, out_pix, h, w, tw, th, clip;
    float lut_scale, inv_tw, inv_th;
    int tiles_x, tiles_y;
};
struct LImage { unsigned long long in_ptr; long long in_row, l_off, out_off; int h, w; };

__device__ __forceinline__ int reflect101(int i, int n) {
    if (n == 1) return 0;
    const int period = 2 * n - 2;
    int r = i % period;
    if (r < 0) r += period;
    return r < n ? r : period - r;
}

// grid (tiles, planes), 256 threads: one tile's clipped, equalized lookup table
extern "C" __global__ void clahe_luts(const CPlane *planes, unsigned char *luts) {
    __shared__ unsigned int hist[256];
    const CPlane p = planes[blockIdx.y];
    const int t = threadIdx.x;
    hist[t] = 0;
    __syncthreads();
    const int tx = blockIdx.x % p.tiles_x, ty = blockIdx.x / p.tiles_x;
    const int area = p.tw * p.th;
    const unsigned char *in = (const unsigned char *)p.in_ptr;
    for (int k = t; k < area; k += blockDim.x) {
        const int sy = reflect101(ty * p.th + k / p.tw, p.h);
        const int sx = reflect101(tx * p.tw + k % p.tw, p.w);
        atomicAdd(&hist[in[(long long)sy * p.in_row + (long long)sx * p.in_pix]], 1u);
    }
    __syncthreads();
    if (t != 0) return;
    if (p.clip > 0) {
        int clipped = 0;
        for (int i = 0; i < 256; i++) {
            if ((int)hist[i] > p.clip) {
                clipped += hist[i] - p.clip;
                hist[i] = p.clip;
            }
        }
        const int batch = clipped / 256;
        int residual = clipped - batch * 256;
        for (int i = 0; i < 256; i++) hist[i] += batch;
        if (residual != 0) {
            const int step = max(256 / residual, 1);
            for (int i = 0; i < 256 && residual > 0; i += step, residual--) hist[i]++;
        }
    }
    unsigned char *lut = luts + ((long long)blockIdx.y * gridDim.x + blockIdx.x) * 256;
    int sum = 0;
    for (int i = 0; i < 256; i++) {
        sum += hist[i];
        const int v = __float2int_rn(__fmul_rn((float)sum, p.lut_scale));
        lut[i] = (unsigned char)min(max(v, 0), 255);
    }
}

// grid (x tiles, y tiles, planes): the four nearest tiles' tables blended (no FMA: OpenCV's)
extern "C" __global__ void clahe_apply(const CPlane *planes, const unsigned char *luts) {
    const CPlane p = planes[blockIdx.z];
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= p.w || y >= p.h) return;
    const float txf = __fsub_rn(__fmul_rn((float)x, p.inv_tw), 0.5f);
    int tx1 = (int)floorf(txf);
    const float xa = __fsub_rn(txf, (float)tx1), xa1 = __fsub_rn(1.f, xa);
    const int tx2 = min(tx1 + 1, p.tiles_x - 1);
    tx1 = max(tx1, 0);
    const float tyf = __fsub_rn(__fmul_rn((float)y, p.inv_th), 0.5f);
    int ty1 = (int)floorf(tyf);
    const float ya = __fsub_rn(tyf, (float)ty1), ya1 = __fsub_rn(1.f, ya);
    const int ty2 = min(ty1 + 1, p.tiles_y - 1);
    ty1 = max(ty1, 0);
    const int v = ((const unsigned char *)p.in_ptr)[(long long)y * p.in_row + (long long)x * p.in_pix];
    const unsigned char *lut = luts + (long long)blockIdx.z * p.tiles_x * p.tiles_y * 256;
    const float l11 = lut[(ty1 * p.tiles_x + tx1) * 256 + v];
    const float l12 = lut[(ty1 * p.tiles_x + tx2) * 256 + v];
    const float l21 = lut[(ty2 * p.tiles_x + tx1) * 256 + v];
    const float l22 = lut[(ty2 * p.tiles_x + tx2) * 256 + v];
    const float top = __fadd_rn(__fmul_rn(l11, xa1), __fmul_rn(l12, xa));
    const float bottom = __fadd_rn(__fmul_rn(l21, xa1), __fmul_rn(l22, xa));
    const float res = __fadd_rn(__fmul_rn(top, ya1), __fmul_rn(bottom, ya));
    ((unsigned char *)p.out_ptr)[(long long)y * p.out_row + (long long)x * p.out_pix] =
        (unsigned char)min(max(__float2int_rn(res), 0), 255);
}

// grid (x tiles, y tiles, images): Lab L of RGB pixels (OpenCV's, through its table)
extern "C" __global__ void lab_split(const LImage *images, const unsigned char *to_lab,
                                     unsigned char *l_plane) {
    const LImage s = images[blockIdx.z];
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= s.w || y >= s.h) return;
    const unsigned char *p = (const unsigned char *)s.in_ptr + (long long)y * s.in_row + x * 3;
    const long long rgb = ((long long)p[0] << 16) | ((long long)p[1] << 8) | p[2];
    l_plane[s.l_off + (long long)y * s.w + x] = to_lab[rgb * 3];
}

// grid (x tiles, y tiles, images): RGB of the equalized L with the input's a and b
extern "C" __global__ void lab_merge(const LImage *images, const unsigned char *to_lab,
                                     const unsigned char *to_rgb, const unsigned char *l_plane,
                                     unsigned char *out) {
    const LImage s = images[blockIdx.z];
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= s.w || y >= s.h) return;
    const unsigned char *p = (const unsigned char *)s.in_ptr + (long long)y * s.in_row + x * 3;
    const long long rgb = ((long long)p[0] << 16) | ((long long)p[1] << 8) | p[2];
    const long long lab = ((long long)l_plane[s.l_off + (long long)y * s.w + x] << 16)
                          | ((long long)to_lab[rgb * 3 + 1] << 8) | to_lab[rgb * 3 + 2];
    unsigned char *o = out + s.out_off + ((long long)y * s.w + x) * 3;
    o[0] = to_rgb[lab * 3];
    o[1] = to_rgb[lab * 3 + 1];
    o[2] = to_rgb[lab * 3 + 2];
}
"""


@functools.cache
def _function(name: str, device: int) -> Any:
    cupy = require_gpu(OP)
    with cupy.cuda.Device(device):
        return cupy.RawModule(code=_SOURCE, options=("-std=c++14",)).get_function(name)


def _all_triples() -> np.ndarray:
    """Every byte triple (c0, c1, c2), c0 the slowest, as a (4096, 4096, 3) image."""
    ramp = np.arange(256, dtype=np.uint8)
    triples = np.empty((256, 256, 256, 3), np.uint8)
    triples[..., 0] = ramp[:, None, None]
    triples[..., 1] = ramp[None, :, None]
    triples[..., 2] = ramp[None, None, :]
    return triples.reshape(4096, 4096, 3)


@functools.cache
def lab_table_arrays() -> tuple[np.ndarray, np.ndarray]:
    """(RGB -> Lab, Lab -> RGB) on the host: OpenCV's 8-bit conversions of every byte
    triple, entry ``(c0 << 16) | (c1 << 8) | c2`` at bytes ``3 * entry`` .. ``+ 2``."""
    import cv2

    triples = _all_triples()
    to_lab = cv2.cvtColor(triples, cv2.COLOR_RGB2LAB).reshape(-1)
    to_rgb = cv2.cvtColor(triples, cv2.COLOR_LAB2RGB).reshape(-1)
    return to_lab, to_rgb


@functools.cache
def lab_tables(device: int) -> tuple[Any, Any]:
    """lab_table_arrays on ``device`` (48 MiB each, made and uploaded once)."""
    cupy = require_gpu(OP)
    to_lab, to_rgb = lab_table_arrays()
    with cupy.cuda.Device(device):
        return cupy.asarray(to_lab), cupy.asarray(to_rgb)


def plane_table(
    in_ptrs: list[int],
    out_ptrs: list[int],
    rows: list[tuple[int, int, int, int]],
    hw: np.ndarray,
    tiles_x: int,
    tiles_y: int,
    clip_limit: float,
) -> np.ndarray:
    """The CPlane rows: ``rows[i]`` = (in row, out row, in pixel, out pixel) strides in
    bytes of plane i; the tile arithmetic is clahe_kernels.clahe_tiles's."""
    n = len(in_ptrs)
    table = np.zeros(n, PLANE_DTYPE)
    for i in range(n):
        h, w = (int(v) for v in hw[i])
        t = clahe_tiles(h, w, tiles_x, tiles_y, clip_limit)
        table[i] = (
            in_ptrs[i],
            out_ptrs[i],
            *rows[i],
            h,
            w,
            t.tile_w,
            t.tile_h,
            t.clip,
            t.lut_scale,
            t.inv_tile_w,
            t.inv_tile_h,
            tiles_x,
            tiles_y,
        )
    return table


def clahe(inputs: list, args: Any, ctx: Any) -> Any:
    """fn.clahe on the GPU: per-tile tables and the blend, for every plane of the batch."""
    cupy = require_gpu(OP)
    # uint8 images use 256 bins whatever ``bins`` says, as DALI's CPU backend does
    check_clahe_args({k: args[k] for k in ("tiles_x", "tiles_y", "bins")})
    batch = inputs[0]
    layout = batch.layout() if callable(getattr(batch, "layout", None)) else ""
    images = FrameImages(batch, OP, layout or None)
    if images.frames is not None:
        raise ValueError(f"{OP}: takes images (HWC or HW), not sequences")
    if images.dtype != np.uint8:
        raise TypeError(f"{OP}: takes uint8 images, got {images.dtype}")
    c = images.channels
    if c not in (1, 3):
        raise ValueError(f"{OP}: takes 1 or 3 channels, got {c}")
    tiles_x, tiles_y, clip = int(args["tiles_x"]), int(args["tiles_y"]), float(args["clip_limit"])
    hw = images.hw
    offsets, total = output_offsets(hw, c)
    keep = (hw > 0).all(axis=1)  # empty images have nothing to equalize
    luma = c == 3 and bool(args["luma_only"])
    with ctx.stream:
        out = cupy.empty(total, np.uint8)
        device = cupy.cuda.Device().id
        idx = np.flatnonzero(keep)
        if luma and len(idx):
            to_lab, to_rgb = lab_tables(device)
            l_offsets, l_total = output_offsets(hw, 1)
            l_in, l_out = (
                cupy.empty(max(l_total, 1), np.uint8),
                cupy.empty(max(l_total, 1), np.uint8),
            )
            lab = np.zeros(len(idx), LAB_DTYPE)
            lab["in_ptr"], lab["in_row"] = images.ptrs[idx], images.rows[idx]
            lab["l_off"], lab["out_off"] = l_offsets[idx], offsets[idx]
            lab["h"], lab["w"] = hw[idx, 0], hw[idx, 1]
            lab_dev = cupy.asarray(lab.view(np.uint8))
            launch(_function("lab_split", device), len(idx), hw[idx], (lab_dev, to_lab, l_in))
            planes = plane_table(
                [l_in.data.ptr + int(l_offsets[i]) for i in idx],
                [l_out.data.ptr + int(l_offsets[i]) for i in idx],
                [(int(hw[i, 1]), int(hw[i, 1]), 1, 1) for i in idx],
                hw[idx],
                tiles_x,
                tiles_y,
                clip,
            )
        else:
            planes = plane_table(
                [int(images.ptrs[i]) + ch for i in idx for ch in range(c)],
                [out.data.ptr + int(offsets[i]) + ch for i in idx for ch in range(c)],
                [(int(images.rows[i]), int(hw[i, 1]) * c, c, c) for i in idx for _ in range(c)],
                np.repeat(hw[idx], c, axis=0),
                tiles_x,
                tiles_y,
                clip,
            )
        if len(planes):
            planes_dev = cupy.asarray(planes.view(np.uint8))
            luts = cupy.empty(len(planes) * tiles_x * tiles_y * BINS, np.uint8)
            _function("clahe_luts", device)(
                (tiles_x * tiles_y, len(planes), 1), (BINS, 1, 1), (planes_dev, luts)
            )
            plane_hw = np.stack([planes["h"], planes["w"]], 1).astype(np.int64)
            launch(_function("clahe_apply", device), len(planes), plane_hw, (planes_dev, luts))
        if luma and len(idx):
            launch(
                _function("lab_merge", device),
                len(idx),
                hw[idx],
                (lab_dev, to_lab, to_rgb, l_out, out),
            )
    return frames_batch(images, out, hw, offsets, c, layout or "HWC", ctx)
