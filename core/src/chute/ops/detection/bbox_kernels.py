"""CPU kernels on bounding boxes: layouts, flips, pasting, overlap metrics, SSD encoding.

Boxes are rows of relative coordinates (0..1 of the image). Inside the kernels a set of
boxes is a pair ``(lo, hi)`` of ``(n, ndim)`` float32 arrays in x, y, (z) order; the
layouts of DALI (``"xyXY"``, ``"xyWH"``, permutations, ``"xyzXYZ"``...) are read into and
written from that pair. Arithmetic is float32, as DALI's, so that thresholds and ties
decide alike on the CPU and the GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Anchors",
    "bbox_paste",
    "box_layout",
    "encode_boxes",
    "flip_boxes",
    "intersection_volume",
    "iou_matrix",
    "overlap_metric",
    "read_boxes",
    "remap_boxes",
    "rotate_boxes",
    "volume",
    "write_boxes",
]

_START = "xyz"
_END = "XYZ"
_EXTENT = "WHD"


def box_layout(layout: str | None, ltrb: bool, ndim: int) -> str:
    """The layout string of ``ndim``-D boxes: ``layout`` checked, or the default of ``ltrb``."""
    start_end, start_shape = _START[:ndim] + _END[:ndim], _START[:ndim] + _EXTENT[:ndim]
    if not layout:
        return start_end if ltrb else start_shape
    if sorted(layout) not in (sorted(start_end), sorted(start_shape)):
        raise ValueError(
            f"bbox_layout must be a permutation of {start_end!r} or {start_shape!r} for "
            f"{ndim}-D boxes, got {layout!r}"
        )
    return layout


def _as_rows(boxes: np.ndarray, ncoords: int) -> np.ndarray:
    boxes = np.asarray(boxes)
    if boxes.size % ncoords:
        raise ValueError(f"expected boxes of {ncoords} coordinates each, got shape {boxes.shape}")
    return boxes.reshape(-1, ncoords).astype(np.float32, copy=False)


def read_boxes(boxes: np.ndarray, layout: str) -> tuple[np.ndarray, np.ndarray]:
    """``(lo, hi)`` corners, each ``(n, ndim)`` float32 in x, y, (z) order, of boxes in ``layout``."""
    ndim = len(layout) // 2
    rows = _as_rows(boxes, 2 * ndim)
    lo = np.stack([rows[:, layout.index(c)] for c in _START[:ndim]], axis=1)
    if _END[0] in layout:
        hi = np.stack([rows[:, layout.index(c)] for c in _END[:ndim]], axis=1)
    else:
        hi = lo + np.stack([rows[:, layout.index(c)] for c in _EXTENT[:ndim]], axis=1)
    return lo, hi


def write_boxes(lo: np.ndarray, hi: np.ndarray, layout: str) -> np.ndarray:
    """Boxes given by corners as ``(n, 2 * ndim)`` float32 rows in ``layout``."""
    ndim = lo.shape[1]
    out = np.empty((lo.shape[0], 2 * ndim), np.float32)
    ends = hi if _END[0] in layout else hi - lo
    names = _END if _END[0] in layout else _EXTENT
    for d in range(ndim):
        out[:, layout.index(_START[d])] = lo[:, d]
        out[:, layout.index(names[d])] = ends[:, d]
    return out


def flip_boxes(boxes: np.ndarray, horizontal: bool, vertical: bool, ltrb: bool) -> np.ndarray:
    """Mirror relative boxes (``[x, y, w, h]``, or ``[l, t, r, b]`` when ``ltrb``) in the image.

    The output has the input's shape and float32 values: a horizontal flip maps x to
    ``1 - x - w`` (xywh) or ``(l, r)`` to ``(1 - r, 1 - l)`` (ltrb); vertical likewise in y.
    """
    rows = _as_rows(boxes, 4).copy()
    for axis, flip in ((0, horizontal), (1, vertical)):
        if not flip:
            continue
        if ltrb:
            start = rows[:, axis].copy()
            rows[:, axis] = 1.0 - rows[:, axis + 2]
            rows[:, axis + 2] = 1.0 - start
        else:
            rows[:, axis] = 1.0 - rows[:, axis] - rows[:, axis + 2]
    return rows.reshape(np.shape(boxes))


def bbox_paste(
    boxes: np.ndarray, ratio: float, paste_x: float, paste_y: float, ltrb: bool
) -> np.ndarray:
    """Relative boxes moved to where they land when the image is pasted on a canvas.

    The canvas is ``ratio`` times the image in each dimension and the image sits at
    ``paste_x, paste_y`` (0 = left/top, 1 = right/bottom) of the free space.
    """
    if ratio < 1.0:
        raise ValueError(f"argument 'ratio' must be at least 1, got {ratio}")
    rows = _as_rows(boxes, 4)
    scale = np.float32(1.0 / ratio)
    margin = np.array([paste_x, paste_y], np.float32) * (np.float32(1.0) - scale)
    out = np.empty_like(rows)
    out[:, :2] = rows[:, :2] * scale + margin
    out[:, 2:] = rows[:, 2:] * scale + (margin if ltrb else 0.0)
    return out.reshape(np.shape(boxes))


def rotate_boxes(
    boxes: np.ndarray,
    angle: float,
    in_wh: tuple[float, float],
    out_wh: tuple[float, float],
    *,
    ltrb: bool = True,
    normalized: bool = True,
    mode: str = "expand",
    remove_threshold: float = 0.1,
) -> tuple[np.ndarray, np.ndarray]:
    """Boxes of an image rotated counter-clockwise by ``angle`` degrees, and the kept indices.

    Each box's corners turn about the image centre (``in_wh``) and land about the centre of
    the ``out_wh`` canvas; the new box encloses them (``mode="expand"``), or is shrunk back
    to the original extents (``"fixed"``; swapped where the rotation turned a tall box wide)
    or halfway there (``"halfway"``). Boxes are then clipped to the canvas and dropped when
    less than ``remove_threshold`` of their area is left (a box of no area is dropped, as in
    DALI). Coordinates are relative to the image (``normalized``) or in pixels, float32.
    """
    rows = _as_rows(boxes, 4)
    f32 = np.float32
    lo = rows[:, :2]
    hi = rows[:, 2:] if ltrb else lo + rows[:, 2:]
    in_size, out_size = np.asarray(in_wh, f32), np.asarray(out_wh, f32)
    # corners (n, 4, 2): x1y1, x2y1, x1y2, x2y2, centred on the image
    xs = np.stack([lo[:, 0], hi[:, 0], lo[:, 0], hi[:, 0]], 1)
    ys = np.stack([lo[:, 1], lo[:, 1], hi[:, 1], hi[:, 1]], 1)
    corners = np.stack([xs, ys], -1)
    corners = (corners - f32(0.5)) * in_size if normalized else corners - in_size / f32(2)
    old_extent = corners[:, 3] - corners[:, 0]
    radians = f32(np.deg2rad(f32(angle)))
    c, s = np.cos(radians), np.sin(radians)
    x, y = corners[..., 0], corners[..., 1]
    turned = np.stack([x * c + y * s, -x * s + y * c], -1) + out_size / f32(2)
    new_lo, new_hi = turned.min(axis=1), turned.max(axis=1)
    if mode != "expand":
        new_extent = new_hi - new_lo
        swapped = (old_extent[:, 0] < old_extent[:, 1]) ^ (new_extent[:, 0] < new_extent[:, 1])
        target = np.where(swapped[:, None], old_extent[:, ::-1], old_extent)
        shrink = (new_extent - target) * f32(0.5)
        if mode == "halfway":
            shrink = shrink * f32(0.5)
        new_lo, new_hi = new_lo + shrink, new_hi - shrink
    old_area = np.prod(new_hi - new_lo, axis=1)
    new_lo = np.clip(new_lo, f32(0), out_size)
    new_hi = np.clip(new_hi, f32(0), out_size)
    with np.errstate(divide="ignore", invalid="ignore"):
        remain = np.prod(new_hi - new_lo, axis=1) / old_area
    keep = np.nonzero(remain >= f32(remove_threshold))[0]
    new_lo, new_hi = new_lo[keep], new_hi[keep]
    if not ltrb:
        new_hi = new_hi - new_lo
    out = np.concatenate([new_lo, new_hi], 1)
    if normalized:
        out = out / np.concatenate([out_size, out_size])
    return out.astype(f32, copy=False), keep


def volume(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Area (volume) of boxes; boxes with an end before their start have none."""
    extent = np.maximum(hi - lo, np.float32(0.0))
    # the product over the few coordinates column by column (np.prod over a last axis of
    # 2 or 3 is several times slower; the same multiplications in the same order)
    out = extent[..., 0].copy()
    for k in range(1, extent.shape[-1]):
        out *= extent[..., k]
    return out


