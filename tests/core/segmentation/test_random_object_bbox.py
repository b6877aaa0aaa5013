"""fn.segmentation.random_object_bbox: blob boxes against SciPy's labelling (2-D through
OpenCV, other ranks through the union-find), every format and argument by hand-built masks,
invariants over many draws, the same seed giving the same boxes, and errors."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import ndimage

from chute import fn, pipeline_def
from chute.ops.segmentation import segmentation_kernels as sk


def scipy_boxes(values, background=0):
    """Boxes of the blobs of equal non-background labels, by SciPy (face connectivity)."""
    boxes = []
    for label in np.unique(values[values != background]):
        blobs, _ = ndimage.label(values == label)
        for sl in ndimage.find_objects(blobs):
            boxes.append((tuple(s.start for s in sl), tuple(s.stop for s in sl), int(label)))
    return sorted(boxes)


@pytest.mark.parametrize("shape", [(40,), (23, 31), (9, 11, 7), (5, 6, 4, 3), (1, 17, 1, 13)])
def test_blob_boxes_match_scipy(shape):
    rng = np.random.default_rng(sum(shape))
    for _ in range(5):
        values = (rng.random(shape) < 0.45) * rng.integers(1, 4, shape)
        lo, hi = sk.blob_boxes(values.astype(np.uint8), 0)
        ref = scipy_boxes(values)
        assert len(lo) == len(ref)
        assert sorted(zip(map(tuple, lo.tolist()), map(tuple, hi.tolist()))) == sorted(
            (a, b) for a, b, _ in ref
        )


def test_two_dimensional_paths_agree_in_order():
    rng = np.random.default_rng(1)
    values = ((rng.random((30, 40)) < 0.5) * rng.integers(1, 3, (30, 40))).astype(np.int32)
    fg = values != 0
    flat_a, roots_a = sk._components_2d(values, fg)
    flat_b, roots_b = sk._components_nd(values, fg)
    np.testing.assert_array_equal(flat_a, flat_b)
    np.testing.assert_array_equal(roots_a, roots_b)  # each blob named by its first pixel


MASK = np.zeros((10, 12), np.uint8)
MASK[1:3, 1:4] = 1  # class 1, 2x3
MASK[6:9, 0:2] = 1  # class 1, 3x2
MASK[5:10, 6:11] = 2  # class 2, 5x5
MASK[0, 8] = 2  # class 2, 1x1
MASK[2:4, 4:6] = 3  # class 3 touching class 1: a blob of its own
BOXES = {
    1: {((1, 1), (3, 4)), ((6, 0), (9, 2))},
    2: {((5, 6), (10, 11)), ((0, 8), (1, 9))},
    3: {((2, 4), (4, 6))},
}


def run_bbox(masks, iterations=1, seed=3, **kw):
    n = len(masks)

    @pipeline_def(batch_size=n, num_threads=2, device_id=None, seed=seed)
    def pipe():
        m = fn.external_source(source=lambda: masks)
        out = fn.segmentation.random_object_bbox(m, **kw)
        return tuple(out) if isinstance(out, list) else (out,)

    p = pipe()
    p.build()
    return [[[o.at(i) for i in range(n)] for o in p.run()] for _ in range(iterations)]


def test_every_draw_is_a_blob_of_its_class_and_all_are_drawn():
    seen = set()
    for start, end, cls in run_bbox(
        [MASK] * 8, iterations=10, format="start_end", output_class=True
    ):
        for s, e, c in zip(start, end, cls):
            assert s.dtype == np.int32 and c.shape == () and c.dtype == np.int32
            box = (tuple(s.tolist()), tuple(e.tolist()))
            assert box in BOXES[int(c)]
            seen.add(box)
    assert seen == set().union(*BOXES.values())


def test_formats():
    mask = np.zeros((6, 7), np.uint8)
    mask[2:5, 1:3] = 4
    (((anchor,), (shape,)),) = run_bbox([mask])
    assert anchor.tolist() == [2, 1] and shape.tolist() == [3, 2]
    (((box,),),) = run_bbox([mask], format="box")
    assert box.tolist() == [2, 1, 5, 3] and box.dtype == np.int32
    # an (H, W, 1) mask: boxes span the channel too
    (((start,), (end,)),) = run_bbox([mask[..., None]], format="start_end")
    assert start.tolist() == [2, 1, 0] and end.tolist() == [5, 3, 1]


def test_classes_weights_threshold_k_largest():
    for s, e, c in zip(
        *run_bbox([MASK] * 6, format="start_end", output_class=True, classes=[2])[0]
    ):
        assert int(c) == 2 and (tuple(s), tuple(e)) in BOXES[2]
    # weights on labels 1, 2, 3 (background 0): only class 3
    out = run_bbox([MASK] * 4, format="box", output_class=True, class_weights=[0, 0, 1])[0]
    assert [int(c) for c in out[1]] == [3] * 4
    assert all(b.tolist() == [2, 4, 4, 6] for b in out[0])
    # k_largest=1 of class 2: always the 5x5 blob
    out = run_bbox([MASK] * 4, format="box", classes=[2], k_largest=1)[0]
    assert all(b.tolist() == [5, 6, 10, 11] for b in out[0])
    # threshold [3, 3]: only the 5x5 blob of class 2 qualifies; class 1 and 3 are dropped
    out = run_bbox([MASK] * 6, format="box", output_class=True, threshold=[3, 3])[0]
    assert all(b.tolist() == [5, 6, 10, 11] for b in out[0]) and {int(c) for c in out[1]} == {2}
    # nothing qualifies: the whole input and the background label
    out = run_bbox([MASK] * 2, format="box", output_class=True, threshold=[6, 6])[0]
    assert all(b.tolist() == [0, 0, 10, 12] for b in out[0]) and [int(c) for c in out[1]] == [0, 0]


def test_foreground_prob_background_and_empty_masks():
    out = run_bbox([MASK] * 3, output_class=True, foreground_prob=0.0, background=7)[0]
    assert [a.tolist() for a in out[0]] == [[0, 0]] * 3 and [s.tolist() for s in out[1]] == [
        [10, 12]
    ] * 3
    assert [int(c) for c in out[2]] == [7] * 3
    # background 2: class 0 is foreground now, its blob is the rest of the mask
    out = run_bbox([np.where(MASK == 2, 2, 0).astype(np.uint8)], format="box", background=2)[0]
    assert out[0][0].tolist() == [0, 0, 10, 12]
    # classes containing 0 and no background given: the background becomes -1
    zeros = np.zeros((4, 5), np.int16)
    zeros[1:3, 1:3] = 1
    out = run_bbox([zeros] * 4, format="box", output_class=True, classes=[0, 1])[0]
    for b, c in zip(*out):
        assert (int(c), tuple(b.tolist())) in {(0, (0, 0, 4, 5)), (1, (1, 1, 3, 3))}
    empty = np.zeros((0, 5), np.uint8)
    out = run_bbox([empty], format="box", output_class=True)[0]
    assert out[0][0].tolist() == [0, 0, 0, 5] and int(out[1][0]) == 0


def test_ignore_class_picks_among_all_blobs():
    seen = set()
    for start, end in run_bbox([MASK] * 8, iterations=8, format="start_end", ignore_class=True):
        for s, e in zip(start, end):
            seen.add((tuple(s.tolist()), tuple(e.tolist())))
    assert seen == set().union(*BOXES.values())


def test_same_seed_same_boxes_and_cache_changes_nothing():
    rng = np.random.default_rng(5)
    masks = [
        ((rng.random((16, 16)) < 0.4) * rng.integers(1, 4, (16, 16))).astype(np.uint8)
        for _ in range(5)
    ]
    a = run_bbox(masks, iterations=3, seed=9, format="box")
    b = run_bbox(masks, iterations=3, seed=9, format="box", cache_objects=True)
    c = run_bbox(masks, iterations=3, seed=10, format="box")
    flat = lambda runs: [x.tolist() for r in runs for o in r for x in o]  # noqa: E731
    assert flat(a) == flat(b) and flat(a) != flat(c)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        (dict(ignore_class=True, classes=[1]), "classes"),
        (dict(ignore_class=True, output_class=True), "output_class"),
        (dict(k_largest=0), "k_largest"),
        (dict(format="corners"), "format"),
        (dict(foreground_prob=1.5), "foreground_prob"),
    ],
)
def test_argument_errors(kw, match):
    with pytest.raises((ValueError, TypeError), match=match):
        run_bbox([MASK], **kw)


def test_bad_samples_name_the_argument_and_sample():
    thresholds = [np.array([1, 1], np.int32), np.array([1, 1, 1], np.int32)]

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=1)
    def pipe():
        m = fn.external_source(source=lambda: [MASK, MASK])
        t = fn.external_source(source=lambda: thresholds)
        return tuple(fn.segmentation.random_object_bbox(m, threshold=t))

    p = pipe()
    p.build()
    with pytest.raises(Exception, match=r"random_object_bbox.*sample 1.*threshold.*2 values"):
        p.run()
    with pytest.raises(Exception, match=r"random_object_bbox.*background"):
        run_bbox([MASK], classes=[1, 2], background=2)
    with pytest.raises(Exception, match=r"random_object_bbox.*sample 0.*integer or bool"):
        run_bbox([MASK.astype(np.float32)])
