"""fn.bbox_rotate: hand-derived corners for 90 and 45 degrees (every mode), removal at the
canvas edge with keep_size, size, layouts and pixel boxes, agreement with fn.rotate on a
drawn rectangle, and argument errors naming the argument."""

from __future__ import annotations

import math

import numpy as np
import pytest

from chute import fn, pipeline_def, types


def run_rotate(boxes, labels=None, images=None, **kw):
    """fn.bbox_rotate's outputs (per-sample lists) on one batch; input_shape from ``images``."""
    n = len(boxes)

    @pipeline_def(batch_size=n, num_threads=1, device_id=None, seed=1)
    def pipe():
        ins = [fn.external_source(source=lambda: boxes)]
        if labels is not None:
            ins.append(fn.external_source(source=lambda: labels))
        if images is not None:
            img = fn.external_source(source=lambda: images, layout="HWC")
            kw["input_shape"] = img.shape()
        out = fn.bbox_rotate(*ins, **kw)
        return tuple(out) if isinstance(out, list) else (out,)

    p = pipe()
    p.build()
    return [[o.at(i) for i in range(n)] for o in p.run()]


def test_quarter_turn_expand_by_hand():
    # image 100 wide, 50 high; box x 10..30, y 10..30 px. Counter-clockwise by 90 degrees the
    # canvas is 50 x 100 and (x, y) -> (y, 100 - x): x 10..30, y 70..90 px
    boxes = [np.array([[0.1, 0.2, 0.3, 0.6]], np.float32)]
    (out,) = run_rotate(boxes, angle=90, input_shape=[50, 100])
    np.testing.assert_allclose(out[0], [[10 / 50, 70 / 100, 30 / 50, 90 / 100]], atol=1e-6)
    assert out[0].dtype == np.float32
    # xyWH in, xyWH out; pixel coordinates with bbox_normalized=False
    xywh = [np.array([[10, 10, 20, 20]], np.float32)]
    (px,) = run_rotate(
        xywh, angle=90, input_shape=[50, 100, 3], shape_layout="HWC", bbox_layout="xyWH",
        bbox_normalized=False,
    )  # fmt: skip
    np.testing.assert_allclose(px[0], [[10, 70, 20, 20]], atol=1e-4)


@pytest.mark.parametrize(
    ("mode", "half_side"),
    [
        ("expand", 10 * math.sqrt(2)),
        ("fixed", 10.0),
        ("halfway", 10 + (10 * math.sqrt(2) - 10) / 2),
    ],
)
def test_modes_at_45_degrees(mode, half_side):
    # a 20 px square at the centre of a 100 x 100 image; the canvas is 142 x 142 (the rotated
    # image's bounding box, even like the input) and the box stays centred at 71
    boxes = [np.array([[0.4, 0.4, 0.6, 0.6]], np.float32)]
    (out,) = run_rotate(boxes, angle=45, input_shape=[100, 100], mode=mode)
    lo, hi = 71 - half_side, 71 + half_side
    np.testing.assert_allclose(out[0] * 142, [[lo, lo, hi, hi]], atol=1e-3)


def test_keep_size_clips_and_removes_with_labels():
    # image 100 x 50 (W x H), keep_size: canvas 100 x 50. Turning by 90: (x, y) -> (y + 25, 75 - x)
    px = np.array(
        [
            [0, 20, 20, 30],  # -> x 45..55, y 55..75: entirely below the canvas, removed
            [40, 0, 60, 10],  # -> x 25..35, y 15..35: inside
            [20, 20, 40, 30],  # -> x 45..55, y 35..55: 15 of 20 rows left (0.75)
        ],
        np.float32,
    )
    boxes = [px / np.array([100, 50, 100, 50], np.float32)]
    labels = [np.array([[7], [8], [9]], np.int32)]
    scale = np.array([100, 50, 100, 50])
    out, lab = run_rotate(
        boxes, labels, angle=90, input_shape=[50, 100], keep_size=True, remove_threshold=0.5
    )
    np.testing.assert_allclose(out[0] * scale, [[25, 15, 35, 35], [45, 35, 55, 50]], atol=1e-4)
    assert lab[0].tolist() == [[8], [9]] and lab[0].dtype == np.int32
    out, lab = run_rotate(
        boxes, labels, angle=90, input_shape=[50, 100], keep_size=True, remove_threshold=0.8
    )
    assert lab[0].tolist() == [[8]] and out[0].shape == (1, 4)
    # remove_threshold=0 keeps even the box cut down to nothing (0 of its area is "at least 0")
    out, lab = run_rotate(
        boxes, labels, angle=90, input_shape=[50, 100], keep_size=True, remove_threshold=0.0
    )
    assert lab[0].tolist() == [[7], [8], [9]]
    np.testing.assert_allclose(out[0][0] * scale, [45, 50, 55, 50], atol=1e-4)


