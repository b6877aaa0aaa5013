"""fn.bb_flip, fn.bbox_paste and fn.box_encoder on the CPU against hand-derived values and a
NumPy reference (ssd_anchors.reference_encode), including SSD300's 8,732 default boxes."""

from __future__ import annotations

import numpy as np
import pytest
from ssd_anchors import decode, reference_encode, ssd300_anchors

from chute import fn, ops, pipeline_def
from chute.ops.detection import bbox_kernels as bk


def run(graph, *sources: list, batch_size: int | None = None) -> list[list[np.ndarray]]:
    """Run ``graph`` over external sources (lists of per-sample arrays); outputs as lists."""
    n = batch_size or len(sources[0])

    @pipeline_def(batch_size=n, num_threads=2, device_id=None, seed=7)
    def pipe():
        nodes = [fn.external_source(source=lambda s=s: s) for s in sources]
        out = graph(*nodes)
        return tuple(out) if isinstance(out, (list, tuple)) else (out,)

    p = pipe()
    p.build()
    return [[o.at(i) for i in range(n)] for o in p.run()]


BOXES_XYWH = np.array(
    [[0.1, 0.2, 0.3, 0.4], [0.0, 0.0, 1.0, 1.0], [0.6, 0.7, 0.1, 0.05]], np.float32
)


# ---- bb_flip ----------------------------------------------------------------------------


def test_bb_flip_xywh_horizontal_default():
    (out,) = run(lambda b: fn.bb_flip(b), [BOXES_XYWH])
    expected = np.array([[0.6, 0.2, 0.3, 0.4], [0.0, 0.0, 1.0, 1.0], [0.3, 0.7, 0.1, 0.05]])
    np.testing.assert_allclose(out[0], expected, atol=1e-6)
    assert out[0].dtype == np.float32 and out[0].shape == (3, 4)


def test_bb_flip_ltrb_vertical_and_both():
    ltrb = np.array([[0.1, 0.2, 0.4, 0.6], [0.5, 0.0, 0.9, 0.3]], np.float32)
    v, hv = run(
        lambda b: (
            fn.bb_flip(b, ltrb=True, horizontal=0, vertical=1),
            fn.bb_flip(b, ltrb=True, horizontal=1, vertical=1),
        ),
        [ltrb],
    )
    np.testing.assert_allclose(v[0], [[0.1, 0.4, 0.4, 0.8], [0.5, 0.7, 0.9, 1.0]], atol=1e-6)
    np.testing.assert_allclose(hv[0], [[0.6, 0.4, 0.9, 0.8], [0.1, 0.7, 0.5, 1.0]], atol=1e-6)


def test_bb_flip_twice_is_identity_and_per_sample_flags():
    rng = np.random.default_rng(0)
    lo = rng.uniform(0, 0.5, (5, 2))
    boxes = [np.concatenate([lo, rng.uniform(0, 0.5, (5, 2))], 1).astype(np.float32)] * 4
    hs = [np.int32(v) for v in (0, 1, 0, 1)]
    vs = [np.int32(v) for v in (0, 0, 1, 1)]
    once, twice = run(
        lambda b, h, v: (
            fn.bb_flip(b, horizontal=h, vertical=v),
            fn.bb_flip(fn.bb_flip(b, horizontal=h, vertical=v), horizontal=h, vertical=v),
        ),
        boxes,
        hs,
        vs,
    )
    for i in range(4):
        x, y, w, h = boxes[i].T
        ex = 1 - x - w if hs[i] else x
        ey = 1 - y - h if vs[i] else y
        np.testing.assert_allclose(once[i], np.stack([ex, ey, w, h], 1), atol=1e-6)
        np.testing.assert_allclose(twice[i], boxes[i], atol=1e-6)


def test_bb_flip_empty_and_bad_shape():
    (out,) = run(lambda b: fn.bb_flip(b), [np.zeros((0, 4), np.float32)])
    assert out[0].shape == (0, 4)
    with pytest.raises(Exception, match=r"\(n, 4\)"):
        run(lambda b: fn.bb_flip(b), [np.zeros((2, 3), np.float32)])


# ---- bbox_paste -------------------------------------------------------------------------


