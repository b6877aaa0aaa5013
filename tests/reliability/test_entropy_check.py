"""Corrupt entropy-coded JPEG data: refused alike by every decoder and every crop window.

A byte flipped inside a scan leaves the file's structure intact. chute's full CPU decode
refuses it; a region decoder (image_crop, image_slice, image_random_crop) used to keep it
whenever the damage lay below its window, and a GPU decoder decodes it into damaged
blocks. With ``check_entropy`` (on by default under on_error="skip" or "warn") every
decoder refuses what the full CPU decode refuses: the same skipped set on every device,
whatever the window. The GPU half of this is tests/core/errors/test_gpu_bad_inputs.py.
"""

from __future__ import annotations

import os

import cv2
import numpy as np
import pytest
from fuzz_corpus import write_corpus

from chute import Iterator, LastBatchPolicy, OperatorError, fn, pipeline_def
from chute.ops.decoders import image_codec, turbo
from chute.ops.decoders.entropy_check import corrupt_jpegs
from chute.ops.decoders.image_headers import DecodeError
from chute.ops.decoders.jpeg_structure import structure_errors

MUTANTS = int(os.environ.get("CHUTE_FUZZ_MUTANTS", "300"))
DECODERS = ("image", "image_crop", "image_slice", "image_random_crop")


def _photo(h: int = 96, w: int = 128, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    image = cv2.GaussianBlur(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), (5, 5), 1.5)
    return cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 92])[1].tobytes()


def _damaged_at_the_bottom() -> bytes:
    """A JPEG whose last rows' entropy-coded data is corrupt; its structure is intact and
    a full CPU decode refuses it (found by flipping bytes near the end of the scan)."""
    good = _photo()
    eoi = len(good) - 2
    for back in range(8, 400):
        data = bytearray(good)
        data[eoi - back] ^= 0x5A
        if b"\xff" in data[eoi - back : eoi - back + 2] or data[eoi - back] == 0xFF:
            continue
        data = bytes(data)
        if structure_errors([data])[0] is not None:
            continue
        try:
            image_codec.decode(data)
        except DecodeError:
            return data
    raise AssertionError("no flip near the end of the scan made a full decode fail")


def test_the_check_finds_what_the_full_decode_refuses():
    bad, good = _damaged_at_the_bottom(), _photo(seed=1)
    assert structure_errors([bad, good]) == [None, None]  # the structure check cannot see it
    with pytest.raises(DecodeError) as info:
        image_codec.decode(bad)
    faults = corrupt_jpegs([good, bad, b"\x89PNG\r\n\x1a\n", good], threads=2)
    assert faults == {1: str(info.value)}  # the CPU decoder's own reason; PNG not looked at
    assert "Corrupt JPEG data" in faults[1] or "premature" in faults[1], faults[1]


def test_a_region_above_the_damage_decodes_but_the_check_refuses_it():
    bad = _damaged_at_the_bottom()
    top = image_codec.decode(bad, roi=(0, 0, 16, 16))  # the damage lies below the window
    assert top.shape == (16, 16, 3)
    faults = corrupt_jpegs([bad])
    assert list(faults) == [0]


def test_huge_declared_sizes_are_refused_before_reading_the_data():
    good = bytearray(_photo())
    sof = bytes(good).index(b"\xff\xc0")
    good[sof + 5 : sof + 9] = (60000).to_bytes(2, "big") * 2  # 60000 x 60000 pixels
    decoder = turbo.load()
    if decoder is None:
        pytest.skip("no libturbojpeg 3 here")
    (fault,) = decoder.entropy_errors([bytes(good)], image_codec.MAX_IMAGE_PIXELS, 1)
    assert fault is not None and "over the limit" in fault, fault


