"""dct_scaling: a CPU decoder whose only reader is a fixed-size resize decodes at a reduced scale."""

from __future__ import annotations

import numpy as np
from _decoder_samples import encode, photo

import chute.ops.geometry.resize_ops as resize_ops
from chute import fn, pipeline_def
from chute.graph.passes import ScaledDecode
from chute.ops.decoders.image_codec import decode
from chute.ops.decoders.image_decoders import ScaledRegion
from chute.ops.geometry.resize_kernels import resize

BIG = [photo(480, 640, seed=i) for i in range(4)]
JPEGS = [np.frombuffer(encode(a, "JPEG", quality=92), dtype=np.uint8) for a in BIG]


def _pipeline(graph, num_threads=2):
    @pipeline_def(batch_size=len(JPEGS), num_threads=num_threads, device_id=None, seed=5)
    def pipe():
        encoded = fn.external_source(source=lambda: list(JPEGS), batch=True)
        return graph(encoded)

    pipeline = pipe()
    pipeline.build()
    return pipeline


def _downscale_to(pipeline):
    """The size the fusion pass told the decoder to decode for (ScaledDecode), or None."""
    decoder = next(n for n in pipeline._plan.nodes if n.schema.name.startswith("decoders."))
    hint = pipeline._plan.hints.get(decoder.id, ScaledDecode)
    return hint.size if hint is not None else None


def _samples(batch):
    return [np.asarray(batch.at(i)) for i in range(len(batch))]


def test_resize_to_a_fixed_size_makes_the_decoder_decode_smaller():
    pipe = _pipeline(
        lambda x: fn.resize(fn.decoders.image(x, dct_scaling=True), resize_x=100, resize_y=90)
    )
    assert _downscale_to(pipe) == (90, 100)
    (out,) = pipe.run()
    for got, data in zip(_samples(out), JPEGS):
        assert got.shape == (90, 100, 3)
        reference = resize(decode(data), resize_x=100, resize_y=90)
        diff = np.abs(got.astype(int) - reference)
        # the inverse DCT at 1/4 scale stands in for most of the antialiasing filter
        assert diff.mean() < 2.0 and np.percentile(diff, 99) <= 12


def test_random_crops_are_the_same_windows_fused_or_not(monkeypatch):
    def graph(x):
        return fn.resize(
            fn.decoders.image_random_crop(x, random_area=(0.5, 1.0), dct_scaling=True),
            size=(64, 64),
        )

    fused = _samples(_pipeline(graph).run()[0])
    monkeypatch.setattr(resize_ops, "fixed_output_size", lambda *a: None)
    plain_pipe = _pipeline(graph)
    assert _downscale_to(plain_pipe) is None
    plain = _samples(plain_pipe.run()[0])
    for a, b in zip(fused, plain):
        assert a.shape == b.shape == (64, 64, 3)
        # same window: only the filters differ (a shifted window would differ by far more)
        assert np.abs(a.astype(int) - b).mean() < 2.0


def test_results_do_not_depend_on_the_thread_count():
    def graph(x):
        return fn.resize(
            fn.decoders.image_random_crop(x, dct_scaling=True), resize_x=50, resize_y=40
        )

    one = _samples(_pipeline(graph, num_threads=1).run()[0])
    three = _samples(_pipeline(graph, num_threads=3).run()[0])
    for a, b in zip(one, three):
        np.testing.assert_array_equal(a, b)


def test_no_downscaling_where_the_decoded_image_is_seen_or_the_size_varies():
    def returned(x):
        images = fn.decoders.image(x, dct_scaling=True)
        return fn.resize(images, resize_x=64, resize_y=64), images

    def two_readers(x):
        images = fn.decoders.image(x, dct_scaling=True)
        return fn.resize(images, resize_x=64, resize_y=64), fn.flip(images)

    def aspect_kept(x):
        return fn.resize(fn.decoders.image(x, dct_scaling=True), resize_shorter=64)

    def per_sample_size(x):
        return fn.resize(
            fn.decoders.image(x, dct_scaling=True), size=fn.random.uniform(range=(40, 60), shape=2)
        )

    for graph in (returned, two_readers, aspect_kept, per_sample_size):
        pipe = _pipeline(graph)
        assert _downscale_to(pipe) is None, graph.__name__
        outputs = pipe.run()
        assert not any(isinstance(np.asarray(o.at(0)), ScaledRegion) for o in outputs)


def test_full_size_decodes_stay_exact():
    # 480x640 -> 300x400 needs the full scale: the decode and resize are the plain ones
    pipe = _pipeline(
        lambda x: fn.resize(fn.decoders.image(x, dct_scaling=True), resize_x=400, resize_y=300)
    )
    (out,) = pipe.run()
    for got, data in zip(_samples(out), JPEGS):
        np.testing.assert_array_equal(got, resize(decode(data), resize_x=400, resize_y=300))


def test_a_scaled_region_loses_its_window_when_sliced_or_copied():
    region = ScaledRegion.of(np.zeros((8, 9, 3), np.uint8), (0.5, 1.0, 7.5, 8.25))
    assert region.roi_window == (0.5, 1.0, 7.5, 8.25)
    assert region[1:].roi_window is None
    assert region.copy().roi_window is None


def test_off_by_default():
    pipe = _pipeline(lambda x: fn.resize(fn.decoders.image(x), resize_x=100, resize_y=90))
    assert _downscale_to(pipe) is None
    (out,) = pipe.run()
    for got, data in zip(_samples(out), JPEGS):
        np.testing.assert_array_equal(got, resize(decode(data), resize_x=100, resize_y=90))
