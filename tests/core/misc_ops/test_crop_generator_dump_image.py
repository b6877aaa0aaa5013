"""fn.random_crop_generator and fn.dump_image against values fixed by their arguments."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from chute import OperatorError, fn, pipeline_def


def _run(make, batch, **kw):
    @pipeline_def(batch_size=len(batch), num_threads=1, seed=5, **kw)
    def pipe():
        return make(fn.external_source(source=lambda: batch, batch=True))

    p = pipe()
    p.build()
    out = p.run()
    p.close()
    return out


def test_whole_image_when_area_and_aspect_allow_only_it():
    shapes = [np.array([40, 60, 3], np.int32), np.array([10, 20], np.int64)]
    anchors, sizes = [], []
    for shape in shapes:
        ratio = shape[1] / shape[0]
        out = _run(
            lambda s, r=ratio: fn.random_crop_generator(
                s, random_area=(1.0, 1.0), random_aspect_ratio=(r, r)
            ),
            [shape],
        )
        anchors.append(out[0].at(0).tolist())
        sizes.append(out[1].at(0).tolist())
        assert out[0].at(0).dtype == np.int64 and out[1].at(0).dtype == np.int64
    assert anchors == [[0, 0], [0, 0]]
    assert sizes == [[40, 60], [10, 20]]


def test_quarter_area_square_windows_lie_inside_and_vary():
    batch = [np.array([100, 100, 3], np.int64)] * 16
    anchor, shape = _run(
        lambda s: fn.random_crop_generator(s, random_area=(0.25, 0.25), random_aspect_ratio=(1, 1)),
        batch,
    )
    anchors = np.stack([anchor.at(i) for i in range(16)])
    shapes = np.stack([shape.at(i) for i in range(16)])
    assert (shapes == 50).all()
    assert ((anchors >= 0) & (anchors <= 50)).all()
    assert len({tuple(a) for a in anchors.tolist()}) > 1  # each sample its own stream


def test_windows_feed_slice():
    image = np.arange(30 * 40 * 3, dtype=np.uint8).reshape(30, 40, 3)

    def make(images):
        anchor, shape = fn.random_crop_generator(fn.shapes(images))
        return fn.slice(images, start=anchor, shape=shape, axes=[0, 1]), anchor, shape

    crop, anchor, shape = _run(make, [image])
    (y, x), (h, w) = anchor.at(0).tolist(), shape.at(0).tolist()
    np.testing.assert_array_equal(crop.at(0), image[y : y + h, x : x + w])
    assert 0 < h * w <= 30 * 40


def test_bad_shapes_and_arguments_name_the_operator():
    with pytest.raises(OperatorError, match="random_crop_generator.*1-D integer shape"):
        _run(lambda s: fn.random_crop_generator(s), [np.zeros((2, 2), np.int64)])
    with pytest.raises(OperatorError, match="random_crop_generator.*empty"):
        _run(lambda s: fn.random_crop_generator(s), [np.array([0, 5], np.int64)])
    with pytest.raises(Exception, match="num_attempts"):
        _run(lambda s: fn.random_crop_generator(s, num_attempts=0), [np.array([4, 5], np.int64)])


def test_dump_image_writes_ppm_files_and_passes_images_on(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    rgb = rng.integers(0, 256, (5, 7, 3), np.uint8)
    gray = rng.integers(0, 256, (4, 6, 1), np.uint8)
    out = _run(lambda x: fn.dump_image(x, suffix="_a"), [rgb, gray])
    np.testing.assert_array_equal(out[0].at(0), rgb)
    np.testing.assert_array_equal(out[0].at(1), gray)
    np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "dump-0-0_a.ppm")), rgb)
    np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "dump-0-1_a.ppm")), gray[..., 0])
    assert (tmp_path / "dump-0-0_a.ppm").read_bytes().startswith(b"P6\n7 5\n255\n")


def test_dump_image_chw_and_errors(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    hwc = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    _run(lambda x: fn.dump_image(x, input_layout="CHW"), [hwc.transpose(2, 0, 1).copy()])
    np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "dump-0-0.ppm")), hwc)
    with pytest.raises(OperatorError, match="dump_image.*uint8"):
        _run(lambda x: fn.dump_image(x), [np.zeros((2, 2, 3), np.float32)])
    with pytest.raises(OperatorError, match="dump_image.*1 or 3 channels"):
        _run(lambda x: fn.dump_image(x), [np.zeros((2, 2, 4), np.uint8)])
    with pytest.raises(Exception, match="input_layout"):
        _run(lambda x: fn.dump_image(x, input_layout="NHWC"), [hwc])


def test_experimental_resize_is_resize_under_dali_s_name():
    from chute import ops

    image = np.random.default_rng(0).integers(0, 256, (30, 40, 3), np.uint8)
    a, b = _run(
        lambda x: (
            fn.resize(x, size=(15, 17)),
            fn.experimental.resize(x, size=(15, 17)),
        ),
        [image],
    )
    assert b.at(0).shape == (15, 17, 3)
    np.testing.assert_array_equal(a.at(0), b.at(0))
    assert issubclass(ops.experimental.Resize, ops.Resize)
