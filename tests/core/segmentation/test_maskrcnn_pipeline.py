"""A Mask R-CNN-style input pipeline on the CPU, end to end, checked sample by sample.

readers.coco (polygon masks, relative ltrb boxes; then pixelwise masks) -> decoders.image ->
one coin per sample flips the image, the boxes (bb_flip), the polygon vertices (coord_flip)
and the pixelwise mask together -> segmentation.select_masks keeps the objects of some
classes -> resize (shorter side doubled, nearest neighbour, so the expected image is a
NumPy repeat) -> pad to the batch's largest extent rounded up to 32. Every output is
compared with what the test computes from the annotations it wrote and the images it
saved: flipped or not as the coin said.
"""

from __future__ import annotations

import numpy as np
from maskrcnn_data import (
    BATCH,
    PADDED,
    SIZES,
    expected_pixelwise,
    maskrcnn_pipeline,
    padded,
    write_dataset,
)


def test_maskrcnn_pipeline(tmp_path):
    root, ann, images, objects = write_dataset(tmp_path)
    # per sample, the objects of classes 1 and 3 (ids 10 and 30), last first
    selected = [
        np.array([j for j in reversed(range(len(o))) if o[j]["category_id"] != 20], np.int32)
        for o in objects
    ]

    p = maskrcnn_pipeline(root, ann, selected, gpu=False)
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
