"""SSD300's default boxes from the SSD paper's configuration, and a NumPy box-encoder reference.

SSD300 (Liu et al. 2016, and the MLPerf reference): feature maps 38, 19, 10, 5, 3, 1 with
steps 8, 16, 32, 64, 100, 300 on a 300-pixel input; scales 21, 45, 99, 153, 207, 261, 315
pixels; aspect ratios {2} on the first and last two maps and {2, 3} on the others. Each
cell gets a box of scale s_k, one of sqrt(s_k * s_k+1), and one pair (w, h), (h, w) of
s_k * sqrt(a), s_k / sqrt(a) per ratio a: 8,732 boxes, clipped to the image.
"""

from __future__ import annotations

import itertools

import numpy as np

FIG = 300
FEATURES = (38, 19, 10, 5, 3, 1)
STEPS = (8, 16, 32, 64, 100, 300)
SCALES = (21, 45, 99, 153, 207, 261, 315)
RATIOS = ((2,), (2, 3), (2, 3), (2, 3), (2,), (2,))


def ssd300_anchors() -> np.ndarray:
    """(8732, 4) float32 ltrb default boxes of SSD300, relative to the image."""
    boxes = []
    for k, fsize in enumerate(FEATURES):
        sk = SCALES[k] / FIG
        sk1 = np.sqrt(SCALES[k] * SCALES[k + 1]) / FIG
        sizes = [(sk, sk), (sk1, sk1)]
        for a in RATIOS[k]:
            w, h = sk * np.sqrt(a), sk / np.sqrt(a)
            sizes += [(w, h), (h, w)]
        cells = FIG / STEPS[k]
        for i, j in itertools.product(range(fsize), repeat=2):
            cx, cy = (j + 0.5) / cells, (i + 0.5) / cells
            for w, h in sizes:
                boxes.append((cx, cy, w, h))
    xywh = np.clip(np.asarray(boxes, np.float64), 0.0, 1.0)
    ltrb = np.concatenate([xywh[:, :2] - xywh[:, 2:] / 2, xywh[:, :2] + xywh[:, 2:] / 2], 1)
    return ltrb.astype(np.float32)


def reference_encode(boxes, labels, anchors, criteria=0.5, offset=False, scale=1.0,
                     means=(0, 0, 0, 0), stds=(1, 1, 1, 1)):  # fmt: skip
    """SSD matching written out box by box and anchor by anchor (float32, last max wins)."""
    boxes = np.asarray(boxes, np.float32).reshape(-1, 4)
    anchors = np.asarray(anchors, np.float32).reshape(-1, 4)
    n, m = len(boxes), len(anchors)
    f = np.float32
    a_w, a_h = anchors[:, 2] - anchors[:, 0], anchors[:, 3] - anchors[:, 1]
    a_cx, a_cy = anchors[:, 0] + a_w * f(0.5), anchors[:, 1] + a_h * f(0.5)
    iou = np.zeros((n, m), np.float32)
    for b in range(n):
        left, top, right, bottom = boxes[b]
        iw = np.maximum(np.minimum(right, anchors[:, 2]) - np.maximum(left, anchors[:, 0]), f(0))
        ih = np.maximum(np.minimum(bottom, anchors[:, 3]) - np.maximum(top, anchors[:, 1]), f(0))
        inter = iw * ih
        union = max(right - left, f(0)) * max(bottom - top, f(0)) + a_w * a_h - inter
        iou[b] = np.where(union > 0, inter / np.where(union > 0, union, 1), 0)
        iou[b, np.flatnonzero(iou[b] == iou[b].max())[-1]] = 2.0
    out = np.zeros((m, 4), np.float32)
    if not offset:
        out[:] = np.stack([a_cx, a_cy, a_w, a_h], 1)
    out_labels = np.zeros(m, np.int32)
    for a in range(m):
        if n == 0:
            break
        b = np.flatnonzero(iou[:, a] == iou[:, a].max())[-1]
        if iou[b, a] <= criteria:
            continue
        left, top, right, bottom = boxes[b]
        w, h = right - left, bottom - top
        cx, cy = left + w * f(0.5), top + h * f(0.5)
        out_labels[a] = labels[b]
        if not offset:
            out[a] = (cx, cy, w, h)
            continue
        s = f(scale)
        out[a] = (
            ((cx * s - a_cx[a] * s) / (a_w[a] * s) - means[0]) / stds[0],
            ((cy * s - a_cy[a] * s) / (a_h[a] * s) - means[1]) / stds[1],
            (np.log((w * s) / (a_w[a] * s)) - means[2]) / stds[2],
            (np.log((h * s) / (a_h[a] * s)) - means[3]) / stds[3],
        )
    return out, out_labels


def decode(encoded: np.ndarray, anchors: np.ndarray, means, stds) -> np.ndarray:
    """ltrb boxes from SSD offsets (the inverse of offset=True encoding)."""
    a_wh = anchors[:, 2:] - anchors[:, :2]
    a_c = anchors[:, :2] + a_wh / 2
    e = encoded.astype(np.float64) * np.asarray(stds) + np.asarray(means)
    c = e[:, :2] * a_wh + a_c
    wh = np.exp(e[:, 2:]) * a_wh
    return np.concatenate([c - wh / 2, c + wh / 2], 1)
