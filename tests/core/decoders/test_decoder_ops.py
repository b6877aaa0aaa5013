"""The decoding operators in pipelines: encoded bytes in through fn.external_source."""

from __future__ import annotations

import numpy as np
import pytest
from _decoder_samples import encode, photo

import chute
from chute import fn, pipeline_def
from chute.ops.decoders.image_codec import decode

SIZES = [(40, 56), (33, 47), (64, 30), (25, 25)]
IMAGES = [photo(h, w, seed=i) for i, (h, w) in enumerate(SIZES)]
PNGS = [np.frombuffer(encode(a, "PNG"), dtype=np.uint8) for a in IMAGES]
JPEGS = [np.frombuffer(encode(a, "JPEG", quality=90), dtype=np.uint8) for a in IMAGES]


def _run(graph, batch=PNGS, num_threads=2, seed=7, extra=None):
    """Build a pipeline whose first external_source feeds `batch`; return the outputs of one run."""

    @pipeline_def(batch_size=len(batch), num_threads=num_threads, device_id=None, seed=seed)
    def pipe():
        encoded = fn.external_source(source=lambda: list(batch), batch=True)
        if extra is None:
            return graph(encoded)
        values = fn.external_source(source=lambda: list(extra), batch=True)
        return graph(encoded, values)

    pipeline = pipe()
    pipeline.build()
    outputs = pipeline.run()
    return outputs if isinstance(outputs, tuple) else (outputs,)


def test_image_decodes_each_sample_like_the_codec():
    (png,) = _run(lambda e: fn.decoders.image(e))
    (jpeg,) = _run(lambda e: fn.decoders.image(e, output_type=chute.types.BGR), batch=JPEGS)
    for index, image in enumerate(IMAGES):
        np.testing.assert_array_equal(png.at(index), image)
        np.testing.assert_array_equal(jpeg.at(index), decode(JPEGS[index], "BGR"))
    assert png.layout() == "HWC"


def test_image_gray_float_output():
    (out,) = _run(lambda e: fn.decoders.image(e, output_type="GRAY", dtype=chute.types.FLOAT))
    sample = out.at(0)
    assert sample.dtype == np.float32 and sample.shape == (*SIZES[0], 1)
    np.testing.assert_allclose(sample, decode(PNGS[0], "GRAY", np.float32))


def test_image_crop_at_corner_positions():
    (out,) = _run(
        lambda e: fn.decoders.image_crop(e, crop=(20, 22), crop_pos_x=0.0, crop_pos_y=1.0)
    )
    for index, image in enumerate(IMAGES):
        np.testing.assert_array_equal(out.at(index), image[-20:, :22])


def test_image_crop_with_per_sample_positions():
    positions = [np.float32(p) for p in (0.0, 0.25, 0.5, 1.0)]
    (out,) = _run(
        lambda e, pos: fn.decoders.image_crop(e, crop_h=10, crop_w=12, crop_pos_x=pos),
        extra=positions,
    )
    for index, image in enumerate(IMAGES):
        height, width = SIZES[index]
        y0 = int(np.floor(0.5 * (height - 10) + 0.5))
        x0 = int(np.floor(float(positions[index]) * (width - 12) + 0.5))
        np.testing.assert_array_equal(out.at(index), image[y0 : y0 + 10, x0 : x0 + 12])


def test_image_crop_larger_than_image_raises():
    with pytest.raises((chute.OperatorError, ValueError), match="does not fit"):
        _run(lambda e: fn.decoders.image_crop(e, crop=(100, 10)))


def test_image_slice_relative_arguments_are_x_first():
    (out,) = _run(lambda e: fn.decoders.image_slice(e, rel_start=(0.5, 0.0), rel_shape=(0.5, 0.5)))
    for index, image in enumerate(IMAGES):
        height, width = SIZES[index]
        x0 = int(np.floor(0.5 * width + 0.5))
        y1 = int(np.floor(0.5 * height + 0.5))
        np.testing.assert_array_equal(out.at(index), image[:y1, x0:])