def test_size_sets_the_canvas_and_empty_box_lists_pass():
    boxes = [np.array([[0.4, 0.4, 0.6, 0.6]], np.float32), np.zeros((0, 4), np.float32)]
    labels = [np.array([3], np.int32), np.zeros(0, np.int32)]
    # canvas 80 (H) x 120 (W): the image centre (50, 50) lands on (60, 40); no rotation
    out, lab = run_rotate(boxes, labels, angle=0, input_shape=[100, 100], size=[80.7, 120.2])
    np.testing.assert_allclose(out[0] * [120, 80, 120, 80], [[50, 30, 70, 50]], atol=1e-4)
    assert out[1].shape == (0, 4) and lab[1].shape == (0,)


def test_agrees_with_fn_rotate_on_a_drawn_rectangle():
    img = np.zeros((40, 60, 1), np.uint8)
    img[8:20, 10:30] = 255  # pixels 10..29 x 8..19: the box [10, 8, 30, 20]
    box = np.array([[10 / 60, 8 / 40, 30 / 60, 20 / 40]], np.float32)
    for angle, tol in ((90, 1e-3), (-90, 1e-3), (180, 1e-3), (30, 1.0)):

        @pipeline_def(batch_size=1, num_threads=1, device_id=None, seed=1)
        def pipe(angle=angle):
            x = fn.external_source(source=lambda: [img], layout="HWC")
            b = fn.external_source(source=lambda: [box])
            r = fn.rotate(x, angle=angle, interp_type=types.INTERP_NN, fill_value=0)
            return r, fn.bbox_rotate(b, angle=angle, input_shape=x.shape())

        p = pipe()
        p.build()
        rotated, rboxes = p.run()
        mask = rotated.at(0)[..., 0]
        h, w = mask.shape
        ys, xs = np.nonzero(mask)
        drawn = [xs.min(), ys.min(), xs.max() + 1, ys.max() + 1]
        np.testing.assert_allclose(rboxes.at(0)[0] * [w, h, w, h], drawn, atol=tol)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        (dict(remove_threshold=1.5), "remove_threshold"),
        (dict(keep_size=True, size=[10, 10]), "keep_size"),
        (dict(shape_layout="CW"), "shape_layout"),
        (dict(mode="twist"), "mode"),
        (dict(bbox_layout="yxYX"), "bbox_layout"),
    ],
)
def test_argument_errors(kw, match):
    boxes = [np.array([[0.1, 0.1, 0.2, 0.2]], np.float32)]
    with pytest.raises((ValueError, TypeError), match=match):
        run_rotate(boxes, angle=10, input_shape=[10, 10], **kw)


def test_bad_samples_name_the_operator_and_sample():
    good = np.array([[0.1, 0.1, 0.2, 0.2]], np.float32)
    with pytest.raises(Exception, match=r"bbox_rotate.*sample 1.*\(n, 4\)"):
        run_rotate([good, np.zeros((2, 3), np.float32)], angle=10, input_shape=[10, 10])
    with pytest.raises(Exception, match=r"bbox_rotate.*1 boxes but 2 labels"):
        run_rotate([good], [np.array([1, 2], np.int32)], angle=10, input_shape=[10, 10])
    with pytest.raises(Exception, match=r"bbox_rotate.*input_shape"):
        run_rotate([good], angle=10, input_shape=[10, 10], shape_layout="HCW")
