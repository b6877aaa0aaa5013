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
from chute.ops.segmentation.mask_kernels import polygon_mask, rle_decode

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
def pixelwise_mask(sample: CocoSample) -> np.ndarray:
    """The int32 (H, W, 1) mask: each pixel the label of its object, 0 for background.

    Polygons are rasterized and RLEs decoded as COCO does (chute.ops.segmentation.mask_kernels);
    the masks of one label are united and labels painted in ascending order, so where objects
    of two classes overlap the larger label shows, as in DALI. Unlike DALI, a label with both
    polygon and RLE objects (or several RLE objects) keeps all of them (DALI keeps only its
    polygons, or its last RLE), and ``ratio`` does not shrink the masks (DALI rasterizes the
    relative vertices then).
    """
    h, w = sample.height, sample.width
    per_label: dict[int, np.ndarray] = {}

    def add(label: int, mask: np.ndarray) -> None:
        per_label[label] = per_label[label] | mask if label in per_label else mask

    for obj, start, end in sample.polygons:
        add(int(sample.labels[obj]), polygon_mask(h, w, sample.pixel_vertices[start:end]))
    for obj, rh, rw, counts in sample.rles:
        if (rh, rw) != (h, w):
            raise ValueError(f"RLE mask of size {rh}x{rw} on an image of {h}x{w}")
        add(int(sample.labels[obj]), rle_decode(h, w, counts))
    out = np.zeros((h, w, 1), np.int32)
    for label in sorted(per_label):
        out[per_label[label], 0] = label
    return out
