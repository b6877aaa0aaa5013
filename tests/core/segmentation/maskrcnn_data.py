"""A small COCO dataset with polygon and RLE masks, and the expectations derived from it
(shared by the Mask R-CNN-style pipeline tests on the CPU and the GPU)."""

from __future__ import annotations

import json

import numpy as np
from PIL import Image

from chute import fn, pipeline_def, types
from chute.ops.segmentation.mask_kernels import polygon_mask, rle_decode

SIZES = [(20, 33), (20, 27), (20, 40), (20, 24)]  # (H, W): the shorter side is 20 everywhere
BATCH = len(SIZES)


def write_dataset(tmp_path):
    """PNG images (lossless: decoding gives them back) and a COCO file with polygons (one
    object of two polygons) and an RLE object. Returns root, annotations path, images, anns."""
    rng = np.random.default_rng(0)
    root = tmp_path / "images"
    root.mkdir()
    images, infos, anns = [], [], []
    for k, (h, w) in enumerate(SIZES):
        img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        Image.fromarray(img).save(root / f"{k}.png")
        images.append(img)
        infos.append({"id": k + 1, "file_name": f"{k}.png", "height": h, "width": w})
        objects = []
        for j in range(1 + k % 3):
            x0, y0 = rng.uniform(0, w / 2), rng.uniform(0, h / 2)
            x1, y1 = x0 + rng.uniform(4, w / 2), y0 + rng.uniform(4, h / 2)
            poly = [x0, y0, x1, y0 + 1, x1 - 1, y1, x0 + 2, y1 - 2]
            segmentation = [poly]
            if j == 1:  # a second polygon for this object
                segmentation.append([x1, y1, x1 + 3, y1, x1 + 1, y1 + 3])
            objects.append(
                {
                    "bbox": [x0, y0, x1 - x0, y1 - y0],
                    "category_id": [10, 20, 30][(j + k) % 3],
                    "segmentation": segmentation,
                    "iscrowd": 0,
                }
            )
        if k == 2:  # a crowd object given as an RLE: a 5-row block in column 3
            objects.append(
                {
                    "bbox": [3, 4, 1, 5],
                    "category_id": 20,
                    "segmentation": {"size": [h, w], "counts": [3 * h + 4, 5, h * w - 3 * h - 9]},
                    "iscrowd": 1,
                }
            )
        for obj in objects:
            anns.append({"id": len(anns) + 1, "image_id": k + 1, **obj})
    categories = [{"id": c, "name": str(c)} for c in (10, 20, 30)]  # remapped to 1, 2, 3
    path = tmp_path / "instances.json"
    path.write_text(json.dumps({"images": infos, "annotations": anns, "categories": categories}))
    per_image = [[a for a in anns if a["image_id"] == k + 1] for k in range(BATCH)]
    return str(root), str(path), images, per_image


def expected_pixelwise(h, w, objects):
    """Each pixel the label (1..3) of its object, larger labels over smaller ones."""
    out = np.zeros((h, w), np.int32)
    per_label = {}
    for obj in objects:
        label = {10: 1, 20: 2, 30: 3}[obj["category_id"]]
        seg = obj["segmentation"]
        if isinstance(seg, dict):
            mask = rle_decode(h, w, seg["counts"])
        else:
            mask = np.zeros((h, w), bool)
            for poly in seg:
                mask |= polygon_mask(h, w, np.asarray(poly).reshape(-1, 2))
        per_label[label] = per_label.get(label, np.zeros((h, w), bool)) | mask
    for label in sorted(per_label):
        out[per_label[label]] = label
    return out


# fn.pad pads every sample to the batch's largest extent, rounded up to the alignment
PADDED = tuple(-(-max(2 * s[d] for s in SIZES) // 32) * 32 for d in (0, 1))  # (64, 96)


def padded(array):
    h, w = array.shape[:2]
    out = np.zeros((*PADDED, *array.shape[2:]), array.dtype)
    out[:h, :w] = array
    return out


def maskrcnn_pipeline(root, ann, selected, gpu: bool):
    """The pipeline both tests run; with ``gpu`` everything after decoding is on the GPU.

    The coin is drawn before any transfer so that both pipelines seed it alike.
    """

    @pipeline_def(batch_size=BATCH, num_threads=2, device_id=0 if gpu else None, seed=21)
    def maskrcnn():
        jpegs, boxes, labels, polygons, vertices = fn.readers.coco(
            file_root=root, annotations_file=ann, polygon_masks=True, ratio=True, ltrb=True,
            name="R",
        )  # fmt: skip
        _, _, _, pixelwise = fn.readers.coco(
            file_root=root, annotations_file=ann, pixelwise_masks=True
        )
        ids = fn.external_source(source=lambda: selected)
        coin = fn.random.coin_flip(probability=0.5)
        img = fn.decoders.image(jpegs, output_type=types.RGB)
        if gpu:
            img, boxes, vertices, pixelwise = (x.gpu() for x in (img, boxes, vertices, pixelwise))
        img = fn.flip(img, horizontal=coin)
        boxes = fn.bb_flip(boxes, ltrb=True, horizontal=coin)
        vertices = fn.coord_flip(vertices, layout="xy", flip_x=coin)
        mask = fn.flip(pixelwise, horizontal=coin)
        sel_polygons, sel_vertices = fn.segmentation.select_masks(
            ids, polygons, vertices.cpu() if gpu else vertices, reindex_masks=True
        )
        img = fn.resize(img, resize_shorter=40, interp_type=types.INTERP_NN)
        mask = fn.resize(mask, resize_shorter=40, interp_type=types.INTERP_NN)
        img = fn.pad(img, axis_names="HW", align=(32, 32))
        mask = fn.pad(mask, axis_names="HW", align=(32, 32))
        return img, boxes, labels, polygons, vertices, sel_polygons, sel_vertices, mask, coin

    return maskrcnn()