def test_image_slice_absolute_anchor_and_shape_inputs():
    anchors = [np.array([3, 5], dtype=np.int32) for _ in IMAGES]  # (x, y)
    shapes = [np.array([10, 8], dtype=np.int32) for _ in IMAGES]  # (w, h)

    @pipeline_def(batch_size=len(PNGS), num_threads=2, device_id=None, seed=1)
    def pipe():
        encoded = fn.external_source(source=lambda: list(PNGS), batch=True)
        anchor = fn.external_source(source=lambda: anchors, batch=True)
        shape = fn.external_source(source=lambda: shapes, batch=True)
        return fn.decoders.image_slice(
            encoded, anchor, shape, normalized_anchor=False, normalized_shape=False
        )

    pipeline = pipe()
    pipeline.build()
    (out,) = pipeline.run()
    for index, image in enumerate(IMAGES):
        np.testing.assert_array_equal(out.at(index), image[5:13, 3:13])


def _find(window: np.ndarray, image: np.ndarray) -> tuple[int, int] | None:
    crop_h, crop_w = window.shape[:2]
    for y0 in range(image.shape[0] - crop_h + 1):
        for x0 in range(image.shape[1] - crop_w + 1):
            if np.array_equal(image[y0 : y0 + crop_h, x0 : x0 + crop_w], window):
                return y0, x0
    return None


def test_image_random_crop_is_a_region_and_reproducible():
    def graph(e):
        return fn.decoders.image_random_crop(
            e, random_area=(0.1, 0.6), random_aspect_ratio=(0.5, 2.0)
        )

    (first,) = _run(graph, num_threads=2, seed=11)
    (again,) = _run(graph, num_threads=1, seed=11)
    (other,) = _run(graph, num_threads=2, seed=12)
    shapes = []
    for index, image in enumerate(IMAGES):
        crop = first.at(index)
        assert _find(crop, image) is not None
        area = crop.shape[0] * crop.shape[1] / (image.shape[0] * image.shape[1])
        assert 0.05 < area < 0.7  # rounding widens the range a little on small images
        np.testing.assert_array_equal(crop, again.at(index))
        shapes.append((crop.shape, other.at(index).shape))
    assert any(a != b for a, b in shapes), "another seed should give other crops"


def test_peek_image_shape():
    (out,) = _run(lambda e: fn.peek_image_shape(e), batch=JPEGS)
    for index, (height, width) in enumerate(SIZES):
        sample = out.at(index)
        assert sample.dtype == np.int64
        np.testing.assert_array_equal(sample, [height, width, 3])


def test_corrupt_sample_raises_with_reason():
    broken = [*PNGS[:3], PNGS[3][: len(PNGS[3]) // 2]]
    with pytest.raises((chute.OperatorError, ValueError), match="png"):
        _run(lambda e: fn.decoders.image(e), batch=broken)


def test_bad_arguments_fail_at_trace_time():
    with pytest.raises(ValueError, match="output_type"):
        _run(lambda e: fn.decoders.image(e, output_type="LAB"))
    with pytest.raises(TypeError, match="unexpected argument"):
        _run(lambda e: fn.decoders.image(e, out_type="RGB"))
    with pytest.raises(ValueError, match="random_area"):
        _run(lambda e: fn.decoders.image_random_crop(e, random_area=(0.9, 0.1)))


def test_dali_tuning_arguments_are_accepted():
    (out,) = _run(lambda e: fn.decoders.image(e, hw_decoder_load=0.65, device_memory_padding=1))
    np.testing.assert_array_equal(out.at(0), IMAGES[0])


def test_legacy_ops_api():
    decoder = chute.ops.decoders.ImageCrop(crop=(8, 9), crop_pos_x=0.0, crop_pos_y=0.0)
    peek = chute.ops.PeekImageShape(dtype=chute.types.INT32)
    crops, shapes = _run(lambda e: (decoder(e), peek(e)))
    for index, image in enumerate(IMAGES):
        np.testing.assert_array_equal(crops.at(index), image[:8, :9])
        assert shapes.at(index).dtype == np.int32
        np.testing.assert_array_equal(shapes.at(index), [*SIZES[index], 3])


def test_files_from_a_reader_decode_by_content(tmp_path):
    # The names lie about the format: decoding goes by the bytes.
    paths = []
    for index, data in enumerate(PNGS):
        path = tmp_path / f"{index}.jpg"
        path.write_bytes(data.tobytes())
        paths.append(str(path))

    @pipeline_def(batch_size=len(paths), num_threads=2, device_id=None, seed=1)
    def pipe():
        encoded, _ = fn.readers.file(files=paths)
        return fn.decoders.image(encoded)

    pipeline = pipe()
    pipeline.build()
    (out,) = pipeline.run()
    for index, image in enumerate(IMAGES):
        np.testing.assert_array_equal(out.at(index), image)
