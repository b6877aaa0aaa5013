"""COCO annotations for fn.readers.coco: parsing the JSON, chute's preprocessed form, masks.

:func:`parse_coco` turns an instances JSON into one :class:`CocoSample` per image,
as DALI's COCO loader does: images in id order (or the order of ``images``),
annotations filtered by ``size_threshold`` and ``include_iscrowd``, classes
remapped to 1..K in the order of the ``categories`` list (unless
``avoid_class_remapping``), boxes in xywh or ltrb, relative with ``ratio``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chute.ops.readers import storage
from chute.ops.readers.records import bad_entry

PREPROCESSED_NAME = "chute_coco_annotations.json"  # chute's own format (see save_preprocessed)


@dataclass
class CocoSample:
    """One image and its objects, ready to be output."""

    file_name: str
    image_id: int
    height: int
    width: int
    boxes: np.ndarray  # float32 (N, 4)
    labels: np.ndarray  # int32 (N,)
    polygons: np.ndarray = field(default_factory=lambda: np.zeros((0, 3), np.int32))
    vertices: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.float32))
    # in pixels, for pixelwise masks (vertices may be relative with ``ratio``)
    pixel_vertices: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.float32))
    rles: list[tuple[int, int, int, Any]] = field(default_factory=list)  # (object, h, w, counts)


def parse_coco(
    path: str,
    *,
    ltrb: bool,
    ratio: bool,
    size_threshold: float,
    skip_empty: bool,
    include_iscrowd: bool,
    remap: bool,
    masks: bool,
    images: list[str] | None,
    on_error: str,
) -> list[CocoSample]:
    """The samples of a COCO instances file (see the module docstring)."""
    try:
        doc = json.loads(storage.read_bytes(path))
    except OSError as exc:
        reason = exc.strerror or exc
        raise ValueError(f"cannot read annotations_file {path!r}: {reason}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"annotations_file {path!r}: invalid JSON at line {exc.lineno} column {exc.colno}: "
            f"{exc.msg}"
        ) from None
    if not isinstance(doc, dict):
        raise ValueError(f"annotations_file {path!r}: expected a JSON object")
    infos = {}
    for k, image in enumerate(doc.get("images", [])):
        try:
            infos[int(image["id"])] = (
                str(image["file_name"]),
                int(image.get("height", 0)),
                int(image.get("width", 0)),
            )
        except (KeyError, TypeError, ValueError):
            bad_entry(on_error, f"annotations_file {path!r}: images[{k}] has no valid id/file_name")
    categories: dict[int, int] = {}
    for k, cat in enumerate(doc.get("categories", [])):
        try:
            categories.setdefault(int(cat["id"]), k + 1)
        except (KeyError, TypeError, ValueError):
            raise ValueError(f"annotations_file {path!r}: categories[{k}] has no id") from None
    objects: dict[int, list[dict]] = {i: [] for i in infos}
    for k, ann in enumerate(doc.get("annotations", [])):
        where = f"annotations_file {path!r}: annotations[{k}]"
        try:
            image_id = int(ann["image_id"])
            box = [float(v) for v in ann["bbox"]]
            if len(box) != 4:
                raise ValueError(f"bbox has {len(box)} values, expected 4")
            category = int(ann["category_id"])
        except (KeyError, TypeError, ValueError) as exc:
            bad_entry(on_error, f"{where}: {exc}")
            continue
        if image_id not in infos:
            bad_entry(on_error, f"{where} refers to image_id {image_id}, which is not in 'images'")
            continue
        if int(ann.get("iscrowd", 0)) and not include_iscrowd:
            continue
        if box[2] < size_threshold or box[3] < size_threshold:
            continue
        objects[image_id].append({**ann, "bbox": box, "category_id": category})

    if images is None:
        order = sorted(infos)
    else:
        by_name: dict[str, int] = {}
        for image_id, (name, _, _) in infos.items():
            by_name.setdefault(name, image_id)
        order = [by_name[n] for n in images if n in by_name]
    samples = []
    for image_id in order:
        name, height, width = infos[image_id]
        anns = objects[image_id]
        if skip_empty and not anns:
            continue
        samples.append(
            _sample(name, image_id, height, width, anns, categories, ltrb, ratio, remap, masks)
        )
    return samples


def _sample(
    name: str,
    image_id: int,
    height: int,
    width: int,
    anns: list[dict],
    categories: dict[int, int],
    ltrb: bool,
    ratio: bool,
    remap: bool,
    masks: bool,
) -> CocoSample:
    boxes = np.array([a["bbox"] for a in anns], np.float32).reshape(-1, 4)
    if ltrb:
        boxes[:, 2:] += boxes[:, :2]
    if ratio:
        boxes /= np.array([width, height, width, height], np.float32)
    labels = [categories.get(a["category_id"], 0) if remap else a["category_id"] for a in anns]
    sample = CocoSample(name, image_id, height, width, boxes, np.array(labels, np.int32))
    if masks:
        polygons, vertices = [], []
        for obj, ann in enumerate(anns):
            segmentation = ann.get("segmentation")
            if isinstance(segmentation, list):
                for poly in segmentation:
                    coords = np.asarray(poly, np.float32).reshape(-1, 2)
                    start = sum(len(v) for v in vertices)
                    polygons.append((obj, start, start + len(coords)))
                    vertices.append(coords)
            elif isinstance(segmentation, dict):
                h, w = segmentation.get("size", (height, width))
                sample.rles.append((obj, int(h), int(w), segmentation.get("counts")))
        sample.polygons = np.array(polygons, np.int32).reshape(-1, 3)
        sample.pixel_vertices = (
            np.concatenate(vertices) if vertices else np.zeros((0, 2), np.float32)
        )
        sample.vertices = sample.pixel_vertices
        if ratio:
            sample.vertices = sample.pixel_vertices / np.array([width, height], np.float32)
    return sample


# ---- chute's preprocessed annotations ------------------------------------------------------
def save_preprocessed(samples: list[CocoSample], path: str) -> None:
    """Write the parsed samples as chute's JSON (DALI's own binary layout is not documented)."""
    records = [
        {
            "file_name": s.file_name,
            "image_id": s.image_id,
            "height": s.height,
            "width": s.width,
            "boxes": s.boxes.tolist(),
            "labels": s.labels.tolist(),
            "polygons": s.polygons.tolist(),
            "vertices": s.vertices.tolist(),
            "pixel_vertices": s.pixel_vertices.tolist(),
            "rles": [list(r) for r in s.rles],
        }
        for s in samples
    ]
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"format": "chute-coco-1", "samples": records}, f)


def load_preprocessed(path: str) -> list[CocoSample]:
    """The samples :func:`save_preprocessed` wrote."""
    try:
        doc = json.loads(storage.read_bytes(path))
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"cannot read preprocessed annotations {path!r}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != "chute-coco-1":
        raise ValueError(f"{path!r} is not chute's preprocessed COCO annotations")
    return [
        CocoSample(
            r["file_name"],
            r["image_id"],
            r["height"],
            r["width"],
            np.array(r["boxes"], np.float32).reshape(-1, 4),
            np.array(r["labels"], np.int32),
            np.array(r["polygons"], np.int32).reshape(-1, 3),
            np.array(r["vertices"], np.float32).reshape(-1, 2),
            np.array(r["pixel_vertices"], np.float32).reshape(-1, 2),
            [tuple(x) for x in r["rles"]],
        )
        for r in doc["samples"]
    ]


# ---- pixelwise masks -------------------------------------------------------------------------
def rle_counts(counts: Any) -> list[int]:
    """The run lengths of a COCO RLE: a list of ints, or COCO's compressed string."""
    if isinstance(counts, list):
        return [int(c) for c in counts]
    if not isinstance(counts, str):
        raise ValueError(f"RLE counts must be a list or a string, got {type(counts).__name__}")
    out: list[int] = []
    p = 0
    while p < len(counts):
        x = k = 0
        more = True
        while more:
            if p >= len(counts):
                raise ValueError("truncated compressed RLE string")
            c = ord(counts[p]) - 48
            x |= (c & 0x1F) << (5 * k)
            more = bool(c & 0x20)
            p += 1
            k += 1
            if not more and c & 0x10:
                x |= -1 << (5 * k)
        if len(out) > 2:
            x += out[-2]
        out.append(x)
    return out


