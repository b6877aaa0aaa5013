"""fn.ssd_random_crop: scripted draws with hand-derived windows, boxes and pixel bounds; then
invariants on random draws (the output image is the original cut at the window, the kept
boxes are those centred in it, remapped; the same seed gives the same crops); errors."""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, pipeline_def
from chute.ops.detection.ssd_random_crop import ssd_crop_window


class ScriptedRng:
    """Stands in for a numpy Generator: hands out the option indices and uniforms it was given."""

    def __init__(self, options, uniforms):
        self.options, self.uniforms = list(options), list(uniforms)

    def integers(self, n):
        assert n == 7
        return self.options.pop(0)

    def uniform(self, lo, hi, size=None):
        if size is None:
            return self.uniforms.pop(0)
        return np.array([self.uniforms.pop(0) for _ in range(size)])


BOXES = np.array([[0.1, 0.1, 0.3, 0.3], [0.6, 0.6, 0.9, 0.8]], np.float32)


def test_scripted_draws():
    # option 6 = no crop
    assert ssd_crop_window(BOXES, 1, ScriptedRng([6], [])) is None
    # option 0 (min IoU -1): w=0.5, h=0.5, left=0.05, top=0.05 -> holds box 0's centre only
    window, keep = ssd_crop_window(BOXES, 1, ScriptedRng([0], [0.5, 0.5, 0.05, 0.05]))
    np.testing.assert_allclose(window, [0.05, 0.05, 0.55, 0.55], atol=1e-7)
    assert keep.tolist() == [0]
    # option 5 (min IoU 0.9): the first window fails the IoU; w/h = 0.3/0.9 is rejected before
    # any anchor is drawn; then option 0 takes w=0.9 h=0.9 at (0.05, 0) which holds both
    window, keep = ssd_crop_window(
        BOXES, 2, ScriptedRng([5, 0], [0.5, 0.5, 0.0, 0.0, 0.3, 0.9, 0.9, 0.9, 0.05, 0.0])
    )
    np.testing.assert_allclose(window, [0.05, 0.0, 0.95, 0.9], atol=1e-7)
    assert keep.tolist() == [0, 1]
    # no box: only "no crop" can end it
    empty = np.zeros((0, 4), np.float32)
    assert ssd_crop_window(empty, 1, ScriptedRng([0, 6], [0.5, 0.5, 0.1, 0.1])) is None


def run_crop(images, boxes, labels, seed=7, iterations=1, **kw):
    n = len(images)

    @pipeline_def(batch_size=n, num_threads=2, device_id=None, seed=seed)
    def pipe():
        img = fn.external_source(source=lambda: images, layout="HWC")
        bb = fn.external_source(source=lambda: boxes)
        lb = fn.external_source(source=lambda: labels)
        return tuple(fn.ssd_random_crop(img, bb, lb, **kw))

    p = pipe()
    p.build()
    return [[[o.at(i) for i in range(n)] for o in p.run()] for _ in range(iterations)]


def _data(n=8, seed=0):
    rng = np.random.default_rng(seed)
    images, boxes, labels = [], [], []
    for i in range(n):
        h, w = 30 + 3 * i, 44 - 2 * i
        images.append(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        k = 1 + i % 4
        lo = rng.uniform(0, 0.7, (k, 2))
        hi = np.minimum(lo + rng.uniform(0.1, 0.4, (k, 2)), 1.0)
        boxes.append(np.concatenate([lo, hi], 1).astype(np.float32))
        labels.append(np.arange(1, k + 1, dtype=np.int32))  # box j has label j + 1
    return images, boxes, labels


def _find(image, part):
    """The (x0, y0) where ``part`` sits in ``image``."""
    ph, pw = part.shape[:2]
    for y0 in range(image.shape[0] - ph + 1):
        for x0 in range(image.shape[1] - pw + 1):
            if np.array_equal(image[y0 : y0 + ph, x0 : x0 + pw], part):
                return x0, y0
    raise AssertionError("the output image is not a cut of the input")


def test_outputs_are_a_consistent_crop():
    images, boxes, labels = _data()
    cropped = 0
    for out_images, out_boxes, out_labels in run_crop(images, boxes, labels, iterations=3):
        for i in range(len(images)):
            img, b, lab = out_images[i], out_boxes[i], out_labels[i]
            h, w = images[i].shape[:2]
            if img.shape == images[i].shape:
                np.testing.assert_array_equal(img, images[i])
                np.testing.assert_array_equal(b, boxes[i])
                np.testing.assert_array_equal(lab, labels[i])
                continue
            cropped += 1
            ch, cw = img.shape[:2]
            assert 0.3 * w - 1 <= cw <= w and 0.3 * h - 1 <= ch <= h
            x0, y0 = _find(images[i], img)
            # the window to within a pixel: kept boxes have their centre in it, and are the
            # originals moved into it, scaled and clamped
            left, top, sw, sh = x0 / w, y0 / h, cw / w, ch / h
            centre = (boxes[i][:, :2] + boxes[i][:, 2:]) / 2
            tol = 1.5 / min(w, h)
            lo, hi = np.array([left, top]), np.array([left + sw, top + sh])
            loose = np.all((centre >= lo - tol) & (centre <= hi + tol), axis=1)
            strictly = np.all((centre >= lo + tol) & (centre <= hi - tol), axis=1)
            keep = lab - 1  # box j has label j + 1
            assert len(keep) >= 1 and np.all(np.diff(keep) > 0)
            assert loose[keep].all() and set(np.nonzero(strictly)[0]) <= set(keep.tolist())
            expect = (boxes[i][keep] - [left, top, left, top]) / [sw, sh, sw, sh]
            np.testing.assert_allclose(b, np.clip(expect, 0, 1), atol=4 * tol / min(sw, sh))
            assert b.dtype == np.float32 and np.all((b >= 0) & (b <= 1))
    assert cropped >= 5


def test_same_seed_same_crops():
    images, boxes, labels = _data(6, seed=3)
    a = run_crop(images, boxes, labels, seed=5, iterations=2)
    b = run_crop(images, boxes, labels, seed=5, iterations=2)
    c = run_crop(images, boxes, labels, seed=6, iterations=2)
    for ra, rb in zip(a, b):
        for oa, ob in zip(ra, rb):
            assert all(np.array_equal(x, y) for x, y in zip(oa, ob))
    shapes_a = [o.shape for r in a for o in r[0]]
    shapes_c = [o.shape for r in c for o in r[0]]
    assert shapes_a != shapes_c


def test_errors_name_the_argument_and_sample():
    images, boxes, labels = _data(2)
    with pytest.raises(ValueError, match="num_attempts"):
        run_crop(images, boxes, labels, num_attempts=0)
    bad = [boxes[0], np.zeros((3, 5), np.float32)]
    with pytest.raises(Exception, match=r"ssd_random_crop.*sample 1.*\(n, 4\)"):
        run_crop(images, bad, [labels[0], np.zeros(3, np.int32)])
    with pytest.raises(Exception, match=r"ssd_random_crop.*sample 0.*labels"):
        run_crop(images, boxes, [labels[0][:0], labels[1]])
