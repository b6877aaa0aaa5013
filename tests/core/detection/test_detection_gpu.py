"""GPU backends of fn.bb_flip and fn.box_encoder against their CPU backends.

The same pipeline runs on the CPU (``device_id=None``) and with the operator on the GPU
(``.gpu()`` inputs), on ragged batches (an empty sample included) and dense ones, with
per-sample flip flags. bb_flip must agree within 1e-6; box_encoder's labels exactly and its
boxes within 1e-5 (float32 log on the device).
"""

from __future__ import annotations

import numpy as np
import pytest
from ssd_anchors import ssd300_anchors

from chute import fn, pipeline_def

pytestmark = pytest.mark.gpu


def _boxes(rng, counts):
    out = []
    for k in counts:
        lo = rng.uniform(0, 0.7, (k, 2))
        hi = np.minimum(lo + rng.uniform(0.02, 0.5, (k, 2)), 1.0)
        out.append(np.concatenate([lo, hi], 1).astype(np.float32))
    return out


def _run(graph, sources, gpu: bool, layouts=None):
    n = len(sources[0])
    layouts = layouts or [None] * len(sources)

    @pipeline_def(batch_size=n, num_threads=2, device_id=0 if gpu else None, seed=2)
    def pipe():
        nodes = [
            fn.external_source(source=lambda s=s: s, layout=layout)
            for s, layout in zip(sources, layouts)
        ]
        out = graph(nodes, gpu)
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)

    p = pipe()
    p.build()
    outs = p.run()
    return [[np.asarray(o.as_cpu().at(i)) if gpu else o.at(i) for i in range(n)] for o in outs]


@pytest.mark.parametrize("counts", [(3, 0, 7, 1, 5), (4, 4, 4)])
@pytest.mark.parametrize("ltrb", [False, True])
def test_bb_flip_gpu_matches_cpu(counts, ltrb):
    rng = np.random.default_rng(len(counts))
    boxes = _boxes(rng, counts)
    hs = [np.int32(i % 2) for i in range(len(counts))]
    vs = [np.int32((i // 2) % 2) for i in range(len(counts))]

    def graph(nodes, gpu):
        b, h, v = nodes
        b = b.gpu() if gpu else b
        return fn.bb_flip(b, horizontal=h, vertical=v, ltrb=ltrb), fn.bb_flip(b, vertical=1)

    cpu = _run(graph, [boxes, hs, vs], gpu=False)
    gpu = _run(graph, [boxes, hs, vs], gpu=True)
    for c_out, g_out in zip(cpu, gpu):
        for c, g in zip(c_out, g_out):
            assert c.shape == g.shape
            np.testing.assert_allclose(g, c, atol=1e-6)


@pytest.mark.parametrize("offset", [False, True])
@pytest.mark.parametrize("counts", [(2, 0, 9, 1), (5, 5)])
def test_box_encoder_gpu_matches_cpu_on_ssd300(offset, counts):
    anchors = ssd300_anchors().ravel().tolist()
    rng = np.random.default_rng(7)
    boxes = _boxes(rng, counts)
    labels = [rng.integers(1, 81, len(b)).astype(np.int32) for b in boxes]

    def graph(nodes, gpu):
        b, lb = nodes
        if gpu:
            b, lb = b.gpu(), lb.gpu()
        return fn.box_encoder(
            b, lb, anchors=anchors, offset=offset, criteria=0.5, scale=300.0,
            stds=[0.1, 0.1, 0.2, 0.2],
        )  # fmt: skip

    cpu_boxes, cpu_labels = _run(graph, [boxes, labels], gpu=False)
    gpu_boxes, gpu_labels = _run(graph, [boxes, labels], gpu=True)
    for i in range(len(counts)):
        assert gpu_boxes[i].shape == (8732, 4) and gpu_labels[i].shape == (8732,)
        assert gpu_labels[i].dtype == np.int32
        np.testing.assert_array_equal(gpu_labels[i], cpu_labels[i])
        np.testing.assert_allclose(gpu_boxes[i], cpu_boxes[i], rtol=1e-5, atol=1e-5)


def test_ssd300_pipeline_gpu_matches_cpu():
    """The SSD300 pipeline body with the image and box ops on the GPU (random_bbox_crop stays
    on the CPU, as in DALI): the same windows and coin flips as on the CPU, the same encoded
    labels, boxes within 1e-5 and 300x300 images within 2 levels (mean < 0.5)."""
    rng = np.random.default_rng(5)
    counts = (1, 3, 0, 6)
    images = [rng.integers(0, 256, (90 + 13 * i, 140 - 7 * i, 3), np.uint8) for i in counts]
    boxes = _boxes(rng, counts)
    labels = [rng.integers(1, 81, len(b)).astype(np.int32) for b in boxes]
    anchors = ssd300_anchors().ravel().tolist()

    def graph(nodes, gpu):
        img, bb, lb = nodes
        anchor, shape, bb, lb = fn.random_bbox_crop(
            bb, lb, thresholds=[0.1, 0.3, 0.5, 0.7, 0.9], scaling=[0.3, 1.0],
            aspect_ratio=[0.5, 2.0], bbox_layout="xyXY", allow_no_crop=True, num_attempts=50,
        )  # fmt: skip
        cropped = fn.slice(img, anchor, shape, axis_names="WH")
        coin = fn.random.coin_flip(probability=0.5)  # before the transfers: the same draws
        if gpu:
            cropped, bb, lb = cropped.gpu(), bb.gpu(), lb.gpu()
        flipped = fn.flip(cropped, horizontal=coin)
        resized = fn.resize(flipped, resize_x=300, resize_y=300)
        bb = fn.bb_flip(bb, ltrb=True, horizontal=coin)
        enc, enc_labels = fn.box_encoder(
            bb, lb, anchors=anchors, criteria=0.5, offset=True, stds=[0.1, 0.1, 0.2, 0.2]
        )
        return resized, enc, enc_labels, anchor, shape, coin

    sources, layouts = [images, boxes, labels], ["HWC", None, None]
    cpu = _run(graph, sources, gpu=False, layouts=layouts)
    gpu = _run(graph, sources, gpu=True, layouts=layouts)
    c_img, c_enc, c_lab, c_anchor, c_shape, c_coin = cpu
    g_img, g_enc, g_lab, g_anchor, g_shape, g_coin = gpu
    for i in range(len(counts)):
        np.testing.assert_array_equal(g_anchor[i], c_anchor[i])
        np.testing.assert_array_equal(g_shape[i], c_shape[i])
        np.testing.assert_array_equal(g_coin[i], c_coin[i])
        np.testing.assert_array_equal(g_lab[i], c_lab[i])
        np.testing.assert_allclose(g_enc[i], c_enc[i], rtol=1e-5, atol=1e-5)
        assert g_img[i].shape == c_img[i].shape == (300, 300, 3)
        d = np.abs(g_img[i].astype(np.int16) - c_img[i].astype(np.int16))
        assert d.max() <= 2 and d.mean() < 0.5
