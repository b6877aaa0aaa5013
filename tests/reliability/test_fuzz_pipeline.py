"""The fuzz corpus through ``readers.file`` -> ``decoders.image`` under on_error="skip".

No crash (a crash in native code kills the test run), no hang (each epoch has a
deadline), and every file either delivered once as a valid image or skipped once with a
report: delivered + skipped = files. The default run takes a fast subset
(``CHUTE_FUZZ_MUTANTS``, default 300); ``nox -s fuzz`` runs the full corpus (2,100
mutants, fixed seed) and the Hypothesis property tests at more examples.
"""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest
from fuzz_corpus import seed_images, write_corpus

from chute import Iterator, LastBatchPolicy, fn, pipeline_def

MUTANTS = int(os.environ.get("CHUTE_FUZZ_MUTANTS", "300"))
EPOCH_DEADLINE_S = float(os.environ.get("CHUTE_FUZZ_DEADLINE_S", "120"))


def _run_epoch(files: list[str], device: str = "cpu") -> tuple[list, list]:
    @pipeline_def(
        batch_size=16,
        num_threads=2,
        seed=0,
        on_error="skip",
        device_id=None,
        max_error_entries=len(files),  # every skipped file named (the default keeps 1,000)
    )
    def pipe():
        data, _ = fn.readers.file(files=files, name="R")
        image = fn.decoders.image(data, device=device)
        return image, fn.get_property(data, key="source_info")

    p = pipe()
    it = Iterator(p, ["image", "path"], reader_name="R", last_batch_policy=LastBatchPolicy.PARTIAL)
    delivered: list[tuple[str, tuple]] = []
    box: dict = {}

    def epoch() -> None:
        try:
            for (b,) in it:
                for k in range(b.real):
                    image = np.asarray(b["image"].at(k))
                    delivered.append((str(b["path"].at(k)), image.shape, image.dtype))
        except BaseException as exc:  # reported below
            box["error"] = exc

    thread = threading.Thread(target=epoch, daemon=True)
    thread.start()
    thread.join(EPOCH_DEADLINE_S)
    assert not thread.is_alive(), f"the epoch hangs after {EPOCH_DEADLINE_S} s"
    if "error" in box:
        raise box["error"]
    errors = p.errors()
    p.close()
    return delivered, errors


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return [str(p) for p in write_corpus(tmp_path_factory.mktemp("fuzz"), MUTANTS)]


def test_corpus_is_reproducible(tmp_path):
    a = write_corpus(tmp_path / "a", 40)
    b = write_corpus(tmp_path / "b", 40)
    assert [p.name for p in a] == [p.name for p in b]
    assert all(x.read_bytes() == y.read_bytes() for x, y in zip(a, b))
    kinds = {p.name.split("_")[1] for p in a if p.name.startswith("m")}
    assert {"flip", "trunc", "header"} <= kinds


def test_the_seeds_cover_every_format():
    delivered_formats = {name.rsplit(".", 1)[1] for name, _ in seed_images()}
    assert delivered_formats == {"jpg", "png", "webp", "bmp", "tif", "pnm"}


def test_the_corpus_is_delivered_or_skipped_once_each(corpus):
    delivered, errors = _run_epoch(corpus)
    got = [path for path, _, _ in delivered]
    skipped = [e["path"] for e in errors]
    assert len(got) == len(set(got)) and len(skipped) == len(set(skipped))
    assert not set(got) & set(skipped)
    assert sorted(got + skipped) == sorted(corpus)  # delivered + skipped = files
    seeds = [p for p in corpus if os.path.basename(p).startswith("seed")]
    assert set(seeds) <= set(got)  # every valid seed decodes
    for path, shape, dtype in delivered:
        assert len(shape) == 3 and shape[2] in (1, 3) and min(shape) >= 1, (path, shape)
        assert dtype == np.uint8, (path, dtype)
    reasons = [e["reason"] for e in errors]
    assert all(r and "decoders.image" in e["operator"] for r, e in zip(reasons, errors))


MIXED = ("image", "image_crop", "image_slice", "image_random_crop")


def _run_decoder(files: list[str], decoder: str, device: str) -> tuple[set, set]:
    """(delivered, skipped) paths of one epoch of ``decoder`` on ``device`` under skip."""

    @pipeline_def(
        batch_size=16,
        num_threads=2,
        seed=0,
        on_error="skip",
        device_id=0 if device == "mixed" else None,
        max_error_entries=len(files),
    )
    def pipe():
        data, _ = fn.readers.file(files=files, name="R")
        kw = {"device": device}
        if decoder == "image":
            image = fn.decoders.image(data, **kw)
        elif decoder == "image_crop":
            image = fn.decoders.image_crop(data, crop=(8, 8), **kw)
        elif decoder == "image_slice":
            image = fn.decoders.image_slice(
                data, rel_start=(0.25, 0.25), rel_shape=(0.5, 0.5), **kw
            )
        else:
            image = fn.decoders.image_random_crop(data, **kw)
        return image, fn.get_property(data, key="source_info")

    p = pipe()
    it = Iterator(p, ["image", "path"], reader_name="R", last_batch_policy=LastBatchPolicy.PARTIAL)
    delivered = [str(b["path"].at(k)) for (b,) in it for k in range(b.real)]
    skipped = [e["path"] for e in p.errors()]
    p.close()
    assert len(delivered) == len(set(delivered)) and len(skipped) == len(set(skipped))
    return set(delivered), set(skipped)


@pytest.mark.gpu
@pytest.mark.parametrize("decoder", MIXED)
def test_mixed_decoders_skip_the_cpu_decoders_set_on_the_corpus(corpus, decoder):
    """The corpus (every format; ``nox -s fuzz`` on the device: 2,100 mutants) through a
    mixed decoder under skip: delivered + skipped = files, and the very files the same
    decoder skips on the CPU (check_entropy makes corrupt scan data count alike)."""
    gpu_kept, gpu_skipped = _run_decoder(corpus, decoder, "mixed")
    assert gpu_kept | gpu_skipped == set(corpus) and not gpu_kept & gpu_skipped
    cpu_kept, cpu_skipped = _run_decoder(corpus, decoder, "cpu")
    assert gpu_skipped == cpu_skipped, (
        sorted(gpu_skipped - cpu_skipped)[:10],
        sorted(cpu_skipped - gpu_skipped)[:10],
    )
