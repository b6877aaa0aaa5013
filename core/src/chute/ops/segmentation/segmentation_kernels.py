"""CPU kernels of fn.segmentation.*: connected blobs and their boxes, the random choice of
an object (random_object_bbox), of a mask pixel (random_mask_pixel), and the selection of
polygons by mask id (select_masks).

Blobs are face-connected (4-connected in 2-D, 6 in 3-D): neighbours along one axis with the
same label. They are numbered by their first element in C (raster) order on every path: 2-D
masks (after dropping extents of 1) go through OpenCV's connected components, other ranks
through a vectorized union-find (hook the larger root under the smaller, then compress).
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

__all__ = [
    "ClassChoice",
    "ObjectCache",
    "blob_boxes",
    "class_choice",
    "pick_box",
    "pick_object",
    "random_mask_pixel",
    "select_masks",
]


# ---- blobs -----------------------------------------------------------------------------------
def _components_nd(values: np.ndarray, fg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(flat indices of the foreground, the smallest flat index of each one's blob)."""
    n, shape = values.size, values.shape
    index = np.arange(n).reshape(shape)
    starts, ends = [], []
    for d in range(values.ndim):
        head = tuple(slice(None, -1) if k == d else slice(None) for k in range(values.ndim))
        tail = tuple(slice(1, None) if k == d else slice(None) for k in range(values.ndim))
        joined = fg[head] & fg[tail] & (values[head] == values[tail])
        starts.append(index[head][joined])
        ends.append(index[tail][joined])
    a, b = np.concatenate(starts), np.concatenate(ends)
    parent = np.arange(n)
    while len(a):
        pa, pb = parent[a], parent[b]
        apart = pa != pb
        if not apart.any():
            break
        a, b, pa, pb = a[apart], b[apart], pa[apart], pb[apart]
        np.minimum.at(parent, np.maximum(pa, pb), np.minimum(pa, pb))
        while True:  # compress: every element points at its root
            grand = parent[parent]
            if np.array_equal(grand, parent):
                break
            parent = grand
    flat = np.flatnonzero(fg)
    return flat, parent[flat]


def _components_2d(values: np.ndarray, fg: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """As :func:`_components_nd` for 2-D masks, one OpenCV labelling per distinct label."""
    flat = np.flatnonzero(fg)
    roots = np.empty(len(flat), np.int64)
    flat_values = values.reshape(-1)[flat]
    for label in np.unique(flat_values):
        binary = (values == label).astype(np.uint8)
        _, blobs = cv2.connectedComponents(binary, connectivity=4, ltype=cv2.CV_32S)
        blobs = blobs.reshape(-1)
        ids, first = np.unique(blobs, return_index=True)
        first_of = np.zeros(int(ids.max()) + 1, np.int64)
        first_of[ids] = first
        mine = flat_values == label
        roots[mine] = first_of[blobs[flat[mine]]]
    return flat, roots


def blob_boxes(values: np.ndarray, background: Any) -> tuple[np.ndarray, np.ndarray]:
    """Boxes ``(lo, hi)`` (each ``(k, ndim)`` int64, hi one past the end) of the blobs of equal,
    non-``background`` labels, in the order of their first element."""
    ndim = values.ndim
    fg = values != background
    if not fg.any():
        return np.zeros((0, ndim), np.int64), np.zeros((0, ndim), np.int64)
    kept = [d for d in range(ndim) if values.shape[d] > 1]
    squeezed = values.reshape([values.shape[d] for d in kept])
    fg_squeezed = fg.reshape(squeezed.shape)
    if len(kept) == 2:
        flat, roots = _components_2d(squeezed, fg_squeezed)
    else:
        flat, roots = _components_nd(squeezed, fg_squeezed)
    _, blob = np.unique(roots, return_inverse=True)  # roots ascending = first-element order
    count = int(blob.max()) + 1
    lo = np.zeros((count, ndim), np.int64)
    hi = np.ones((count, ndim), np.int64)
    coords = np.unravel_index(flat, squeezed.shape) if kept else ()
    for d, coord in zip(kept, coords):
        lo[:, d] = np.iinfo(np.int64).max
        hi[:, d] = -1
        np.minimum.at(lo[:, d], blob, coord)
        np.maximum.at(hi[:, d], blob, coord + 1)
    return lo, hi


# ---- random_object_bbox ------------------------------------------------------------------------
@dataclass
class ClassChoice:
    """The classes a sample's object is drawn from, with their weights, and its background."""

    background: int
    classes: list[int] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)
    explicit: bool = False  # classes or weights were given (else: the labels present)


