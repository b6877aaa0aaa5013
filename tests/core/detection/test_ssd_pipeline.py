"""An SSD300-style training pipeline on the CPU, end to end.

external_source (images, ltrb boxes, labels) -> random_bbox_crop -> slice -> bb_flip + flip
-> resize to 300x300 -> box_encoder (offsets against SSD300's 8,732 default boxes). Checks
shapes and dtypes, that the image crop is the window random_bbox_crop chose, and that the
encoded boxes decode back to the ground truth transformed independently here (remapped into
the window, then mirrored when the coin said so).
"""

from __future__ import annotations

import numpy as np
from ssd_anchors import decode, ssd300_anchors

from chute import fn, pipeline_def

BATCH = 4
MEANS, STDS = (0.0, 0.0, 0.0, 0.0), (0.1, 0.1, 0.2, 0.2)


def _data(seed: int = 0):
    rng = np.random.default_rng(seed)
    images, boxes, labels = [], [], []
    for i in range(BATCH):
        h, w = 120 + 17 * i, 160 - 9 * i
        images.append(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        k = 1 + i
        lo = rng.uniform(0, 0.6, (k, 2))
        hi = np.minimum(lo + rng.uniform(0.15, 0.4, (k, 2)), 1.0)
        boxes.append(np.concatenate([lo, hi], 1).astype(np.float32))
        labels.append(rng.integers(1, 81, k).astype(np.int32))
    return images, boxes, labels


def test_ssd300_pipeline_shapes_and_decoded_ground_truth():
    images, boxes, labels = _data()
    anchors = ssd300_anchors()

    @pipeline_def(batch_size=BATCH, num_threads=2, device_id=None, seed=11)
    def ssd():
        img = fn.external_source(source=lambda: images, layout="HWC")
        bb = fn.external_source(source=lambda: boxes)
        lb = fn.external_source(source=lambda: labels)
        anchor, shape, bb_crop, lb_crop = fn.random_bbox_crop(
            bb, lb, thresholds=[0.1, 0.3, 0.5, 0.7, 0.9], scaling=[0.3, 1.0],
            aspect_ratio=[0.5, 2.0], bbox_layout="xyXY", allow_no_crop=True, num_attempts=50,
        )  # fmt: skip
        cropped = fn.slice(img, anchor, shape, axis_names="WH")
        coin = fn.random.coin_flip(probability=0.5)
        flipped_boxes = fn.bb_flip(bb_crop, ltrb=True, horizontal=coin)
        flipped = fn.flip(cropped, horizontal=coin)
        resized = fn.resize(flipped, resize_x=300, resize_y=300)
        enc, enc_labels = fn.box_encoder(
            flipped_boxes, lb_crop, anchors=anchors.ravel().tolist(), criteria=0.5, offset=True,
            scale=1.0, means=list(MEANS), stds=list(STDS),
        )  # fmt: skip
        return resized, enc, enc_labels, anchor, shape, coin, cropped, bb_crop, lb_crop

    p = ssd()
    p.build()
    for _ in range(2):
        resized, enc, enc_labels, anchor, shape, coin, cropped, bb_crop, lb_crop = p.run()
        for i in range(BATCH):
            assert resized.at(i).shape == (300, 300, 3) and resized.at(i).dtype == np.uint8
            e, lab = enc.at(i), enc_labels.at(i)
            assert e.shape == (8732, 4) and e.dtype == np.float32
            assert lab.shape == (8732,) and lab.dtype == np.int32

            # the image crop is the chosen window
            h, w = images[i].shape[:2]
            a, s = anchor.at(i), shape.at(i)
            ch, cw = cropped.at(i).shape[:2]
            assert abs(cw - s[0] * w) <= 1 and abs(ch - s[1] * h) <= 1

            # ground truth transformed independently: centroid filter, remap, mirror
            gt = boxes[i]
            centre = (gt[:, :2] + gt[:, 2:]) / 2
            keep = np.all((centre >= a) & (centre <= a + s), axis=1)
            lo = np.clip((np.maximum(gt[keep, :2], a) - a) / s, 0, 1)
            hi = np.clip((np.minimum(gt[keep, 2:], a + s) - a) / s, 0, 1)
            if coin.at(i):
                lo, hi = (
                    np.stack([1 - hi[:, 0], lo[:, 1]], 1),
                    np.stack([1 - lo[:, 0], hi[:, 1]], 1),
                )
            expected = np.concatenate([lo, hi], 1)
            np.testing.assert_array_equal(lb_crop.at(i), labels[i][keep])
            np.testing.assert_allclose(bb_crop.at(i)[:, [1, 3]], expected[:, [1, 3]], atol=1e-5)

            matched = lab > 0
            assert matched.sum() >= len(expected)  # every box claims at least its best anchor
            assert set(lab[matched].tolist()) == set(labels[i][keep].tolist())
            decoded = decode(e[matched], anchors[matched], MEANS, STDS)
            for row, row_label in zip(decoded, lab[matched]):
                err = np.abs(expected - row).max(axis=1)
                j = int(np.argmin(err))
                assert err[j] < 1e-4 and labels[i][keep][j] == row_label
            assert not e[~matched].any()
