"""Bad files through the mixed (GPU) decoders: the same samples kept as on the CPU, none lost.

Every mixed decoder (image, image_crop, image_slice, image_random_crop) gets the bad
corpus of issue 7 plus progressive, CMYK, grayscale, truncated and flipped-byte JPEGs
and headers that claim huge sizes. Under on_error="skip" no error escapes, the kept
files are exactly those the CPU decoder keeps and ``pipe.errors()`` names every other
one; under "raise" the error names a bad file. A fuzz corpus of 2,000 mutants (fixed
seed) loses no file: delivered + skipped = files, for each decoder.
"""

from __future__ import annotations

import os
import struct

import numpy as np
import pytest
from _bad_corpus import build_corpus, encode, huge_jpeg, huge_png, restore_permissions, rgb

from chute import Iterator, LastBatchPolicy, OperatorError, fn, pipeline_def

pytestmark = pytest.mark.gpu

DECODERS = ("image", "image_crop", "image_slice", "image_random_crop")


def decode(name: str, data, device: str):
    if name == "image":
        return fn.decoders.image(data, device=device)
    if name == "image_crop":
        return fn.decoders.image_crop(data, device=device, crop=(8, 8))
    if name == "image_slice":
        return fn.decoders.image_slice(
            data, device=device, rel_start=(0.25, 0.25), rel_shape=(0.5, 0.5)
        )
    return fn.decoders.image_random_crop(data, device=device)


def run_files(files: list[str], decoder: str, device: str, on_error: str, batch: int = 8):
    """Read ``files`` once through ``decoder``; the delivered paths and pipe.errors()."""

    @pipeline_def(
        batch_size=batch,
        num_threads=2,
        device_id=0,
        seed=3,
        on_error=on_error,
        max_error_entries=len(files),  # every skipped file named (the default keeps 1,000)
    )
    def pipe():
        data, _ = fn.readers.file(files=files, name="R")
        image = decode(decoder, data, device)
        return image, fn.get_property(data, key="source_info")

    p = pipe()
    p.build()
    delivered: list[str] = []
    it = Iterator(p, ["image", "path"], reader_name="R", last_batch_policy=LastBatchPolicy.PARTIAL)
    for (b,) in it:  # one epoch
        for k in range(b.real):
            delivered.append(str(b["path"].at(k)))
            shape = np.asarray(b["image"].as_cpu().at(k)).shape
            assert len(shape) == 3 and shape[0] > 0 and shape[1] > 0
    errors = p.errors()
    p.close()
    return delivered, errors


def extra_files(root) -> dict[str, bool]:
    """More JPEG cases beside the issue-7 corpus: name -> whether it is a good file."""
    big = encode(rgb(50, 48), "JPEG", quality=90)
    cases = {
        "progressive.jpg": (encode(rgb(51, 48), "JPEG", quality=85, progressive=True), True),
        "cmyk48.jpg": (encode(rgb(52, 48).convert("CMYK"), "JPEG"), True),
        "gray48.jpg": (encode(rgb(53, 48).convert("L"), "JPEG"), True),
        "cut_90.jpg": (big[: int(len(big) * 0.9)], False),
        "cut_eoi.jpg": (big[:-2], False),
        "cut_header.jpg": (big[:40], False),
        "huge_wide.jpg": (huge_jpeg(big, width=60_000, height=60_000), False),
        "zero_size.jpg": (huge_jpeg(big, width=0, height=0), False),
        "huge2.png": (huge_png(70_000, 70_000), False),
    }
    sos = big.index(b"\xff\xda")
    for k, at in enumerate((sos + 30, sos + 200, len(big) - 40)):
        flipped = bytearray(big)
        flipped[at] ^= 0xFF
        cases[f"flip{k}.jpg"] = (bytes(flipped), None)  # either way, but the same on both
    (root / "x").mkdir()
    out = {}
    for name, (data, good) in cases.items():
        (root / "x" / name).write_bytes(data)
        out[str(root / "x" / name)] = good
    return out


@pytest.fixture
def corpus_files(tmp_path):
    corpus = build_corpus(tmp_path / "data", with_unreadable=False)
    extra = extra_files(corpus.root)
    files = sorted(str(corpus.root / n) for n in [*corpus.good, *corpus.bad]) + sorted(extra)
    yield corpus, files, extra
    restore_permissions(corpus)


@pytest.mark.parametrize("decoder", DECODERS)
def test_mixed_decoders_keep_what_the_cpu_keeps_under_skip(corpus_files, decoder):
    corpus, files, extra = corpus_files
    cpu, cpu_errors = run_files(files, decoder, "cpu", "skip")
    gpu, gpu_errors = run_files(files, decoder, "mixed", "skip")
    # Flipped entropy-coded data included: under skip both check it (check_entropy), so
    # the same files are kept and skipped on either device.
    assert sorted(gpu) == sorted(cpu)
    assert sorted(gpu) == sorted(set(gpu))
    skipped = {e["path"] for e in gpu_errors}
    assert skipped == {e["path"] for e in cpu_errors}
    assert skipped | set(gpu) == set(files)  # no file lost
    assert not skipped & set(gpu)
    for name in corpus.bad:
        assert str(corpus.root / name) in skipped, name
    for path, good in extra.items():
        if good is not None:
            assert (path in set(gpu)) == good, path
    for e in gpu_errors:
        assert "decoders." + decoder in e["operator"], e
        assert e["reason"], e