def class_choice(
    background: int | None, classes: tuple[int, ...] | None, weights: tuple[float, ...] | None
) -> ClassChoice:
    """The class setup of one sample, as DALI derives it from its arguments.

    A background left unspecified is 0, or, when 0 is one of ``classes``, one less than the
    smallest class. ``class_weights`` without ``classes`` weigh the labels 1, 2, ... (skipping
    the background); ``classes`` without weights weigh them equally.
    """
    if classes is not None and weights is not None and len(classes) != len(weights):
        raise ValueError(
            f"'classes' ({len(classes)} values) and 'class_weights' ({len(weights)} values) "
            "must have the same length"
        )
    if weights is not None and any(w < 0 for w in weights):
        raise ValueError(f"'class_weights' must not be negative, got {list(weights)}")
    bg = 0 if background is None else int(background)
    choice = ClassChoice(bg, explicit=classes is not None or weights is not None)
    if classes is not None:
        choice.classes = [int(c) for c in classes]
        if bg in choice.classes:
            if background is not None:
                raise ValueError(
                    f"class label {bg} coincides with the background label: give another "
                    "'background' or remove it from 'classes'"
                )
            choice.background = min(choice.classes) - 1
        choice.weights = [1.0] * len(choice.classes) if weights is None else list(weights)
    elif weights is not None:
        label = 0
        for _ in weights:
            label += label == bg
            choice.classes.append(label)
            label += 1
        choice.weights = list(weights)
    return choice


def pick_box(
    lo: np.ndarray,
    hi: np.ndarray,
    threshold: tuple[int, ...] | None,
    k_largest: int | None,
    rng: np.random.Generator,
) -> int | None:
    """Index of a box drawn among those at least ``threshold`` in every extent (the
    ``k_largest`` by volume, ties by order, when given), or None when none qualifies."""
    extent = hi - lo
    candidates = np.arange(len(lo))
    if threshold is not None:
        candidates = candidates[np.all(extent >= np.asarray(threshold), axis=1)]
    if len(candidates) == 0:
        return None
    if k_largest is not None and k_largest < len(candidates):
        volume = np.prod(extent[candidates], axis=1)
        candidates = candidates[np.argsort(-volume, kind="stable")[:k_largest]]
    return int(candidates[int(rng.integers(len(candidates)))])


