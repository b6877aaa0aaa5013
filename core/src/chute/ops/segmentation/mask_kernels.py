"""Segmentation masks from COCO annotations: RLE decoding and polygon rasterization (CPU).

COCO stores an object's mask either as polygons (lists of x, y vertices in pixels) or as a
run-length encoding over the image in column-major order: runs alternate between 0 and 1,
starting with 0. The RLE ``counts`` are a list of ints (uncompressed, ``iscrowd`` objects)
or COCO's compressed string: each count is written 5 bits a character (offset by 48, bit
0x20 = "more follows", the top bit of the last group carries the sign), and from the third
count on the difference to the count two places back is stored instead.

Polygons are rasterized with COCO's own rule (the one pycocotools and DALI's COCO reader
use, so masks agree pixel for pixel): the outline is traced on a grid 5 times finer, each
crossing of a pixel-column centre becomes a boundary point that toggles the mask on or off
down that column. :func:`polygon_mask` states it with NumPy: boundary points as flat
column-major positions, the mask as the running parity of the toggles.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["polygon_mask", "polygons_mask", "rle_counts", "rle_decode"]

_SCALE = 5  # COCO's upsampling of the polygon outline


def rle_counts(counts: Any) -> list[int]:
    """The run lengths of a COCO RLE: a list of ints, or COCO's compressed string."""
    if isinstance(counts, (list, tuple, np.ndarray)):
        out = [int(c) for c in counts]
        if any(c < 0 for c in out):
            raise ValueError("RLE counts must not be negative")
        return out
    if isinstance(counts, bytes):
        counts = counts.decode("ascii")
    if not isinstance(counts, str):
        raise ValueError(f"RLE counts must be a list or a string, got {type(counts).__name__}")
    out: list[int] = []
    pos = 0
    while pos < len(counts):
        value = shift = 0
        more = True
        while more:
            if pos >= len(counts):
                raise ValueError("truncated compressed RLE string")
            group = ord(counts[pos]) - 48
            if not 0 <= group < 64:
                raise ValueError(f"invalid character {counts[pos]!r} in a compressed RLE string")
            value |= (group & 0x1F) << shift
            more = bool(group & 0x20)
            pos += 1
            shift += 5
            if not more and group & 0x10:
                value |= -1 << shift  # negative: sign-extend the last group
        if len(out) > 2:
            value += out[-2]
        if value < 0:
            raise ValueError("compressed RLE string decodes to a negative count")
        out.append(value)
    return out


def rle_decode(h: int, w: int, counts: Any) -> np.ndarray:
    """A COCO RLE (``counts`` as :func:`rle_counts` reads them) as a bool (h, w) mask.

    Runs that end short of ``h * w`` pixels leave the rest 0; runs beyond it are an error.
    """
    runs = np.asarray(rle_counts(counts), np.int64)
    total = int(runs.sum())
    if total > h * w:
        raise ValueError(f"RLE counts cover {total} pixels but the mask has {h}x{w} = {h * w}")
    flat = np.zeros(h * w, bool)
    flat[:total] = np.repeat(np.arange(len(runs)) % 2 == 1, runs)
    return flat.reshape(w, h).T


def _outline(xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Integer points along the closed outline on the 5x grid, in tracing order."""
    pts = np.trunc(_SCALE * xy.astype(np.float64) + 0.5).astype(np.int64)
    start, end = pts, np.roll(pts, -1, axis=0)
    us, vs = [], []
    for (xs, ys), (xe, ye) in zip(start.tolist(), end.tolist()):
        dx, dy = abs(xe - xs), abs(ye - ys)
        # each edge is walked along its longer axis, from its lower end (then reversed back)
        flip = (dx >= dy and xs > xe) or (dx < dy and ys > ye)
        if flip:
            xs, xe, ys, ye = xe, xs, ye, ys
        if dx >= dy:
            t = np.arange(dx + 1)
            t = dx - t if flip else t
            slope = (ye - ys) / dx if dx else 0.0
            us.append(t + xs)
            vs.append(np.trunc(ys + slope * t + 0.5).astype(np.int64))
        else:
            t = np.arange(dy + 1)
            t = dy - t if flip else t
            slope = (xe - xs) / dy
            vs.append(t + ys)
            us.append(np.trunc(xs + slope * t + 0.5).astype(np.int64))
    return np.concatenate(us), np.concatenate(vs)


def _toggles(h: int, w: int, xy: np.ndarray) -> np.ndarray:
    """Column-major flat positions where the polygon's mask switches on or off."""
    if len(xy) == 0:
        return np.zeros(0, np.int64)
    u, v = _outline(xy)
    step = np.nonzero(u[1:] != u[:-1])[0] + 1  # points where the outline changes column
    u_now, u_before, v_now, v_before = u[step], u[step - 1], v[step], v[step - 1]
    column = np.where(u_now < u_before, u_now, u_now - 1)
    on_centre = (column - 2) % _SCALE == 0  # the fine column through a pixel centre
    x = (column - 2) // _SCALE
    keep = on_centre & (x >= 0) & (x <= w - 1)
    y = (np.minimum(v_now, v_before) + 0.5) / _SCALE - 0.5
    y = np.ceil(np.clip(y, 0, h)).astype(np.int64)
    return x[keep] * h + y[keep]


def polygons_mask(h: int, w: int, polygons: Sequence[np.ndarray]) -> np.ndarray:
    """The union of polygons (each ``(k, 2)`` x, y pixel vertices) as a bool (h, w) mask."""
    mask = np.zeros((h, w), bool)
    for xy in polygons:
        mask |= polygon_mask(h, w, xy)
    return mask


def polygon_mask(h: int, w: int, vertices: np.ndarray) -> np.ndarray:
    """One polygon (``(k, 2)`` x, y vertices in pixels) as a bool (h, w) mask, COCO's way."""
    xy = np.asarray(vertices, np.float64).reshape(-1, 2)
    if h <= 0 or w <= 0:
        return np.zeros((max(h, 0), max(w, 0)), bool)
    counts = np.bincount(_toggles(h, w, xy), minlength=h * w + 1)
    flat = (np.cumsum(counts[: h * w]) & 1).astype(bool)
    return flat.reshape(w, h).T