def test_bbox_paste_formula_xywh_and_ltrb():
    ltrb = np.array([[0.0, 0.0, 1.0, 1.0], [0.2, 0.4, 0.6, 0.8]], np.float32)
    xywh, corners = run(
        lambda b: (
            fn.bbox_paste(b, ratio=2.0, paste_x=0.0, paste_y=1.0),
            ops.BBoxPaste(ratio=4.0, ltrb=True)(b),
        ),
        [ltrb],
    )
    # ratio 2 at the bottom-left: x/2 + 0, y/2 + 0.5; sizes halved
    np.testing.assert_allclose(xywh[0], [[0, 0.5, 0.5, 0.5], [0.1, 0.7, 0.3, 0.4]], atol=1e-6)
    # ratio 4 centred: corners /4 + 0.5 * 3/4
    np.testing.assert_allclose(
        corners[0], [[0.375, 0.375, 0.625, 0.625], [0.425, 0.475, 0.525, 0.575]], atol=1e-6
    )
    with pytest.raises(Exception, match="ratio"):
        run(lambda b: fn.bbox_paste(b, ratio=0.5), [ltrb])


# ---- box_encoder ------------------------------------------------------------------------

SMALL_ANCHORS = np.array(
    [
        [0, 0, 0.5, 0.5],
        [0.5, 0, 1, 0.5],
        [0, 0.5, 0.5, 1],
        [0.5, 0.5, 1, 1],
        [0.25, 0.25, 0.75, 0.75],
    ],
    np.float32,
)


def test_box_encoder_small_case_by_hand():
    boxes = np.array([[0.0, 0.0, 0.5, 0.5], [0.55, 0.55, 0.95, 0.95]], np.float32)
    labels = np.array([3, 7], np.int32)
    enc, lab = run(
        lambda b, lb: fn.box_encoder(b, lb, anchors=SMALL_ANCHORS.ravel().tolist(), criteria=0.5),
        [boxes],
        [labels],
    )
    # box 0 equals anchor 0 (IoU 1); box 1 lies in anchor 3 (IoU 0.64); the rest unmatched
    assert lab[0].tolist() == [3, 0, 0, 7, 0]
    np.testing.assert_allclose(enc[0][0], [0.25, 0.25, 0.5, 0.5], atol=1e-6)
    np.testing.assert_allclose(enc[0][3], [0.75, 0.75, 0.4, 0.4], atol=1e-6)
    np.testing.assert_allclose(enc[0][1], [0.75, 0.25, 0.5, 0.5], atol=1e-6)  # anchor itself
    np.testing.assert_allclose(enc[0][4], [0.5, 0.5, 0.5, 0.5], atol=1e-6)


def test_box_encoder_forces_each_box_onto_its_best_anchor():
    # IoU with anchor 4 is only 0.16: below criteria, still matched as that box's best anchor
    boxes = np.array([[0.4, 0.4, 0.6, 0.6]], np.float32)
    enc, lab = bk.encode_boxes(boxes, np.array([5]), SMALL_ANCHORS, criteria=0.5)
    assert lab.tolist() == [0, 0, 0, 0, 5]
    np.testing.assert_allclose(enc[4], [0.5, 0.5, 0.2, 0.2], atol=1e-6)


def test_box_encoder_ties_go_to_the_last_box_and_prepared_anchors_agree():
    # boxes 0 and 2 are the same square (anchor 0 exactly); box 1 sits on anchor 3
    boxes = np.array([[0, 0, 0.5, 0.5], [0.5, 0.5, 1, 1], [0, 0, 0.5, 0.5]], np.float32)
    labels = np.array([3, 4, 9], np.int32)
    enc, lab = bk.encode_boxes(boxes, labels, SMALL_ANCHORS)
    # anchor 0: IoU 2 (forced) for boxes 0 and 2, the last wins; anchor 4 overlaps boxes 0, 2
    # and 1 alike (IoU 1/7) and stays unmatched
    assert lab.tolist() == [9, 0, 0, 4, 0]
    np.testing.assert_allclose(enc[0], [0.25, 0.25, 0.5, 0.5], atol=1e-6)
    prepared = bk.Anchors.of(SMALL_ANCHORS.ravel())
    for offset in (False, True):
        e0, l0 = bk.encode_boxes(boxes, labels, SMALL_ANCHORS, offset=offset)
        e1, l1 = bk.encode_boxes(boxes, labels, prepared, offset=offset)
        np.testing.assert_array_equal(e0, e1)
        np.testing.assert_array_equal(l0, l1)


