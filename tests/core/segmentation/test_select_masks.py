"""fn.segmentation.select_masks: DALI's documented examples, masks of several polygons,
reindexing, vertex types and widths kept, empty selections, and errors."""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, pipeline_def

POLYGONS = np.array([[0, 0, 3], [1, 3, 7], [2, 7, 10]], np.int32)
VERTICES = np.arange(20, dtype=np.float32).reshape(10, 2)  # vertex k is [2k, 2k + 1]


def select(ids, polygons=POLYGONS, vertices=VERTICES, **kw):
    """fn.segmentation.select_masks on one sample: (polygons, vertices)."""

    @pipeline_def(batch_size=1, num_threads=1, device_id=None, seed=1)
    def pipe():
        i = fn.external_source(source=lambda: [np.asarray(ids, np.int32).reshape(-1)])
        p = fn.external_source(source=lambda: [polygons])
        v = fn.external_source(source=lambda: [vertices])
        return tuple(fn.segmentation.select_masks(i, p, v, **kw))

    pipeline = pipe()
    pipeline.build()
    out_p, out_v = pipeline.run()
    return out_p.at(0), out_v.at(0)


def test_dali_examples():
    polygons, vertices = select([1])
    assert polygons.tolist() == [[1, 0, 4]] and polygons.dtype == np.int32
    np.testing.assert_array_equal(vertices, VERTICES[3:7])
    polygons, vertices = select([2, 0], reindex_masks=True)
    assert polygons.tolist() == [[0, 0, 3], [1, 3, 6]]
    np.testing.assert_array_equal(vertices, np.concatenate([VERTICES[7:10], VERTICES[0:3]]))
    polygons, vertices = select([2, 0])
    assert polygons.tolist() == [[2, 0, 3], [0, 3, 6]]


def test_every_polygon_of_a_mask_and_other_vertex_types():
    # mask 4 has two polygons (vertices 0..3 and 6..9); mask 9 one (3..6)
    polygons = np.array([[4, 0, 3], [9, 3, 6], [4, 6, 9]], np.int32)
    vertices = np.arange(27, dtype=np.float64).reshape(9, 3)  # 3-D vertices
    out_p, out_v = select([4], polygons, vertices, reindex_masks=True)
    assert out_p.tolist() == [[0, 0, 3], [0, 3, 6]]
    np.testing.assert_array_equal(out_v, np.concatenate([vertices[0:3], vertices[6:9]]))
    assert out_v.dtype == np.float64
    out_p, out_v = select([], polygons, vertices)
    assert out_p.shape == (0, 3) and out_v.shape == (0, 3)


@pytest.mark.parametrize(
    ("ids", "polygons", "match"),
    [
        ([1, 1], POLYGONS, "repeated"),
        ([5], POLYGONS, "mask id 5 is not present"),
        ([0], np.array([[0, 2, 12]], np.int32), r"\[2, 12\) of mask id 0 is out of bounds"),
        ([0], np.array([[0, 3, 1]], np.int32), "reversed"),
        ([0], np.array([[0, 1]], np.int32), r"\(P, 3\)"),
    ],
)
def test_errors_name_the_sample(ids, polygons, match):
    with pytest.raises(Exception, match=rf"select_masks.*sample 0.*{match}"):
        select(ids, polygons)
