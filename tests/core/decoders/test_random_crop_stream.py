"""image_random_crop draws its windows from philox.SampleStream: the same windows as the
per-sample NumPy generator (ctx.rng), the centre-crop fallback included; and the codec
reads each JPEG header once."""

from __future__ import annotations

import numpy as np
import pytest
from _decoder_samples import encode, photo

from chute import fn, pipeline_def
from chute.ops.decoders import image_codec, turbo
from chute.ops.decoders.image_codec import DecodeError, decode
from chute.runtime import crop_window, philox
from chute.runtime.context import sample_generator
from chute.runtime.crop_window import centre_crop_window, random_crop_window

needs_turbo = pytest.mark.skipif(turbo.load() is None, reason="no libturbojpeg 3 found")


def _metas(rng, n):
    keyed = [{"sample_key": (int(rng.integers(0, 10**9)), int(rng.integers(0, 5)))}]
    return [keyed[0] if i % 3 == 0 else ({} if i % 3 == 1 else None) for i in range(n)]


@pytest.mark.parametrize(
    ("area", "ratio", "attempts"),
    [((0.08, 1.0), (3 / 4, 4 / 3), 10), ((0.5, 1.0), (0.2, 5.0), 1), ((0.9, 1.0), (1.0, 1.0), 3)],
)
def test_stream_windows_equal_generator_windows(area, ratio, attempts):
    rng = np.random.default_rng(attempts)
    n = 400
    shapes = np.stack([rng.integers(1, 700, n), rng.integers(1, 700, n)], 1)
    shapes[:40, 0] = rng.integers(1, 6, 40)  # flat strips: no attempt fits
    metas = _metas(rng, n)
    fallbacks = 0
    for i in range(n):
        h, w = int(shapes[i, 0]), int(shapes[i, 1])
        seed, node, epoch, iteration = 2**62 + i, 7, i % 3, i // 7
        ref = random_crop_window(
            h, w, area, ratio, attempts, sample_generator(seed, node, epoch, iteration, i, metas[i])
        )
        stream = philox.sample_stream(seed, node, epoch, iteration, i, metas[i])
        assert random_crop_window(h, w, area, ratio, attempts, stream) == ref, i
        fallbacks += ref == centre_crop_window(h, w, ratio)
    assert fallbacks > 10  # the centre-crop fallback was compared too


@pytest.mark.skipif(crop_window._native_window is None, reason="chute.runtime._native not built")
def test_c_windows_are_the_python_stream_windows(monkeypatch):
    rng = np.random.default_rng(11)
    cases = []
    for i in range(3000):
        h, w = (int(v) for v in rng.integers(1, 4000, 2))
        if i % 9 == 0:
            h = int(rng.integers(1, 6))  # strips: the centre-crop fallback
        area = ((0.08, 1.0), (0.5, 0.9), (1.0, 1.0))[i % 3]
        ratio = ((3 / 4, 4 / 3), (0.2, 5.0), (1.0, 1.0))[i % 3 - 1]
        key = tuple(int(v) for v in rng.integers(0, 2**63, 2, dtype=np.uint64) * 2 + i % 2)
        counter = (2**64 - 1 - i % 2, i, 2**63 + i, i % 2)  # the first block carries
        cases.append((h, w, area, ratio, 1 + i % 10, key, counter))
    native = [crop_window.stream_crop_window(*c) for c in cases]
    monkeypatch.setattr(crop_window, "_native_window", None)
    python = [crop_window.stream_crop_window(*c) for c in cases]
    assert native == python
    fallbacks = sum(n == centre_crop_window(c[0], c[1], c[3]) for n, c in zip(native, cases))
    assert fallbacks > 50


def test_batch_windows_fall_back_to_the_centre_crop_when_all_attempts_fail():
    rng = np.random.default_rng(3)
    n = 64
    shapes = np.stack([rng.integers(1, 4, n), rng.integers(300, 900, n)], 1)  # strips
    metas = [{} for _ in range(n)]
    key, ctr = philox.sample_counters(5, 2, 0, 1, metas)
    words = philox.stream_words(key, ctr, 2)  # 8 words: enough for 3 attempts
    got = philox.random_crop_windows(shapes, words, (0.5, 1.0), (0.75, 4 / 3), 3)
    for i in range(n):
        h, w = int(shapes[i, 0]), int(shapes[i, 1])
        g = sample_generator(5, 2, 0, 1, i, metas[i])
        ref = random_crop_window(h, w, (0.5, 1.0), (0.75, 4 / 3), 3, g)
        assert got[i] == ref == centre_crop_window(h, w, (0.75, 4 / 3))