def test_compiled_and_ctypes_checks_agree_on_the_fuzz_corpus(tmp_path):
    decoder = turbo.load()
    if decoder is None or decoder.native is None:
        pytest.skip("needs libturbojpeg 3 and chute's compiled module")
    files = write_corpus(tmp_path, 200)
    data = [p.read_bytes() for p in files if p.read_bytes()[:3] == b"\xff\xd8\xff"]
    native = decoder.entropy_errors(data, image_codec.MAX_IMAGE_PIXELS, 2)
    binding = [
        decoder._entropy_error(np.frombuffer(d, np.uint8), image_codec.MAX_IMAGE_PIXELS)
        for d in data
    ]
    assert [f is None for f in native] == [f is None for f in binding]
    assert sum(f is not None for f in native) > 10  # the corpus does hold corrupt JPEGs


def _decode(name: str, data, check):
    extra = {} if check == "default" else {"check_entropy": check}
    if name == "image":
        return fn.decoders.image(data, **extra)
    if name == "image_crop":
        return fn.decoders.image_crop(data, crop=(8, 8), **extra)
    if name == "image_slice":
        return fn.decoders.image_slice(data, rel_start=(0.0, 0.0), rel_shape=(0.5, 0.5), **extra)
    return fn.decoders.image_random_crop(data, **extra)


def _run(files: list[str], decoder: str, on_error: str, check="default"):
    @pipeline_def(
        batch_size=16,
        num_threads=2,
        seed=0,
        device_id=None,
        on_error=on_error,
        max_error_entries=len(files),
    )
    def pipe():
        data, _ = fn.readers.file(files=files, name="R")
        return _decode(decoder, data, check), fn.get_property(data, key="source_info")

    p = pipe()
    it = Iterator(p, ["image", "path"], reader_name="R", last_batch_policy=LastBatchPolicy.PARTIAL)
    kept = [str(b["path"].at(k)) for (b,) in it for k in range(b.real)]
    errors = p.errors()
    p.close()
    return kept, errors


@pytest.fixture(scope="module")
def damaged(tmp_path_factory):
    root = tmp_path_factory.mktemp("damaged")
    (root / "bad.jpg").write_bytes(_damaged_at_the_bottom())
    for k in range(3):
        (root / f"good{k}.jpg").write_bytes(_photo(seed=k + 2))
    return sorted(str(p) for p in root.iterdir())


@pytest.mark.parametrize("decoder", ["image_crop", "image_slice"])
def test_region_decoders_skip_a_file_damaged_below_their_window(damaged, decoder):
    kept, errors = _run(damaged, decoder, "skip")
    assert [os.path.basename(p) for p in kept] == ["good0.jpg", "good1.jpg", "good2.jpg"]
    assert [os.path.basename(e["path"]) for e in errors] == ["bad.jpg"]
    assert "Corrupt JPEG data" in errors[0]["reason"] or "premature" in errors[0]["reason"]
    # switched off, the window above the damage decodes as before
    kept, errors = _run(damaged, decoder, "skip", check=False)
    assert len(kept) == 4 and not errors
    # under "raise" it is off by default (DALI's behaviour) and on when asked
    kept, _ = _run(damaged, decoder, "raise")
    assert len(kept) == 4
    with pytest.raises(OperatorError, match="bad.jpg"):
        _run(damaged, decoder, "raise", check=True)


