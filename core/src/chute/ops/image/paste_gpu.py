"""GPU backend of fn.multi_paste: every output image (each frame of a sequence) in one launch.

The host runs the CPU backend's plan (paste_ops.plan_batch, on the samples' shapes) and
writes two tables: one row per output image (its place in the output buffer, its size
and channels, its run of regions) and one per region (source pointer and row length,
anchors, shape). Each thread takes one output pixel and looks through its image's
regions from the last to the first: the first that covers the pixel gives its value
(later regions cover earlier ones), none gives 0. Values convert as on the CPU (halves
away from zero, saturated). The tables are plain NumPy (``paste_tables``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.gpu.batches import gpu_batch, raw_samples
from chute.gpu.geometry_kernels import launch
from chute.gpu.runtime import require_gpu
from chute.gpu.typed_kernels import function, kind
from chute.ops.image.paste_kernels import OP
from chute.ops.image.paste_ops import plan_batch

__all__ = ["IMAGE_DTYPE", "REGION_DTYPE", "multi_paste", "paste_tables"]

# Mirrors struct PImage below.
IMAGE_DTYPE = np.dtype(
    {
        "names": ["out_off", "out_h", "out_w", "c", "first", "count"],
        "formats": [np.int64] + [np.int32] * 5,
        "offsets": [0, 8, 12, 16, 20, 24],
        "itemsize": 32,
    }
)
# Mirrors struct PRegion below.
REGION_DTYPE = np.dtype(
    {
        "names": ["src_ptr", "src_row", "iy", "ix", "h", "w", "oy", "ox"],
        "formats": [np.uint64, np.int64] + [np.int32] * 6,
        "offsets": [0, 8, 16, 20, 24, 28, 32, 36],
        "itemsize": 40,
    }
)

_SOURCE = r"""
struct PImage { long long out_off; int out_h, out_w, c, first, count; };
struct PRegion { unsigned long long src_ptr; long long src_row; int iy, ix, h, w, oy, ox; };

// grid (x tiles, y tiles, output images)
extern "C" __global__ void paste_batch(const PImage *images, const PRegion *regions,
                                       out_t *out) {
    const PImage im = images[blockIdx.z];
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= im.out_w || y >= im.out_h) return;
    const int C = im.c;
    out_t *o = out + im.out_off + ((long long)y * im.out_w + x) * C;
    for (int r = im.first + im.count - 1; r >= im.first; r--) {
        const PRegion g = regions[r];
        if (y < g.oy || y >= g.oy + g.h || x < g.ox || x >= g.ox + g.w) continue;
        const in_t *p = (const in_t *)g.src_ptr + (long long)(y - g.oy + g.iy) * g.src_row
                        + (long long)(x - g.ox + g.ix) * C;
        for (int c = 0; c < C; c++) o[c] = to_out((double)p[c]);
        return;
    }
    for (int c = 0; c < C; c++) o[c] = (out_t)0;
}
"""


def paste_tables(
    plans: list, ptrs: list[list[int]], shapes: list[list[tuple]], itemsize: int
) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """(image table, region table, element offset of each output sample) of a batch's plans.

    ``ptrs[k][i]`` / ``shapes[k][i]``: the device address and shape of sample i of input
    k. A sequence's output gets one image per frame, each reading that frame of its sources.
    Output samples lie back to back in one buffer (the offsets' last entry is its size).
    """
    images, regions, starts = [], [], [0]
    for shape, _dtype, sample_regions in plans:
        frames = shape[0] if len(shape) == 4 else 1
        h, w, c = (int(v) for v in shape[-3:])
        for f in range(frames):
            images.append((starts[-1] + f * h * w * c, h, w, c, len(regions), len(sample_regions)))
            for r in sample_regions:
                k, j = r.source
                src = shapes[k][j]
                frame_bytes = src[-3] * src[-2] * src[-1] * itemsize if len(src) == 4 else 0
                regions.append(
                    (
                        ptrs[k][j] + f * frame_bytes,
                        src[-2] * src[-1],
                        *r.in_anchor,
                        *r.shape,
                        *r.out_anchor,
                    )
                )
        starts.append(starts[-1] + int(np.prod(shape)))
    image_table = np.zeros(len(images), IMAGE_DTYPE)
    for row, values in enumerate(images):
        image_table[row] = values
    region_table = np.zeros(max(len(regions), 1), REGION_DTYPE)  # never an empty upload
    for row, values in enumerate(regions):
        region_table[row] = values
    return image_table, region_table, starts


def multi_paste(inputs: list, args: Any, ctx: Any) -> Any:
    """fn.multi_paste on the GPU: the CPU's plan, one launch over every output image."""
    cupy = require_gpu(OP)
    with ctx.stream:
        samples = [
            [cupy.ascontiguousarray(cupy.asarray(s)) for s in raw_samples(batch)]
            for batch in inputs
        ]
    plans = plan_batch(samples, args)
    in_dtype = samples[0][0].dtype if samples[0] else np.dtype(np.uint8)
    out_dtype = plans[0][1] if plans else in_dtype
    ptrs = [[s.data.ptr for s in b] for b in samples]
    shapes = [[s.shape for s in b] for b in samples]
    images, regions, starts = paste_tables(plans, ptrs, shapes, np.dtype(in_dtype).itemsize)
    hw = np.stack([images["out_h"], images["out_w"]], 1).astype(np.int64)
    with ctx.stream:
        out = cupy.empty(starts[-1], out_dtype)
        if len(images):
            kernel = function(
                _SOURCE,
                "paste_batch",
                kind(in_dtype, OP),
                kind(out_dtype, OP),
                cupy.cuda.Device().id,
                round_away=True,
            )
            images_dev = cupy.asarray(images.view(np.uint8))
            regions_dev = cupy.asarray(regions.view(np.uint8))
            launch(kernel, len(images), hw, (images_dev, regions_dev, out))
    # ``samples`` held the inputs past the launch (CuPy's pool reuses in stream order)
    result = [
        out[a:b].reshape(tuple(int(v) for v in shape))
        for a, b, (shape, _dt, _r) in zip(starts[:-1], starts[1:], plans)
    ]
    layout = inputs[0].layout() if callable(getattr(inputs[0], "layout", None)) else ""
    if not layout and plans:
        layout = "FHWC" if len(plans[0][0]) == 4 else "HWC"
    return gpu_batch(result, layout, ctx)