SIZES = [(60, 80), (47, 33), (8, 120), (120, 6), (75, 75), (31, 90)]  # strips fall back
JPEGS = [
    np.frombuffer(encode(photo(h, w, seed=i), "JPEG", quality=92), np.uint8)
    for i, (h, w) in enumerate(SIZES)
]


@pytest.mark.parametrize("native", [True, False])
@pytest.mark.parametrize("threads", [1, 2])
def test_pipeline_crops_are_the_per_sample_generator_windows(threads, native, monkeypatch):
    if not native:
        monkeypatch.setattr(crop_window, "_native_window", None)
    area, ratio, attempts = (0.3, 1.0), (0.75, 4 / 3), 4

    @pipeline_def(batch_size=len(JPEGS), num_threads=threads, device_id=None, seed=29)
    def pipe():
        encoded = fn.external_source(source=lambda: list(JPEGS), batch=True)
        return fn.decoders.image_random_crop(
            encoded, random_area=area, random_aspect_ratio=ratio, num_attempts=attempts
        )

    p = pipe()
    p.build()
    (node,) = [n for n in p._executor.plan.nodes if n.schema.name == "decoders.image_random_crop"]
    fallbacks = 0
    for iteration in range(3):
        (out,) = p.run()
        for i, data in enumerate(JPEGS):
            h, w = SIZES[i]
            g = sample_generator(29, node.id, 0, iteration, i, {})
            y0, x0, ch, cw = random_crop_window(h, w, area, ratio, attempts, g)
            fallbacks += (y0, x0, ch, cw) == centre_crop_window(h, w, ratio)
            np.testing.assert_array_equal(out.at(i), decode(data, roi=(y0, x0, y0 + ch, x0 + cw)))
    assert fallbacks >= 6  # the strips, every iteration
    p.close()


def test_debug_mode_crops_equal_the_pipelines():
    def make(debug):
        @pipeline_def(batch_size=len(JPEGS), num_threads=1, device_id=None, seed=3, debug=debug)
        def pipe():
            encoded = fn.external_source(source=lambda: list(JPEGS), batch=True)
            return fn.decoders.image_random_crop(encoded, random_area=(0.2, 0.9))

        p = pipe()
        p.build()
        return [p.run()[0] for _ in range(2)]

    for a, b in zip(make(False), make(True)):
        for i in range(len(JPEGS)):
            np.testing.assert_array_equal(a.at(i), b.at(i))


@needs_turbo
def test_jpeg_header_is_read_once_per_decode_through_ctypes(monkeypatch):
    decoder = turbo.load()
    monkeypatch.setattr(decoder, "native", None)  # the compiled module reads it in C
    reads = []
    real = decoder._read_header
    monkeypatch.setattr(decoder, "_read_header", lambda *a: reads.append(1) or real(*a))
    monkeypatch.setattr(
        image_codec.simplejpeg, "decode_jpeg_header", lambda *a: pytest.fail("second parser")
    )
    image = decode(JPEGS[0], roi=lambda h, w: (1, 2, h - 3, w - 4))
    assert len(reads) == 1
    assert image.shape == (SIZES[0][0] - 4, SIZES[0][1] - 6, 3)


@needs_turbo
def test_a_damaged_header_does_not_spoil_the_next_decode():
    good = JPEGS[0]
    reference = decode(good)
    damaged = bytearray(good.tobytes())
    sos = damaged.index(b"\xff\xc4")  # a Huffman table
    damaged[sos + 4 : sos + 20] = b"\xff" * 16
    for _ in range(3):
        with pytest.raises(DecodeError):
            decode(bytes(damaged))
        np.testing.assert_array_equal(decode(good), reference)


@needs_turbo
@pytest.mark.parametrize("path", ["native", "ctypes"])
def test_a_decoded_jpeg_is_the_decoders_own_output_not_a_copy(monkeypatch, path):
    decoder = turbo.load()
    if path == "ctypes":
        monkeypatch.setattr(decoder, "native", None)
    elif decoder.native is None:
        pytest.skip("chute.runtime._native is not built")
    outputs = []
    real = decoder.decode_region

    def spy(*args, **kwargs):
        outputs.append(real(*args, **kwargs))
        return outputs[-1]

    monkeypatch.setattr(decoder, "decode_region", spy)
    for h, w in [(75, 75), (180, 160)]:  # small, and large enough for the output pool
        data = encode(photo(h, w, seed=h), "JPEG", quality=90)
        image = decode(data)
        region = decode(data, roi=(3, 5, 40, 50))
        np.testing.assert_array_equal(region, image[3:40, 5:50])
        for array in (image, region):
            assert np.shares_memory(array, outputs.pop(0))
            assert array.flags.c_contiguous