@pytest.mark.parametrize("decoder", DECODERS)
def test_mixed_decoders_refuse_huge_headers_before_allocating(tmp_path, decoder):
    big = encode(rgb(60, 48), "JPEG", quality=90)
    path = tmp_path / "huge.jpg"
    path.write_bytes(huge_jpeg(big, width=65_000, height=65_000))
    good = tmp_path / "good.jpg"
    good.write_bytes(big)
    with pytest.raises(OperatorError) as info:
        run_files([str(good), str(path)], decoder, "mixed", "raise", batch=2)
    message = str(info.value)
    assert "huge.jpg" in message and "max_pixels" in message, message
    assert "decoders." + decoder in message, message


def mutants(count: int, seed: int = 2027) -> list[bytes]:
    """``count`` mutants of a few seed images: byte flips, truncations, header writes, ..."""
    rng = np.random.default_rng(seed)
    seeds = [
        encode(rgb(70, 40), "JPEG", quality=90),
        encode(rgb(71, 40), "JPEG", quality=85, progressive=True),
        encode(rgb(72, 40).convert("L"), "JPEG"),
        encode(rgb(73, 24), "PNG"),
    ]
    out = []
    for k in range(count):
        data = bytearray(seeds[k % len(seeds)])
        kind = k % 6
        if kind == 0:  # flip bytes
            for at in rng.integers(0, len(data), rng.integers(1, 4)):
                data[at] ^= int(rng.integers(1, 256))
        elif kind == 1:  # truncate
            data = data[: int(rng.integers(0, len(data)))]
        elif kind == 2:  # write the header
            at = int(rng.integers(0, min(len(data), 200)))
            value = rng.choice([b"\x00", b"\xff", b"\xff\xff", b"\x7f\xff\xff\xff", b"\x00\x00"])
            data[at : at + len(value)] = value
        elif kind == 3:  # claim a huge (or zero) size in the frame header
            if data[:2] == b"\xff\xd8":
                sof = bytes(data).find(b"\xff\xc0")
                sof = sof if sof >= 0 else bytes(data).find(b"\xff\xc2")
                h, w = (int(v) for v in rng.choice([0, 1, 40, 30_000, 65_535], 2))
                data[sof + 5 : sof + 9] = struct.pack(">HH", h, w)
            else:
                data[16:24] = struct.pack(">II", *rng.integers(0, 2**31, 2).tolist())
        elif kind == 4:  # delete a run
            at = int(rng.integers(0, len(data)))
            del data[at : at + int(rng.integers(1, 64))]
        else:  # insert random bytes
            at = int(rng.integers(0, len(data)))
            data[at:at] = rng.bytes(int(rng.integers(1, 64)))
        out.append(bytes(data))
    return out


@pytest.fixture(scope="module")
def fuzz_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("fuzz")
    files = []
    for k, data in enumerate(mutants(2_000)):
        path = root / f"m{k:04d}.{'png' if k % 4 == 3 else 'jpg'}"
        path.write_bytes(data)
        files.append(str(path))
    for k in range(0, 2_000, 97):  # and some untouched files
        path = root / f"good{k:04d}.jpg"
        path.write_bytes(encode(rgb(k, 40), "JPEG", quality=90))
        files.append(str(path))
    return files


@pytest.mark.parametrize("decoder", DECODERS)
def test_fuzz_corpus_loses_no_file_through_mixed_decoders(fuzz_files, decoder):
    delivered, errors = run_files(fuzz_files, decoder, "mixed", "skip", batch=16)
    skipped = [e["path"] for e in errors]
    assert len(delivered) + len(skipped) == len(fuzz_files)
    assert set(delivered) | set(skipped) == set(fuzz_files)
    assert not [p for p in skipped if os.path.basename(p).startswith("good")]
    # Against the CPU: the same files kept and skipped (the entropy check included).
    cpu, cpu_errors = run_files(fuzz_files, decoder, "cpu", "skip", batch=16)
    reasons = {e["path"]: e["reason"] for e in cpu_errors}
    assert sorted(delivered) == sorted(cpu), (
        [(p, reasons.get(p)) for p in sorted(set(delivered) - set(cpu))][:10],
        sorted(set(cpu) - set(delivered))[:10],
    )
    assert set(skipped) == set(reasons)
    print(f"{decoder}: {len(fuzz_files)} files, GPU kept {len(delivered)}, CPU {len(cpu)}")
