"""A tiny COCO dataset laid out as DALI_extra's db/coco (images/ and instances.json).

The ported DALI examples read ``$DALI_EXTRA_PATH/db/coco``; their tests write this dataset
there. Every object's polygons lie inside its box, so that checks can follow boxes and masks
through the same transforms.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from PIL import Image

SIZES = [(60, 80), (72, 64), (48, 96), (80, 80), (64, 88), (56, 70), (90, 60), (66, 66)]
CATEGORIES = (3, 7, 12)  # COCO ids; the reader remaps them to 1, 2, 3


def write_coco(root: str | Path) -> Path:
    """Writes root/db/coco/{images/*.jpg, instances.json}; returns root/db/coco."""
    rng = np.random.default_rng(0)
    coco = Path(root) / "db" / "coco"
    (coco / "images").mkdir(parents=True, exist_ok=True)
    infos, anns = [], []
    for k, (h, w) in enumerate(SIZES):
        yy, xx = np.mgrid[0:h, 0:w]
        img = np.stack([xx * 255 // w, yy * 255 // h, np.full_like(xx, 30 * k)], -1)
        name = f"{k:06d}.jpg"
        Image.fromarray(img.astype(np.uint8)).save(coco / "images" / name, quality=95)
        infos.append({"id": k + 1, "file_name": name, "height": h, "width": w})
        for j in range(1 + k % 3):
            bw, bh = rng.uniform(0.25, 0.6) * w, rng.uniform(0.25, 0.6) * h
            x0, y0 = rng.uniform(0, w - bw), rng.uniform(0, h - bh)
            x1, y1 = x0 + bw, y0 + bh
            # a quadrilateral touching all four sides of the box, and for some objects a
            # second polygon (a triangle) inside it
            segmentation = [[x0 + bw / 2, y0, x1, y0 + bh / 3, x0 + bw / 3, y1, x0, y0 + bh / 2]]
            if j == 1:
                segmentation.append([x0 + 1, y0 + 1, x0 + bw / 3, y0 + 1, x0 + 1, y0 + bh / 3])
            anns.append(
                {
                    "id": len(anns) + 1,
                    "image_id": k + 1,
                    "bbox": [x0, y0, bw, bh],
                    "area": bw * bh,
                    "category_id": CATEGORIES[(j + k) % 3],
                    "segmentation": segmentation,
                    "iscrowd": 0,
                }
            )
    categories = [{"id": c, "name": f"class{c}"} for c in CATEGORIES]
    doc = {"images": infos, "annotations": anns, "categories": categories}
    (coco / "instances.json").write_text(json.dumps(doc))
    return coco
