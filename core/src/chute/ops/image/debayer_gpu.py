"""GPU backend of fn.debayer: OpenCV's bilinear demosaicing, every image in one launch.

Each output pixel reads the 3x3 neighbourhood of its input pixel and applies OpenCV's
integer rule: the pixel's own colour as is; green at red or blue, the rounded mean of
the 4 edge neighbours; red at blue (and blue at red), of the 4 corners; at green, the
rounded mean of the 2 neighbours of the missing colour's row or column. As OpenCV, the
outer rows and columns repeat their inner neighbours, and images under 3 pixels a side
come out black. Results equal the CPU backend's (cv2.demosaicing, COLOR_Bayer*2RGB).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.gpu.batches import gpu_batch
from chute.gpu.geometry_kernels import launch, output_offsets
from chute.gpu.runtime import require_gpu
from chute.gpu.typed_kernels import function, kind
from chute.ops.geometry.remap_gpu import frames_batch
from chute.ops.image import debayer_kernels as dk
from chute.ops.image.frames_gpu import FrameImages

__all__ = ["IMAGE_DTYPE", "debayer", "debayer_table"]

# Mirrors struct DImage below.
IMAGE_DTYPE = np.dtype(
    {
        "names": ["in_ptr", "in_row", "out_off", "h", "w", "by", "bx"],
        "formats": [np.uint64, np.int64, np.int64, np.int32, np.int32, np.int32, np.int32],
        "offsets": [0, 8, 16, 24, 28, 32, 36],
        "itemsize": 40,
    }
)

_SOURCE = r"""
struct DImage { unsigned long long in_ptr; long long in_row, out_off; int h, w, by, bx; };

// grid (x tiles, y tiles, images); out: HWC RGB of in_t
extern "C" __global__ void debayer_bilinear(const DImage *table, out_t *out) {
    const DImage s = table[blockIdx.z];
    const int x = blockIdx.x * blockDim.x + threadIdx.x;
    const int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= s.w || y >= s.h) return;
    out_t *o = out + s.out_off + ((long long)y * s.w + x) * 3;
    if (s.h < 3 || s.w < 3) {
        o[0] = o[1] = o[2] = (out_t)0;
        return;
    }
    // the outer rows and columns repeat the adjacent inner ones
    const int cy = min(max(y, 1), s.h - 2), cx = min(max(x, 1), s.w - 2);
    const long long r = s.in_row;
    const in_t *p = (const in_t *)s.in_ptr + cy * r + cx;
    const int v = p[0];
    const int up = p[-r], down = p[r], left = p[-1], right = p[1];
    const int cross = (up + down + left + right + 2) >> 2;
    const int diag = ((int)p[-r - 1] + (int)p[-r + 1] + (int)p[r - 1] + (int)p[r + 1] + 2) >> 2;
    const int horiz = (left + right + 1) >> 1, vert = (up + down + 1) >> 1;
    // red where (y + by) and (x + bx) are even, blue where both are odd
    const int py = (cy + s.by) & 1, px = (cx + s.bx) & 1;
    int R, G, B;
    if (!py && !px) { R = v; G = cross; B = diag; }
    else if (py && px) { R = diag; G = cross; B = v; }
    else if (!py) { R = horiz; G = v; B = vert; }
    else { R = vert; G = v; B = horiz; }
    o[0] = (out_t)R;
    o[1] = (out_t)G;
    o[2] = (out_t)B;
}
"""


def debayer_table(
    ptrs: np.ndarray, rows: np.ndarray, hw: np.ndarray, positions: np.ndarray
) -> tuple[np.ndarray, np.ndarray, int]:
    """(table, (n, 2) output sizes, output elements) of the images; ``positions`` (n, 2) are
    each image's blue (y, x)."""
    n = len(hw)
    offsets, total = output_offsets(np.asarray(hw, np.int64).reshape(-1, 2), 3)
    table = np.zeros(n, IMAGE_DTYPE)
    table["in_ptr"], table["in_row"], table["out_off"] = ptrs, rows, offsets
    table["h"], table["w"] = hw[:, 0], hw[:, 1]
    pos = np.asarray(positions, np.int32).reshape(n, 2)
    table["by"], table["bx"] = pos[:, 0], pos[:, 1]
    return table, offsets, total


def debayer(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.debayer on the GPU: bilinear (OpenCV's), every image of the batch in one launch."""
    name = op.schema.display_name
    cupy = require_gpu(name)
    algorithm = args["algorithm"]
    if algorithm not in dk.GPU_ALGORITHMS:
        raise ValueError(
            f"{name}: argument 'algorithm' {algorithm!r} has no GPU backend here; on the GPU: "
            f"{', '.join(dk.GPU_ALGORITHMS)} (OpenCV's bilinear; NPP's 'default_npp' is not "
            "implemented); the others run on the CPU"
        )
    batch = inputs[0]
    layout = ctx.state or (batch.layout() if callable(getattr(batch, "layout", None)) else "")
    images = FrameImages(batch, name, layout)
    if images.dtype not in (np.uint8, np.uint16):
        raise TypeError(f"{name}: takes uint8 or uint16 images, got {images.dtype}")
    if len(images.hw) and images.channels != 1:
        raise ValueError(f"{name}: takes single-channel images, got {images.channels} channels")
    odd = (images.hw % 2).any(axis=1)
    if odd.any():
        h, w = images.hw[int(np.argmax(odd))]
        raise ValueError(f"{name}: image height and width must be even, got {h}x{w}")
    positions = [dk.blue_position(name, p, i) for i, p in enumerate(args.column("blue_position"))]
    table, offsets, total = debayer_table(
        images.ptrs, images.rows, images.hw, np.asarray(images.per_image(positions)).reshape(-1, 2)
    )
    code = kind(images.dtype, name, (np.dtype(np.uint8), np.dtype(np.uint16)))
    with ctx.stream:
        out = cupy.empty(total, images.dtype)
        if len(table):
            kernel = function(_SOURCE, "debayer_bilinear", code, code, cupy.cuda.Device().id)
            launch(kernel, len(table), images.hw, (cupy.asarray(table.view(np.uint8)), out))
    if images.frames is None:
        return frames_batch(images, out, images.hw, offsets, 3, "HWC", ctx, squeeze=False)
    result = frames_batch(images, out, images.hw, offsets, 3, "FHWC", ctx, squeeze=False)
    if 0 not in images.frames:
        return result
    # a sequence without frames keeps its frame size, as on the CPU: (0, H, W, 3)
    samples = batch.samples()
    fixed = [
        cupy.empty((0, *s.shape[1:3], 3), images.dtype) if f == 0 else r
        for s, f, r in zip(samples, images.frames, result.samples())
    ]
    return gpu_batch(fixed, "FHWC", ctx)