class ObjectCache:
    """Labels and per-class blob boxes of masks seen before, keyed by a hash of the mask."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[bytes, dict[Any, Any]] = {}

    @staticmethod
    def key(mask: np.ndarray) -> bytes:
        digest = hashlib.blake2b(np.ascontiguousarray(mask).tobytes(), digest_size=32)
        digest.update(repr((mask.shape, mask.dtype.str)).encode())
        return digest.digest()

    def get(self, key: bytes, what: Any) -> Any:
        with self._lock:
            return self._entries.get(key, {}).get(what)

    def put(self, key: bytes, what: Any, value: Any) -> None:
        with self._lock:
            self._entries.setdefault(key, {})[what] = value


def pick_object(
    mask: np.ndarray,
    choice: ClassChoice,
    *,
    ignore_class: bool,
    threshold: tuple[int, ...] | None,
    k_largest: int | None,
    rng: np.random.Generator,
    cache: ObjectCache | None = None,
) -> tuple[np.ndarray, np.ndarray, int] | None:
    """A random object's box ``(lo, hi)`` and class, or None for "no suitable object".

    With ``ignore_class`` every blob is equally likely; otherwise a class is drawn by weight
    among those present, then one of its blobs; a class with no blob passing ``threshold``
    is dropped and another drawn.
    """
    key = ObjectCache.key(mask) if cache is not None else None

    def boxes_of(what: Any, values: np.ndarray, background: Any) -> tuple[np.ndarray, np.ndarray]:
        found = cache.get(key, ("boxes", what)) if cache is not None else None
        if found is None:
            found = blob_boxes(values, background)
            if cache is not None:
                cache.put(key, ("boxes", what), found)
        return found

    if ignore_class:
        lo, hi = boxes_of(("all", choice.background), mask, choice.background)
        index = pick_box(lo, hi, threshold, k_largest, rng)
        if index is None:
            return None
        return lo[index], hi[index], choice.background  # no class is chosen
    present = cache.get(key, "labels") if cache is not None else None
    if present is None:
        present = {int(v) for v in np.unique(mask)}
        if cache is not None:
            cache.put(key, "labels", present)
    present = present - {choice.background}
    if choice.explicit:
        classes = choice.classes
        weights = [w if c in present else 0.0 for c, w in zip(classes, choice.weights)]
    else:
        classes = sorted(present)
        weights = [1.0] * len(classes)
    weights = np.asarray(weights, np.float64)
    while weights.sum() > 0:
        k = int(rng.choice(len(classes), p=weights / weights.sum()))
        label = classes[k]
        lo, hi = boxes_of(("class", label), mask == label, False)
        index = pick_box(lo, hi, threshold, k_largest, rng)
        if index is not None:
            return lo[index], hi[index], label
        weights[k] = 0.0
    return None


# ---- random_mask_pixel -------------------------------------------------------------------------
def random_mask_pixel(
    mask: np.ndarray,
    foreground: bool,
    value: int | None,
    threshold: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """The int64 coordinates of a pixel drawn uniformly from the foreground (pixels equal to
    ``value``, or above ``threshold``) when ``foreground``, else (or without any foreground
    pixel) from the whole mask."""
    if foreground:
        if value is not None:
            if _representable(value, mask.dtype):
                hits = np.flatnonzero(mask == value)
            else:  # no pixel can equal it: any pixel, as DALI
                hits = np.zeros(0, np.int64)
        else:
            hits = np.flatnonzero(mask > threshold)
        if len(hits):
            flat = hits[int(rng.integers(len(hits)))]
            return np.asarray(np.unravel_index(flat, mask.shape), np.int64)
    return np.asarray([rng.integers(extent) for extent in mask.shape], np.int64)


def _representable(value: int, dtype: np.dtype) -> bool:
    if dtype.kind == "b":
        return value in (0, 1)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.min <= value <= info.max
    return True


# ---- select_masks ------------------------------------------------------------------------------
def select_masks(
    mask_ids: np.ndarray, polygons: np.ndarray, vertices: np.ndarray, reindex: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The polygons (and their vertices) of the masks in ``mask_ids``, in that order.

    Each selected mask contributes all its polygons in input order; their vertices are
    packed in output order and the polygons' vertex ranges renumbered to match. With
    ``reindex`` the mask ids become their positions in ``mask_ids``.
    """
    ids = [int(m) for m in mask_ids.reshape(-1)]
    if len(set(ids)) != len(ids):
        repeated = next(m for m in ids if ids.count(m) > 1)
        raise ValueError(f"mask_ids must not repeat a value; {repeated} is repeated")
    nvert = len(vertices)
    for mask_id, start, end in polygons.tolist():
        if mask_id in ids and not 0 <= start <= end <= nvert:
            raise ValueError(
                f"vertex range [{start}, {end}) of mask id {mask_id} is out of bounds or "
                f"reversed; vertices hold {nvert}"
            )
    out_polygons: list[list[int]] = []
    pieces: list[np.ndarray] = []
    count = 0
    for position, mask_id in enumerate(ids):
        rows = polygons[polygons[:, 0] == mask_id]
        if len(rows) == 0:
            raise ValueError(f"selected mask id {mask_id} is not present in the polygons")
        for _, start, end in rows.tolist():
            out_polygons.append([position if reindex else mask_id, count, count + end - start])
            pieces.append(vertices[start:end])
            count += end - start
    out_vertices = np.concatenate(pieces) if pieces else vertices[:0]
    return np.asarray(out_polygons, np.int32).reshape(-1, 3), np.ascontiguousarray(out_vertices)