def test_box_encoder_offsets_by_hand():
    boxes = np.array([[0.0, 0.0, 0.4, 0.6]], np.float32)
    enc, lab = bk.encode_boxes(
        boxes, np.array([2]), SMALL_ANCHORS[:1], offset=True, scale=300.0,
        means=(0.1, 0.0, 0.0, 0.2), stds=(0.1, 0.1, 0.2, 0.2),
    )  # fmt: skip
    # box centre (0.2, 0.3) size (0.4, 0.6); anchor centre (0.25, 0.25) size (0.5, 0.5)
    expected = [
        ((0.2 - 0.25) / 0.5 - 0.1) / 0.1,
        ((0.3 - 0.25) / 0.5) / 0.1,
        np.log(0.4 / 0.5) / 0.2,
        (np.log(0.6 / 0.5) - 0.2) / 0.2,
    ]
    np.testing.assert_allclose(enc[0], expected, rtol=1e-5, atol=1e-5)
    assert lab.tolist() == [2]


def test_box_encoder_no_boxes_gives_anchors_or_zeros():
    empty = np.zeros((0, 4), np.float32)
    enc, lab = bk.encode_boxes(empty, np.zeros(0, np.int32), SMALL_ANCHORS)
    np.testing.assert_allclose(enc[:, 2:], 0.5)
    assert not lab.any()
    enc, _ = bk.encode_boxes(empty, np.zeros(0, np.int32), SMALL_ANCHORS, offset=True)
    assert not enc.any()


def _random_boxes(rng, n):
    lo = rng.uniform(0, 0.8, (n, 2))
    wh = rng.uniform(0.02, 0.6, (n, 2))
    return np.concatenate([lo, np.minimum(lo + wh, 1.0)], 1).astype(np.float32)


@pytest.mark.parametrize("offset", [False, True])
def test_box_encoder_matches_reference_on_ssd300_anchors(offset):
    anchors = ssd300_anchors()
    assert anchors.shape == (8732, 4)
    rng = np.random.default_rng(11)
    boxes = [_random_boxes(rng, n) for n in (1, 4, 9, 0)]
    labels = [rng.integers(1, 81, len(b)).astype(np.int32) for b in boxes]
    kw = dict(criteria=0.5, offset=offset, scale=1.0, means=(0, 0, 0, 0), stds=(0.1, 0.1, 0.2, 0.2))
    enc, lab = run(
        lambda b, lb: fn.box_encoder(b, lb, anchors=anchors.ravel().tolist(), **kw), boxes, labels
    )
    for i in range(4):
        ref_boxes, ref_labels = reference_encode(boxes[i], labels[i], anchors, **kw)
        assert enc[i].shape == (8732, 4) and enc[i].dtype == np.float32
        assert lab[i].shape == (8732,) and lab[i].dtype == np.int32
        np.testing.assert_array_equal(lab[i], ref_labels)
        np.testing.assert_allclose(enc[i], ref_boxes, rtol=1e-5, atol=1e-5)
        if offset and len(boxes[i]):
            matched = lab[i] > 0
            decoded = decode(enc[i][matched], anchors[matched], kw["means"], kw["stds"])
            gt = boxes[i]
            for row in decoded:
                assert np.min(np.abs(gt - row).max(axis=1)) < 1e-4


def test_box_encoder_argument_errors():
    boxes, labels = [np.zeros((1, 4), np.float32)], [np.zeros(1, np.int32)]
    with pytest.raises(ValueError, match="multiple of 4"):
        run(lambda b, lb: fn.box_encoder(b, lb, anchors=[0, 0, 1]), boxes, labels)
    with pytest.raises(ValueError, match="criteria"):
        run(lambda b, lb: fn.box_encoder(b, lb, anchors=[0, 0, 1, 1], criteria=1.5), boxes, labels)
    with pytest.raises(TypeError, match="anchors"):
        run(lambda b, lb: fn.box_encoder(b, lb), boxes, labels)
