"""CPU decoders run batch-wise (chunks decoded without the GIL, batch_decode.py): the same
outputs, windows and errors as the per-sample path of debug mode."""

from __future__ import annotations

import numpy as np
import pytest
from _decoder_samples import encode, photo
from PIL import Image

from chute import fn, pipeline_def
from chute.ops.decoders import image_codec, turbo
from chute.runtime.errors import OperatorError

needs_native = pytest.mark.skipif(
    turbo.load() is None or turbo.load().native is None, reason="chute.runtime._native not built"
)

_GRAY = encode(photo(40, 57, seed=9)[:, :, 0], "JPEG", quality=90)
_CMYK = encode(Image.fromarray(photo(30, 44, seed=3)).convert("CMYK"), "JPEG", quality=90)
# a mixed batch: JPEGs of each subsampling and sizes, gray, CMYK, PNG, WebP
SAMPLES = [
    encode(photo(75 + 7 * i, 101 - 5 * i, seed=i), "JPEG", quality=90, subsampling=i % 3)
    for i in range(9)
] + [
    _GRAY,
    _CMYK,
    encode(photo(33, 47, seed=20), "PNG"),
    encode(photo(50, 38, seed=21), "WEBP", lossless=True),
]
BUFS = [np.frombuffer(s, np.uint8) for s in SAMPLES]


def _outputs(op, debug, threads=3, samples=BUFS, **kw):
    @pipeline_def(batch_size=len(samples), num_threads=threads, device_id=None, seed=5, debug=debug)
    def pipe():
        encoded = fn.external_source(source=lambda: list(samples), batch=True)
        return op(encoded, **kw)

    p = pipe()
    p.build()
    try:
        return [
            [np.asarray(out.at(i)) for i in range(len(samples))] for (out,) in [p.run(), p.run()]
        ]
    finally:
        p.close()


@pytest.mark.parametrize(
    ("op", "kw"),
    [
        (fn.decoders.image, {}),
        (fn.decoders.image, {"output_type": "BGR"}),
        (fn.decoders.image, {"output_type": "GRAY"}),
        (fn.decoders.image_random_crop, {"random_area": (0.1, 0.9)}),
        (fn.decoders.image_crop, {"crop": (20, 25), "crop_pos_x": 0.3}),
        (fn.decoders.image_slice, {"rel_start": (0.25, 0.1), "rel_shape": (0.5, 0.6)}),
    ],
)
def test_batch_outputs_equal_the_per_sample_outputs(op, kw):
    batch, single = _outputs(op, False, **kw), _outputs(op, True, **kw)
    for got, want in zip(batch, single):
        for a, b in zip(got, want):
            assert a.shape == b.shape and a.flags.c_contiguous
            np.testing.assert_array_equal(a, b)


def test_the_thread_count_does_not_change_the_batch():
    one = _outputs(fn.decoders.image_random_crop, False, threads=1)
    four = _outputs(fn.decoders.image_random_crop, False, threads=4)
    for got, want in zip(four, one):
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)


