"""A Mask R-CNN-style input pipeline on the CPU, end to end, checked sample by sample.

readers.coco (polygon masks, relative ltrb boxes; then pixelwise masks) -> decoders.image ->
one coin per sample flips the image, the boxes (bb_flip), the polygon vertices (coord_flip)
and the pixelwise mask together -> segmentation.select_masks keeps the objects of some
classes -> resize (shorter side doubled, nearest neighbour, so the expected image is a
NumPy repeat) -> pad to the batch's largest extent rounded up to 32. Every output is compared with what the test computes
from the annotations it wrote and the images it saved: flipped or not as the coin said.
"""

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


def test_maskrcnn_pipeline(tmp_path):
    root, ann, images, objects = write_dataset(tmp_path)
    # per sample, the objects of classes 1 and 3 (ids 10 and 30), last first
    selected = [
        np.array([j for j in reversed(range(len(o))) if o[j]["category_id"] != 20], np.int32)
        for o in objects
    ]

    @pipeline_def(batch_size=BATCH, num_threads=2, device_id=None, seed=21)
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
        img = fn.flip(fn.decoders.image(jpegs, output_type=types.RGB), horizontal=coin)
        boxes = fn.bb_flip(boxes, ltrb=True, horizontal=coin)
        vertices = fn.coord_flip(vertices, layout="xy", flip_x=coin)
        mask = fn.flip(pixelwise, horizontal=coin)
        sel_polygons, sel_vertices = fn.segmentation.select_masks(
            ids, polygons, vertices, reindex_masks=True
        )
        img = fn.resize(img, resize_shorter=40, interp_type=types.INTERP_NN)
        mask = fn.resize(mask, resize_shorter=40, interp_type=types.INTERP_NN)
        img = fn.pad(img, axis_names="HW", align=(32, 32))
        mask = fn.pad(mask, axis_names="HW", align=(32, 32))
        return img, boxes, labels, polygons, vertices, sel_polygons, sel_vertices, mask, coin

    p = maskrcnn()
    p.build()
    flips = set()
    for _ in range(3):  # the reader wraps around: the same images, new coins
        img, boxes, labels, polygons, vertices, sel_p, sel_v, mask, coin = p.run()
        for i in range(BATCH):
            h, w = SIZES[i]
            flip = bool(coin.at(i))
            flips.add(flip)
            mirror = (lambda a: a[:, ::-1]) if flip else (lambda a: a)

            source = mirror(images[i])
            expect_img = padded(np.repeat(np.repeat(source, 2, 0), 2, 1))
            assert img.at(i).shape == (*PADDED, 3)
            np.testing.assert_array_equal(img.at(i), expect_img)

            objs = objects[i]
            ltrb = np.array(
                [[b[0], b[1], b[0] + b[2], b[1] + b[3]] for b in (o["bbox"] for o in objs)]
            )
            rel = (ltrb / [w, h, w, h]).reshape(-1, 4)
            if flip:
                rel = np.stack([1 - rel[:, 2], rel[:, 1], 1 - rel[:, 0], rel[:, 3]], 1)
            np.testing.assert_allclose(boxes.at(i), rel, atol=1e-6)
            assert labels.at(i).tolist() == [{10: 1, 20: 2, 30: 3}[o["category_id"]] for o in objs]

            # polygons as the file lists them; vertices relative, mirrored with the image
            rows, verts = [], []
            for j, o in enumerate(objs):
                if isinstance(o["segmentation"], dict):
                    continue
                for poly in o["segmentation"]:
                    xy = np.asarray(poly).reshape(-1, 2) / [w, h]
                    rows.append([j, len(verts), len(verts) + len(xy)])
                    verts.extend(xy.tolist())
            verts = np.asarray(verts).reshape(-1, 2)
            if flip:
                verts[:, 0] = 1 - verts[:, 0]
            assert polygons.at(i).tolist() == rows
            np.testing.assert_allclose(vertices.at(i), verts, atol=1e-6)

            # select_masks: the chosen objects' polygons in the chosen order, renumbered
            exp_p, exp_v = [], []
            for position, j in enumerate(selected[i]):
                for obj, start, end in rows:
                    if obj == j:
                        exp_p.append([position, len(exp_v), len(exp_v) + end - start])
                        exp_v.extend(verts[start:end].tolist())
            assert sel_p.at(i).tolist() == exp_p
            np.testing.assert_allclose(sel_v.at(i), np.asarray(exp_v).reshape(-1, 2), atol=1e-6)

            # the pixelwise mask: rasterized from the file, mirrored, doubled, padded
            raster = mirror(expected_pixelwise(h, w, objs))[..., None]
            expect_mask = padded(np.repeat(np.repeat(raster, 2, 0), 2, 1))
            assert mask.at(i).dtype == np.int32
            np.testing.assert_array_equal(mask.at(i), expect_mask)
            if i == 2:  # the RLE block shows with label 2 unless a class-3 object covers it
                assert set(np.unique(expect_mask)) >= {0, 2}
    assert flips == {False, True}