def intersection_volume(
    lo: np.ndarray, hi: np.ndarray, other_lo: np.ndarray, other_hi: np.ndarray
) -> np.ndarray:
    """Area of the intersection of boxes (broadcasting over leading dimensions)."""
    out = None
    for k in range(lo.shape[-1]):
        side = np.minimum(hi[..., k], other_hi[..., k]) - np.maximum(lo[..., k], other_lo[..., k])
        side = np.maximum(side, np.float32(0.0))
        out = side if out is None else out * side
    return out


def iou_matrix(
    lo: np.ndarray, hi: np.ndarray, other_lo: np.ndarray, other_hi: np.ndarray
) -> np.ndarray:
    """``(n, m)`` intersection over union of n boxes with m boxes (0 where the union is empty)."""
    inter = intersection_volume(lo[:, None], hi[:, None], other_lo[None], other_hi[None])
    union = volume(lo, hi)[:, None] + volume(other_lo, other_hi)[None] - inter
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(union > 0, inter / union, np.float32(0.0)).astype(np.float32)


def overlap_metric(
    crop_lo: np.ndarray, crop_hi: np.ndarray, lo: np.ndarray, hi: np.ndarray, kind: str
) -> np.ndarray:
    """Per box: IoU with the crop window (``"iou"``) or the fraction of its area inside it.

    ``crop_lo``/``crop_hi`` of shape ``(ndim,)`` give ``(n,)`` values; windows of shape
    ``(m, 1, ndim)`` give an ``(m, n)`` table (every window against every box).
    """
    inter = intersection_volume(lo, hi, crop_lo, crop_hi)
    if kind == "iou":
        union = volume(lo, hi) + volume(crop_lo, crop_hi) - inter
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(union > 0, inter / union, np.float32(0.0)).astype(np.float32)
    vol = volume(lo, hi)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(vol > 0, inter / vol, np.float32(0.0)).astype(np.float32)


