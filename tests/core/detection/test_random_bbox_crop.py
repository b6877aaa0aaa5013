"""fn.random_bbox_crop by invariants: each returned window satisfies the overlap it was drawn
for, the kept boxes are exactly the pruned-and-remapped originals, the same seed gives the
same windows; plus hand-derived small cases (empty box lists, degenerate boxes, fixed
windows, layouts) and argument errors."""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, pipeline_def

BATCH = 6


def sample_boxes(seed: int, n: int = BATCH, most: int = 4) -> list[np.ndarray]:
    """1..``most`` boxes a sample, 0.35..0.6 a side: the whole image has IoU >= 0.12 with each."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        k = 1 + i % most
        lo = rng.uniform(0, 0.4, (k, 2))
        hi = lo + rng.uniform(0.35, 0.6, (k, 2))
        out.append(np.concatenate([lo, hi], 1).astype(np.float32))
    return out


def run_crop(
    boxes, labels=None, seed=3, iterations=1, threads=2, **kw
) -> list[list[list[np.ndarray]]]:
    """Per iteration, the outputs of fn.random_bbox_crop as lists of per-sample arrays."""

    @pipeline_def(batch_size=len(boxes), num_threads=threads, device_id=None, seed=seed)
    def pipe():
        b = fn.external_source(source=lambda: boxes)
        ins = [b]
        if labels is not None:
            ins.append(fn.external_source(source=lambda: labels))
        out = fn.random_bbox_crop(*ins, **kw)
        return tuple(out)

    p = pipe()
    p.build()
    return [[[o.at(i) for i in range(len(boxes))] for o in p.run()] for _ in range(iterations)]


def iou(crop_lo, crop_hi, boxes):
    inter = np.prod(
        np.maximum(np.minimum(boxes[:, 2:], crop_hi) - np.maximum(boxes[:, :2], crop_lo), 0), 1
    )
    union = np.prod(boxes[:, 2:] - boxes[:, :2], 1) + np.prod(crop_hi - crop_lo) - inter
    return inter / union


def expected_kept(crop_lo, crop_hi, boxes):
    """Indices of boxes whose centroid is inside the window, and their remapped coordinates."""
    c = (boxes[:, :2] + boxes[:, 2:]) / 2
    keep = np.flatnonzero(np.all((c >= crop_lo) & (c <= crop_hi), 1))
    ext = crop_hi - crop_lo
    lo = np.clip((np.maximum(boxes[keep, :2], crop_lo) - crop_lo) / ext, 0, 1)
    hi = np.clip((np.minimum(boxes[keep, 2:], crop_hi) - crop_lo) / ext, 0, 1)
    return keep, np.concatenate([lo, hi], 1)


def test_every_window_meets_its_threshold_and_boxes_are_remapped():
    boxes = sample_boxes(0)
    labels = [np.arange(len(b), dtype=np.int32) + 10 for b in boxes]
    runs = run_crop(
        boxes, labels, iterations=4, thresholds=[0.1, 0.3, 0.5], scaling=[0.3, 1.0],
        aspect_ratio=[0.5, 2.0], allow_no_crop=False, num_attempts=50, output_bbox_indices=True,
    )  # fmt: skip
    for anchors, shapes, out_boxes, out_labels, indices in runs:
        for i in range(BATCH):
            a, s = anchors[i], shapes[i]
            assert a.dtype == np.float32 and a.shape == (2,) and s.shape == (2,)
            assert np.all(s >= 0.3 - 1e-6) and np.all(s <= 1.0 + 1e-6)
            assert 0.5 - 1e-5 <= s[0] / s[1] <= 2.0 + 1e-5
            assert np.all(a >= 0) and np.all(a + s <= 1 + 1e-6)
            assert iou(a, a + s, boxes[i]).min() >= 0.1 - 1e-6  # the smallest threshold
            keep, remapped = expected_kept(a, a + s, boxes[i])
            assert len(keep) > 0
            np.testing.assert_array_equal(indices[i], keep)
            assert indices[i].dtype == np.int32
            np.testing.assert_array_equal(out_labels[i], labels[i][keep])
            np.testing.assert_allclose(out_boxes[i], remapped, atol=1e-5)
            assert out_boxes[i].min() >= 0 and out_boxes[i].max() <= 1


def test_single_threshold_is_met_for_every_box():
    boxes = sample_boxes(1, most=1)
    (anchors, shapes, _), *_ = run_crop(
        boxes, thresholds=[0.5], scaling=[0.3, 1.0], aspect_ratio=[0.5, 2.0],
        allow_no_crop=False, num_attempts=20,
    )  # fmt: skip
    for i in range(BATCH):
        assert iou(anchors[i], anchors[i] + shapes[i], boxes[i]).min() >= 0.5 - 1e-6


def test_overlap_threshold_one_keeps_every_box_whole():
    boxes = sample_boxes(2)
    (anchors, shapes, out_boxes), *_ = run_crop(
        boxes, thresholds=[1.0], threshold_type="overlap", scaling=[0.5, 1.0],
        aspect_ratio=[0.5, 2.0], allow_no_crop=False, num_attempts=10,
    )  # fmt: skip
    for i in range(BATCH):
        a, e = anchors[i], anchors[i] + shapes[i]
        assert np.all(boxes[i][:, :2] >= a - 1e-6) and np.all(boxes[i][:, 2:] <= e + 1e-6)
        assert len(out_boxes[i]) == len(boxes[i])  # centroids are inside too


def test_any_box_mode_and_prune_threshold():
    boxes = sample_boxes(3)
    (anchors, shapes, out_boxes, indices), *_ = run_crop(
        boxes, thresholds=[0.3], all_boxes_above_threshold=False, scaling=[0.3, 0.8],
        aspect_ratio=[0.5, 2.0], allow_no_crop=False, num_attempts=20,
        bbox_prune_threshold=0.4, output_bbox_indices=True,
    )  # fmt: skip
    for i in range(BATCH):
        a, e = anchors[i], anchors[i] + shapes[i]
        assert iou(a, e, boxes[i]).max() >= 0.3 - 1e-6
        b = boxes[i]
        inside = np.prod(np.maximum(np.minimum(b[:, 2:], e) - np.maximum(b[:, :2], a), 0), 1)
        fraction = inside / np.prod(b[:, 2:] - b[:, :2], 1)
        np.testing.assert_array_equal(indices[i], np.flatnonzero(fraction > 0.4))


def test_same_seed_same_windows_other_seed_other_windows():
    boxes = sample_boxes(4)
    kw = dict(thresholds=[0.1, 0.3, 0.5, 0.7, 0.9], scaling=[0.3, 1.0], aspect_ratio=[0.5, 2.0],
              num_attempts=10)  # fmt: skip
    first = run_crop(boxes, seed=5, iterations=2, **kw)
    again = run_crop(boxes, seed=5, iterations=2, **kw)
    other = run_crop(boxes, seed=6, iterations=2, **kw)
    for x, y in zip(first, again):
        for ox, oy in zip(x, y):
            for a, b in zip(ox, oy):
                np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(a, b) for x, y in zip(first, other) for a, b in zip(x[0], y[0]))
    # iterations draw anew
    assert any(not np.array_equal(a, b) for a, b in zip(first[0][0], first[1][0]))


def test_windows_do_not_depend_on_the_thread_count():
    boxes = sample_boxes(12)
    kw = dict(thresholds=[0.1, 0.5, 0.9], scaling=[0.3, 1.0], aspect_ratio=[0.5, 2.0])
    one = run_crop(boxes, threads=1, iterations=2, num_attempts=50, **kw)
    two = run_crop(boxes, threads=2, iterations=2, num_attempts=50, **kw)
    for it in range(2):
        for out in range(3):
            for i in range(BATCH):
                np.testing.assert_array_equal(one[it][out][i], two[it][out][i])


def test_no_crop_outcome_and_window_keeping_no_box():
    # a tiny box in a corner and small windows: most windows keep no box, which is never
    # accepted; the result is either no crop (everything kept) or a window holding the box
    boxes = [np.array([[0.0, 0.0, 0.05, 0.05]], np.float32)] * BATCH
    runs = run_crop(boxes, iterations=3, thresholds=[0.0], scaling=[0.2, 0.2], num_attempts=1)
    seen_no_crop = False
    for anchors, shapes, out_boxes in runs:
        for i in range(BATCH):
            if np.allclose(shapes[i], 1.0):
                seen_no_crop = True
                np.testing.assert_array_equal(anchors[i], [0, 0])
                np.testing.assert_array_equal(out_boxes[i], boxes[i])
            else:
                np.testing.assert_allclose(shapes[i], [0.2, 0.2], atol=1e-6)
                assert len(out_boxes[i]) == 1
    assert seen_no_crop


def test_empty_box_list_gives_a_window_and_no_boxes():
    boxes = [np.zeros((0, 4), np.float32)] * 2
    labels = [np.zeros(0, np.int32)] * 2
    (anchors, shapes, out_boxes, out_labels), *_ = run_crop(
        boxes, labels, thresholds=[0.0], scaling=[0.5, 0.5], allow_no_crop=False
    )
    for i in range(2):
        np.testing.assert_allclose(shapes[i], [0.5, 0.5])
        assert np.all(anchors[i] >= 0) and np.all(anchors[i] <= 0.5)
        assert out_boxes[i].shape == (0, 4) and out_labels[i].shape == (0,)


def test_unsatisfiable_thresholds_stop_at_total_num_attempts_with_best_window():
    # a degenerate (zero-area) box has IoU 0 with every window: threshold 0.5 is never met
    boxes = [np.array([[0.5, 0.5, 0.5, 0.5], [0.1, 0.1, 0.3, 0.3]], np.float32)]
    (anchors, shapes, out_boxes), *_ = run_crop(
        boxes, thresholds=[0.5], scaling=[0.3, 1.0], aspect_ratio=[0.5, 2.0],
        allow_no_crop=False, total_num_attempts=30,
    )  # fmt: skip
    a, s = anchors[0], shapes[0]
    assert np.all(s > 0) and np.all(a + s <= 1 + 1e-6)
    keep, remapped = expected_kept(a, a + s, boxes[0])
    np.testing.assert_allclose(out_boxes[0], remapped, atol=1e-5)


def test_fixed_crop_shape_gives_absolute_integer_windows():
    boxes = sample_boxes(5)
    (anchors, shapes, out_boxes), *_ = run_crop(
        boxes, crop_shape=[60, 40], input_shape=[100, 200], shape_layout="HW", thresholds=[0.0]
    )
    for i in range(BATCH):
        np.testing.assert_array_equal(shapes[i], [40, 60])  # W, H
        a = anchors[i]
        assert a[0] == int(a[0]) and a[1] == int(a[1])
        assert 0 <= a[0] <= 160 and 0 <= a[1] <= 40
        rel_lo, rel_hi = a / [200, 100], (a + np.array([40, 60])) / [200, 100]
        _, remapped = expected_kept(rel_lo, rel_hi, boxes[i])
        np.testing.assert_allclose(out_boxes[i], remapped, atol=1e-5)


def test_fixed_aspect_ratio():
    boxes = sample_boxes(6)
    (anchors, shapes, _), *_ = run_crop(
        boxes, aspect_ratio=[2.0, 2.0], scaling=[0.2, 0.5], allow_no_crop=False
    )
    for i in range(BATCH):
        np.testing.assert_allclose(shapes[i][0] / shapes[i][1], 2.0, rtol=1e-5)
        assert 0.2 - 1e-6 <= shapes[i].max() <= 0.5 + 1e-6


def test_fixed_aspect_ratio_that_float32_cannot_hold_exactly():
    """0.75 and 1/0.75 round in float32: the windows still count as having that ratio."""
    boxes = sample_boxes(6)
    (anchors, shapes, _), *_ = run_crop(
        boxes, aspect_ratio=[0.75, 0.75], scaling=[0.2, 0.5], allow_no_crop=False,
        total_num_attempts=50,
    )  # fmt: skip
    for i in range(BATCH):
        np.testing.assert_allclose(shapes[i][0] / shapes[i][1], 0.75, rtol=1e-5)
        assert 0.2 - 1e-6 <= shapes[i].max() <= 0.5 + 1e-6
        assert np.all(anchors[i] + shapes[i] <= 1 + 1e-6)


def test_layouts_give_the_same_windows():
    boxes = sample_boxes(7)
    kw = dict(thresholds=[0.1, 0.5], scaling=[0.3, 1.0], aspect_ratio=[0.5, 2.0], num_attempts=5)
    ltrb = run_crop(boxes, **kw)[0]
    xywh = [np.concatenate([b[:, :2], b[:, 2:] - b[:, :2]], 1) for b in boxes]
    wh = run_crop(xywh, ltrb=False, **kw)[0]
    yx = [b[:, [1, 0, 3, 2]] for b in boxes]
    swapped = run_crop(yx, bbox_layout="yxYX", **kw)[0]
    for i in range(BATCH):
        np.testing.assert_array_equal(ltrb[0][i], wh[0][i])
        np.testing.assert_array_equal(ltrb[0][i], swapped[0][i])
        lt = ltrb[2][i]
        np.testing.assert_allclose(
            wh[2][i], np.concatenate([lt[:, :2], lt[:, 2:] - lt[:, :2]], 1), atol=1e-6
        )
        np.testing.assert_allclose(swapped[2][i], lt[:, [1, 0, 3, 2]], atol=1e-6)


def test_three_dimensional_boxes():
    rng = np.random.default_rng(8)
    lo = rng.uniform(0, 0.5, (3, 3))
    boxes = [np.concatenate([lo, lo + 0.3], 1).astype(np.float32)] * 2
    (anchors, shapes, out_boxes), *_ = run_crop(
        boxes, thresholds=[0.0], scaling=[0.5, 1.0], aspect_ratio=[0.5, 2.0], allow_no_crop=False,
        num_attempts=10,
    )  # fmt: skip
    for i in range(2):
        assert anchors[i].shape == (3,) and shapes[i].shape == (3,)
        assert out_boxes[i].shape[1] == 6 and len(out_boxes[i]) >= 1


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        (dict(ltrb=True, bbox_layout="xyXY"), "ltrb"),
        (dict(crop_shape=[10, 10]), "input_shape"),
        (dict(crop_shape=[10, 10], input_shape=[20, 20], scaling=[0.5, 1.0]), "scaling"),
        (dict(thresholds=[1.5]), "thresholds"),
        (dict(scaling=[0.8, 0.2]), "scaling"),
        (dict(aspect_ratio=[0.0, 1.0]), "aspect_ratio"),
        (dict(num_attempts=0), "num_attempts"),
        (dict(bbox_layout="xyWW"), "bbox_layout"),
    ],
)
def test_argument_errors(kw, match):
    with pytest.raises((ValueError, TypeError, Exception), match=match):
        run_crop(sample_boxes(9, 2), **kw)


def test_unsatisfiable_without_total_num_attempts_does_not_hang(monkeypatch):
    from chute.ops.detection import random_bbox_crop

    monkeypatch.setattr(random_bbox_crop, "MAX_ATTEMPTS", 40)
    boxes = [np.array([[0.5, 0.5, 0.5, 0.5]], np.float32)]  # IoU 0 with any window
    (anchors, shapes, out_boxes), *_ = run_crop(
        boxes, thresholds=[0.9], scaling=[0.3, 1.0], aspect_ratio=[0.5, 2.0], allow_no_crop=False
    )
    assert np.all(shapes[0] >= 0.3 - 1e-6) and np.all(anchors[0] + shapes[0] <= 1 + 1e-6)


def test_output_count_follows_the_inputs_of_each_call():
    """One ops.RandomBBoxCrop object traced with and without labels: 3 outputs, then 4, then 5."""
    from chute import ops

    boxes = sample_boxes(4, 2)
    labels = [np.arange(len(b), dtype=np.int32) + 1 for b in boxes]
    crop = ops.RandomBBoxCrop(thresholds=[0.0], allow_no_crop=False)

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=5)
    def pipe():
        b = fn.external_source(source=lambda: boxes)
        lb = fn.external_source(source=lambda: labels)
        alone = crop(b)
        with_labels = crop(b, lb)
        indices = fn.random_bbox_crop(b, lb, output_bbox_indices=True)
        assert (len(alone), len(with_labels), len(indices)) == (3, 4, 5)
        return with_labels[2], with_labels[3], indices[3], indices[4]

    p = pipe()
    p.build()
    kept, kept_labels, kept_labels2, idx = p.run()
    for i in range(2):
        assert len(kept.at(i)) == len(kept_labels.at(i))
        np.testing.assert_array_equal(kept_labels2.at(i), labels[i][idx.at(i)])
