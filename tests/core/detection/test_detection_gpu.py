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


def _run(graph, sources, gpu: bool):
    n = len(sources[0])

    @pipeline_def(batch_size=n, num_threads=2, device_id=0 if gpu else None, seed=2)
    def pipe():
        nodes = [fn.external_source(source=lambda s=s: s) for s in sources]
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