def test_sample_wise_decoding_checks_too(damaged):
    """Debug mode runs the decoder sample by sample (run_sample), not batch-wise."""

    @pipeline_def(batch_size=4, num_threads=1, seed=0, device_id=None, debug=True)
    def pipe():
        data, _ = fn.readers.file(files=damaged, name="R")
        return fn.decoders.image_crop(data, crop=(8, 8), check_entropy=True)

    p = pipe()
    with pytest.raises(Exception, match="Corrupt JPEG data|premature"):
        p.run()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The fuzz corpus, and byte flips in the scans of photos large enough for a window
    to lie above the damage."""
    root = tmp_path_factory.mktemp("fuzz")
    files = [str(p) for p in write_corpus(root, MUTANTS)]
    rng = np.random.default_rng(31)
    for k in range(80):
        data = bytearray(_photo(seed=100 + k % 8))
        sos = bytes(data).index(b"\xff\xda")
        for at in rng.integers(sos + 20, len(data) - 2, int(rng.integers(1, 3))):
            data[at] ^= int(rng.integers(1, 256))
        (root / f"scanflip{k:03d}.jpg").write_bytes(bytes(data))
        files.append(str(root / f"scanflip{k:03d}.jpg"))
    return files


def test_every_cpu_decoder_skips_the_same_corrupt_jpegs(corpus):
    """The files refused for their data (not for a window that does not fit) are the same
    for the full decoder and the three region decoders."""
    kept_full, errors_full = _run(corpus, "image", "skip")
    refused_full = {e["path"] for e in errors_full}
    assert sorted(kept_full + list(refused_full)) == sorted(corpus)
    for decoder in DECODERS[1:]:
        kept, errors = _run(corpus, decoder, "skip")
        assert sorted(kept + [e["path"] for e in errors]) == sorted(corpus)
        window = {e["path"] for e in errors if "window" in e["reason"] or "crop" in e["reason"]}
        assert {e["path"] for e in errors} - window == refused_full - window, decoder
        assert not set(kept) & refused_full, decoder
    # without the check a window above the damage keeps files the full decode refuses
    kept, _ = _run(corpus, "image_slice", "skip", check=False)
    assert set(kept) & refused_full


@pytest.fixture
def checks(monkeypatch):
    """The number of buffers of each entropy check call made while the test runs."""
    from chute.ops.decoders import entropy_check

    seen: list[int] = []
    real = entropy_check.corrupt_jpegs

    def counting(buffers, threads=1):
        seen.append(len(buffers))
        return real(buffers, threads)

    monkeypatch.setattr(entropy_check, "corrupt_jpegs", counting)
    return seen


def test_each_file_is_checked_once_by_its_dataset_index(checks):
    from chute.ops.decoders import entropy_check

    seen = checks
    bad, good = _damaged_at_the_bottom(), _photo(seed=1)
    memo = entropy_check.CheckedFiles()
    metas = [{"index": 7}, {"index": 3}, None]
    first = memo.corrupt([good, bad, bad], metas)
    assert sorted(first) == [1, 2] and seen == [3]
    # a later epoch: the indexed files are known (the bad one keeps its reason); the
    # sample without an index is checked again
    again = memo.corrupt([good, bad, bad], metas)
    assert again == first and seen == [3, 1]
    # the file at an index changed size: checked again
    memo.corrupt([_photo(seed=2)], [{"index": 7}])
    assert seen == [3, 1, 1]


def test_later_epochs_report_the_skips_without_checking_again(damaged, checks):
    checked = checks

    # not pipelined: a prefetched batch of the next epoch could be checked before this
    # epoch's verdicts are in (a few checks more, by timing), which the count would see
    @pipeline_def(
        batch_size=4, num_threads=2, seed=0, device_id=None, on_error="skip", exec_pipelined=False
    )
    def pipe():
        data, _ = fn.readers.file(files=damaged, name="R")
        image = fn.decoders.image_crop(data, crop=(8, 8), crop_pos_y=0.0)
        return image, fn.get_property(data, key="source_info")

    p = pipe()
    it = Iterator(p, ["image", "path"], reader_name="R", last_batch_policy=LastBatchPolicy.PARTIAL)
    for epoch in range(3):
        kept = [str(b["path"].at(k)) for (b,) in it for k in range(b.real)]
        assert len(kept) == 3
        skipped = [e for e in p.errors() if e["epoch"] == epoch]
        assert [os.path.basename(e["path"]) for e in skipped] == ["bad.jpg"]
        it.reset()
    p.close()
    assert sum(checked) == 4  # the first epoch's four files, once