def test_a_corrupt_sample_in_a_chunk_names_itself_or_is_skipped():
    broken = BUFS[4][: BUFS[4].size // 2].copy()
    samples = [*BUFS[:4], broken, *BUFS[5:8]]
    with pytest.raises(OperatorError, match=r"decoders.image.*sample 4") as info:
        _outputs(fn.decoders.image, False, samples=samples)
    assert "truncated file" in str(info.value)

    @pipeline_def(batch_size=len(samples), num_threads=2, device_id=None, on_error="skip")
    def pipe():
        encoded = fn.external_source(source=lambda: list(samples), batch=True)
        return fn.decoders.image(encoded)

    p = pipe()
    p.build()
    (out,) = p.run()
    p.close()
    real = [m.get("real", True) for m in out.meta]
    # the good ones first; the hole goes to the source's next sample (issue 30)
    assert real == [True] * 8
    expected = [image_codec.decode(s) for s in samples if s is not broken]
    expected.append(image_codec.decode(samples[0]))
    for i, want in enumerate(expected):
        np.testing.assert_array_equal(np.asarray(out.at(i)), want)


@pytest.mark.parametrize("path", ["native", "ctypes", "simplejpeg"])
def test_decode_jobs_by_every_path(monkeypatch, path):
    decoder = turbo.load()
    if path == "native" and (decoder is None or decoder.native is None):
        pytest.skip("chute.runtime._native not built")
    if path == "ctypes":
        if decoder is None:
            pytest.skip("no libturbojpeg 3 found")
        monkeypatch.setattr(decoder, "native", None)
    if path == "simplejpeg":
        monkeypatch.setattr(turbo, "load", lambda: None)
    # well-formed markers (the scan is cut short, then EOI): only the decoder finds it
    cut = BUFS[2][: BUFS[2].size // 3]
    bad = np.concatenate([cut, np.frombuffer(b"\xff\xd9", np.uint8)])
    rois = [None, (3, 5, 40, 60), lambda h, w: (1, 2, h - 1, w // 2), None, None]
    data = [BUFS[0], BUFS[1], BUFS[9], bad, BUFS[11]]
    jobs = [image_codec.prepare(d, roi=r) for d, r in zip(data, rois)]
    errors = image_codec.decode_jobs(jobs)
    assert [e is None for e in errors] == [True, True, True, False, True]
    assert isinstance(errors[3], image_codec.DecodeError) and "jpeg" in str(errors[3])
    for k in (0, 1, 2, 4):
        image = image_codec.finish(jobs[k])[0]
        np.testing.assert_array_equal(image, image_codec.decode(data[k], roi=rois[k]))


@needs_native
def test_bad_batch_items_raise_before_decoding():
    native = turbo.load().native
    out = np.zeros((10, 10, 3), np.uint8)
    with pytest.raises(ValueError, match="out must be"):
        gray = np.zeros((10, 10, 1), np.uint8)  # RGB asked
        native.jpeg_decode_batch([(BUFS[0], out, 0, 8, 0, 0), (BUFS[0], gray, 0, 8, 0, 0)])
    assert not out.any()  # the first item was not decoded either
    with pytest.raises(TypeError):
        native.jpeg_decode_batch([[BUFS[0], out, 0, 8, 0, 0]])
    assert native.jpeg_decode_batch([]) == []


@needs_native
@pytest.mark.parametrize("threads", [2, 5, 64])
def test_batch_items_on_native_threads_give_what_one_thread_gives(threads):
    """Each worker takes the next item: every item decoded once, into its own output, the
    same pixels and the same messages as on one thread, whatever the thread count."""
    native = turbo.load().native
    cut = np.concatenate([BUFS[2][: BUFS[2].size // 3], np.frombuffer(b"\xff\xd9", np.uint8)])
    data = [*BUFS, cut, np.frombuffer(b"not a jpeg", np.uint8)] * 3

    def run(n_threads):
        outs, items = [], []
        for k, buf in enumerate(data):
            h, w = (8, 12) if k % 3 else (4, 5)
            out = np.full((h, w, 3), 7, np.uint8)
            outs.append(out)
            items.append((buf, out, k % 2, 8, k % 4, k % 5))
        return outs, native.jpeg_decode_batch(items, n_threads)

    ref_out, ref_errors = run(1)
    got_out, got_errors = run(threads)
    assert got_errors == ref_errors
    n = len(BUFS) + 2
    bad = [k for k, e in enumerate(ref_errors) if e is not None]
    # CMYK, PNG, WebP and the non-image, in each copy (the cut JPEG's top rows decode)
    assert {c * n + k for c in range(3) for k in (n - 5, n - 4, n - 3, n - 1)} <= set(bad)
    assert len(bad) < len(data) // 2
    for a, b in zip(got_out, ref_out):
        np.testing.assert_array_equal(a, b)
