"""fn.clahe's CPU kernel (OpenCV's CLAHE, which DALI's CPU backend runs) and its tile
arithmetic, which the GPU backend shares.

OpenCV's CLAHE on an H x W image with ``tiles_x`` x ``tiles_y`` tiles: when a side is not
a multiple of its tile count, the image is extended (reflect_101) at the bottom by
``tiles_y - h % tiles_y`` rows and at the right by ``tiles_x - w % tiles_x`` columns (a
whole tile count where a side divides evenly, as OpenCV does); each tile's 256-bin
histogram is clipped at ``max(int(clip_limit * tile_area / 256), 1)`` (no clipping when
clip_limit <= 0), the clipped counts are spread evenly (the remainder one by one from bin
0 with a stride), and the cumulative sum times ``255 / tile_area`` (float32, rounded half
to even) is the tile's lookup table. Each pixel blends the tables of the four nearest
tile centres bilinearly, in float32. RGB images with ``luma_only`` go through Lab: the
L channel is equalized, a and b are kept.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

__all__ = ["ClaheTiles", "clahe", "clahe_tiles"]

BINS = 256


@dataclass(frozen=True)
class ClaheTiles:
    """OpenCV's tile arithmetic for one image size: tile size, clip count, float32 scales."""

    tile_w: int
    tile_h: int
    clip: int  # 0: no clipping
    lut_scale: np.float32
    inv_tile_w: np.float32
    inv_tile_h: np.float32


def clahe_tiles(h: int, w: int, tiles_x: int, tiles_y: int, clip_limit: float) -> ClaheTiles:
    """The tiles of an H x W image, as cv::CLAHE computes them."""
    if w % tiles_x == 0 and h % tiles_y == 0:
        tw, th = w // tiles_x, h // tiles_y
    else:  # OpenCV extends both far sides by (tiles - size % tiles)
        tw = (w + tiles_x - w % tiles_x) // tiles_x
        th = (h + tiles_y - h % tiles_y) // tiles_y
    area = tw * th
    clip = 0
    if clip_limit > 0:
        clip = max(int(float(np.float32(clip_limit)) * area / BINS), 1)
    return ClaheTiles(
        tw,
        th,
        clip,
        np.float32(BINS - 1) / np.float32(area),
        np.float32(1.0) / np.float32(tw),
        np.float32(1.0) / np.float32(th),
    )


def clahe(
    image: np.ndarray, tiles_x: int, tiles_y: int, clip_limit: float, luma_only: bool = True
) -> np.ndarray:
    """CLAHE of a uint8 HW / HWC (1 or 3 channels, RGB) image."""
    if image.shape[0] == 0 or image.shape[1] == 0:
        return image.copy()
    tool = cv2.createCLAHE(clipLimit=float(clip_limit), tileGridSize=(int(tiles_x), int(tiles_y)))
    if image.ndim == 2:
        return tool.apply(np.ascontiguousarray(image))
    if image.shape[2] == 1:
        return tool.apply(np.ascontiguousarray(image[:, :, 0]))[:, :, None]
    if luma_only:
        lab = cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2LAB)
        lab[:, :, 0] = tool.apply(np.ascontiguousarray(lab[:, :, 0]))
        return cv2.cvtColor(lab, cv2.COLOR_LAB2RGB)
    channels = [tool.apply(np.ascontiguousarray(image[:, :, c])) for c in range(image.shape[2])]
    return np.stack(channels, axis=-1)
