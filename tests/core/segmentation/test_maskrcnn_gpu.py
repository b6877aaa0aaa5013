"""GPU backends of fn.coord_flip and fn.coord_transform against their CPU backends, and the
Mask R-CNN-style pipeline with everything after decoding on the GPU against the same
pipeline on the CPU.

coord_flip must agree exactly (both compute in the output type), coord_transform within
1e-6 (float64 on both, summed in another order), the pipeline exactly but for the boxes
(1e-6): flips, nearest-neighbour doubling and padding move values without arithmetic.
"""

from __future__ import annotations

import numpy as np
import pytest
from maskrcnn_data import BATCH, maskrcnn_pipeline, write_dataset

from chute import fn, pipeline_def

pytestmark = pytest.mark.gpu


def _run(graph, sources, gpu: bool):
    n = len(sources[0])

    @pipeline_def(batch_size=n, num_threads=2, device_id=0 if gpu else None, seed=2)
    def pipe():
        nodes = [fn.external_source(source=lambda s=s: s) for s in sources]
        out = graph(nodes, (lambda x: x.gpu()) if gpu else (lambda x: x))
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)

    p = pipe()
    p.build()
    outs = p.run()
    return [[np.asarray(o.as_cpu().at(i)) if gpu else o.at(i) for i in range(n)] for o in outs]


def _both(graph, sources):
    return _run(graph, sources, gpu=False), _run(graph, sources, gpu=True)


def test_coord_flip_gpu_matches_cpu():
    rng = np.random.default_rng(0)
    points = [rng.random((k, 2)).astype(np.float32) for k in (3, 0, 5, 1)]
    boxes = [rng.random((k, 4)).astype(np.float32) for k in (2, 4, 0, 3)]
    flips_x = [np.int32(v) for v in (1, 0, 1, 1)]
    flips_y = [np.int32(v) for v in (0, 1, 1, 0)]
    centers = [np.float32(v) for v in (0.5, 0.25, 0.75, 0.1)]
    volumes = [rng.random((6, 3)) for _ in range(4)]  # dense float64 xyz

    def graph(nodes, dev):
        p, b, fx, fy, c, v = nodes
        return (
            fn.coord_flip(dev(p), flip_x=fx, flip_y=fy, center_x=c),
            fn.coord_flip(dev(b), layout="xy", flip_x=fx, flip_y=1, center_y=c),
            fn.coord_flip(dev(v), flip_x=0, flip_z=fy, center_z=0.3),
        )

    cpu, gpu = _both(graph, [points, boxes, flips_x, flips_y, centers, volumes])
    for c_out, g_out in zip(cpu, gpu):
        for c, g in zip(c_out, g_out):
            assert c.dtype == g.dtype and c.shape == g.shape
            np.testing.assert_array_equal(c, g)


def test_coord_transform_gpu_matches_cpu():
    rng = np.random.default_rng(1)
    points = [rng.random((k, 2)).astype(np.float32) for k in (4, 0, 7)]
    mts = [rng.normal(size=(2, 3)).astype(np.float32) for _ in range(3)]
    mats = [rng.normal(size=(3, 2)).astype(np.float32) for _ in range(3)]  # 2-D -> 3-D

    def graph(nodes, dev):
        p, mt, m = nodes
        return (
            fn.coord_transform(dev(p), MT=mt),
            fn.coord_transform(dev(p), M=m, T=[1.0, 2.0, 3.0]),
            fn.coord_transform(dev(p), M=2.0, T=0.5, dtype=np.float64),
        )

    cpu, gpu = _both(graph, [points, mts, mats])
    for c_out, g_out in zip(cpu, gpu):
        for c, g in zip(c_out, g_out):
            assert c.dtype == g.dtype and c.shape == g.shape
            np.testing.assert_allclose(c, g, rtol=1e-6, atol=1e-6)


def test_maskrcnn_pipeline_gpu_matches_cpu(tmp_path):
    root, ann, _, objects = write_dataset(tmp_path)
    # every object drawn as polygons (the RLE one has none), last first
    selected = [
        np.array(
            [j for j in reversed(range(len(o))) if isinstance(o[j]["segmentation"], list)], np.int32
        )
        for o in objects
    ]
    results = []
    for gpu in (False, True):
        p = maskrcnn_pipeline(root, ann, selected, gpu=gpu)
        p.build()
        runs = []
        for _ in range(2):
            outs = p.run()
            runs.append([[np.asarray(o.as_cpu().at(i)) for i in range(BATCH)] for o in outs])
        results.append(runs)
    names = ["image", "boxes", "labels", "polygons", "vertices", "sel_p", "sel_v", "mask", "coin"]
    for cpu_run, gpu_run in zip(*results):
        for name, c_out, g_out in zip(names, cpu_run, gpu_run):
            for i, (c, g) in enumerate(zip(c_out, g_out)):
                assert c.dtype == g.dtype and c.shape == g.shape, (name, i)
                if name == "boxes":
                    np.testing.assert_allclose(c, g, atol=1e-6, err_msg=f"{name} {i}")
                else:
                    np.testing.assert_array_equal(c, g, err_msg=f"{name} {i}")