def rle_decode(h: int, w: int, counts: Any) -> np.ndarray:
    """A COCO RLE as a bool (h, w) mask (runs alternate 0 and 1, column-major)."""
    flat = np.zeros(h * w, bool)
    pos, value = 0, False
    for run in rle_counts(counts):
        if value:
            flat[pos : pos + run] = True
        pos += run
        value = not value
    return flat.reshape(w, h).T


def polygon_mask(h: int, w: int, vertices: np.ndarray) -> np.ndarray:
    """Pixels whose centre lies inside the polygon (even-odd rule), as a bool (h, w) mask."""
    ys, xs = np.mgrid[0:h, 0:w]
    px, py = xs + 0.5, ys + 0.5
    inside = np.zeros((h, w), bool)
    n = len(vertices)
    for i in range(n):
        x0, y0 = vertices[i]
        x1, y1 = vertices[(i + 1) % n]
        if y0 == y1:
            continue
        crosses = (py >= min(y0, y1)) & (py < max(y0, y1))
        x_at = x0 + (py - y0) * (x1 - x0) / (y1 - y0)
        inside ^= crosses & (px < x_at)
    return inside


def pixelwise_mask(sample: CocoSample) -> np.ndarray:
    """The int32 (H, W, 1) mask: each pixel the label of its object, 0 for background.

    Objects are painted in ascending label order, so where objects of two classes
    overlap the larger label shows.
    """
    h, w = sample.height, sample.width
    per_label: dict[int, np.ndarray] = {}
    for obj, start, end in sample.polygons:
        label = int(sample.labels[obj])
        mask = polygon_mask(h, w, sample.pixel_vertices[start:end])
        per_label[label] = per_label.get(label, np.zeros((h, w), bool)) | mask
    for obj, rh, rw, counts in sample.rles:
        if (rh, rw) != (h, w):
            raise ValueError(f"RLE mask of size {rh}x{rw} on an image of {h}x{w}")
        label = int(sample.labels[obj])
        per_label[label] = per_label.get(label, np.zeros((h, w), bool)) | rle_decode(h, w, counts)
    out = np.zeros((h, w, 1), np.int32)
    for label in sorted(per_label):
        out[per_label[label], 0] = label
    return out