def remap_boxes(
    lo: np.ndarray, hi: np.ndarray, crop_lo: np.ndarray, crop_hi: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Boxes clipped to a crop window and expressed relative to it (clamped to 0..1)."""
    extent = crop_hi - crop_lo
    new_lo = (np.maximum(lo, crop_lo) - crop_lo) / extent
    new_hi = (np.minimum(hi, crop_hi) - crop_lo) / extent
    one = np.float32(1.0)
    return np.clip(new_lo, 0, one).astype(np.float32), np.clip(new_hi, 0, one).astype(np.float32)


def _last_argmax(values: np.ndarray, axis: int) -> np.ndarray:
    """Index of the maximum along ``axis``; the last one where several are equal (as DALI)."""
    flipped = np.flip(values, axis=axis)
    return values.shape[axis] - 1 - np.argmax(flipped, axis=axis)


@dataclass(frozen=True)
class Anchors:
    """SSD default boxes (ltrb rows) with what matching needs of them, computed once."""

    lo: np.ndarray  # (2, m): x and y starts, one contiguous row each
    hi: np.ndarray
    volume: np.ndarray  # (m,)
    center: np.ndarray  # (m, 2)
    extent: np.ndarray  # (m, 2)
    unmatched: np.ndarray  # (m, 4): center and extent, what an unmatched anchor encodes to

    @classmethod
    def of(cls, anchors: np.ndarray) -> Anchors:
        """Prepare ``anchors`` (``(m, 4)`` ltrb, or their flat list)."""
        rows = _as_rows(anchors, 4)
        center, extent = _center_extent(rows)
        return cls(
            np.ascontiguousarray(rows[:, :2].T),
            np.ascontiguousarray(rows[:, 2:].T),
            volume(rows[:, :2], rows[:, 2:]),
            center,
            extent,
            np.concatenate([center, extent], 1),
        )

    def ious(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """``(n, m)`` IoU of n boxes with the anchors (as :func:`iou_matrix`, bit for bit)."""
        inter = None
        for k in range(lo.shape[1]):
            side = np.minimum(hi[:, k, None], self.hi[k]) - np.maximum(lo[:, k, None], self.lo[k])
            np.maximum(side, np.float32(0.0), out=side)
            inter = side if inter is None else np.multiply(inter, side, out=inter)
        assert inter is not None
        union = volume(lo, hi)[:, None] + self.volume - inter
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(union > 0, inter / union, np.float32(0.0)).astype(np.float32)


def encode_boxes(
    boxes: np.ndarray,
    labels: np.ndarray,
    anchors: np.ndarray | Anchors,
    criteria: float = 0.5,
    offset: bool = False,
    scale: float = 1.0,
    means: Sequence[float] = (0.0, 0.0, 0.0, 0.0),
    stds: Sequence[float] = (1.0, 1.0, 1.0, 1.0),
) -> tuple[np.ndarray, np.ndarray]:
    """SSD matching of ltrb ``boxes`` to ltrb ``anchors``: ``(M, 4)`` boxes and ``(M,)`` labels.

    Each box claims the anchor it overlaps best (IoU forced to 2); each anchor takes the box
    it overlaps best when that IoU exceeds ``criteria``. Matched anchors get the box (as
    center x, y, width, height, or with ``offset`` the normalized offsets from the anchor)
    and its label; the others the anchor itself (zeros with ``offset``) and label 0.
    """
    if not isinstance(anchors, Anchors):
        anchors = Anchors.of(anchors)
    rows = _as_rows(boxes, 4)
    labels = np.asarray(labels).reshape(-1)
    if labels.shape[0] != rows.shape[0]:
        raise ValueError(f"got {rows.shape[0]} boxes but {labels.shape[0]} labels")
    m = anchors.volume.shape[0]
    out_labels = np.zeros(m, labels.dtype if labels.size else np.int32)
    out = np.zeros((m, 4), np.float32) if offset else anchors.unmatched.copy()
    if rows.shape[0] == 0:
        return out, out_labels
    ious = anchors.ious(rows[:, :2], rows[:, 2:])
    ious[np.arange(rows.shape[0]), _last_argmax(ious, axis=1)] = 2.0
    # each anchor's best box, the last on ties: a pass over the few boxes, not an argmax
    # down the columns of the (n, m) table
    best_box = np.zeros(m, np.intp)
    best_iou = ious[0].copy()
    for r in range(1, rows.shape[0]):
        best_box[ious[r] >= best_iou] = r
        np.maximum(best_iou, ious[r], out=best_iou)
    matched = np.nonzero(best_iou > np.float32(criteria))[0]
    src = best_box[matched]
    b_center, b_extent = _center_extent(rows[src])
    if offset:
        out[matched] = offsets(
            b_center,
            b_extent,
            anchors.center[matched],
            anchors.extent[matched],
            scale,
            means,
            stds,
        )
    else:
        out[matched] = np.concatenate([b_center, b_extent], 1)
    out_labels[matched] = labels[src]
    return out, out_labels


def _center_extent(ltrb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    extent = ltrb[:, 2:] - ltrb[:, :2]
    return ltrb[:, :2] + extent * np.float32(0.5), extent


def offsets(
    b_center: np.ndarray,
    b_extent: np.ndarray,
    a_center: np.ndarray,
    a_extent: np.ndarray,
    scale: float,
    means: Sequence[float],
    stds: Sequence[float],
) -> np.ndarray:
    """SSD regression targets of boxes from their anchors, normalized by ``means``/``stds``."""
    s = np.float32(scale)
    mean = np.asarray(means, np.float32)
    std = np.asarray(stds, np.float32)
    b_center, b_extent, a_center, a_extent = b_center * s, b_extent * s, a_center * s, a_extent * s
    with np.errstate(divide="ignore"):
        xy = ((b_center - a_center) / a_extent - mean[:2]) / std[:2]
        wh = (np.log(b_extent / a_extent) - mean[2:]) / std[2:]
    return np.concatenate([xy, wh], 1).astype(np.float32)
