"""Every bad input of issue 7 through readers.file -> decoders.image -> chute.Iterator.

Under on_error="raise" the user gets one error naming the file, the operator
and the reason; under "skip" and "warn" each good sample arrives exactly once
per epoch and ``pipe.errors()`` lists each bad file with operator, reason and
epoch ("warn" also logs each one on the "chute" logger).
"""

from __future__ import annotations

import os
import time
import tracemalloc
from collections import defaultdict

import numpy as np
import pytest
from _bad_corpus import build_corpus, can_block_reads, encode, restore_permissions, rgb

from chute import Iterator, LastBatchPolicy, OperatorError, fn, pipeline_def
from chute.ops.decoders.image_codec import DecodeError, decode

OUTPUTS = ["image", "label", "path"]
CLASS_LABELS = {"a": 0, "b": 1, "c": 2}  # b has no images but still takes label 1


@pytest.fixture
def corpus(tmp_path):
    c = build_corpus(tmp_path / "data")
    yield c
    restore_permissions(c)


def make_pipe(on_error: str, batch_size: int = 4, **reader_args):
    @pipeline_def(batch_size=batch_size, num_threads=2, seed=0, on_error=on_error)
    def pipe():
        data, label = fn.readers.file(name="R", **reader_args)
        image = fn.decoders.image(data)
        return image, label, fn.get_property(data, key="source_info")

    return pipe()


def paths_of(batch) -> list[str]:
    # Not as_array(): a PARTIAL batch may be empty when all its samples were bad.
    return [str(batch["path"].at(k)) for k in range(len(batch["path"]))]


def relpath(corpus, path: str) -> str:
    return os.path.relpath(path, corpus.root).replace(os.sep, "/")


# ---- skip and warn -----------------------------------------------------------------------------


@pytest.mark.parametrize("on_error", ["skip", "warn"])
@pytest.mark.parametrize("policy", [LastBatchPolicy.PARTIAL, LastBatchPolicy.FILL])
def test_skip_and_warn_deliver_each_good_sample_once_per_epoch(corpus, on_error, policy, caplog):
    deleted = corpus.root / "c" / "deleted.png"
    deleted.write_bytes(encode(rgb(40), "PNG"))
    p = make_pipe(on_error, file_root=str(corpus.root), random_shuffle=True)
    p.build()  # lists the files
    deleted.unlink()  # ... and this one goes away before it is read
    bad = {**corpus.bad, "c/deleted.png": "No such file"}

    it = Iterator(p, OUTPUTS, reader_name="R", last_batch_policy=policy)
    batches_per_epoch = len(it)
    epochs = 2
    with caplog.at_level("WARNING", logger="chute"):
        for epoch in range(epochs):
            seen, batches = [], 0
            for (b,) in it:
                batches += 1
                paths = paths_of(b)
                assert len(paths) == (4 if policy is LastBatchPolicy.FILL else b.real)
                for k, path in enumerate(paths):
                    image = b["image"].at(k)
                    assert image.dtype == np.uint8 and image.ndim == 3 and image.shape[2] == 3
                    name = relpath(corpus, path)
                    assert name not in bad  # every slot holds a good sample
                    assert int(b["label"].at(k)[0]) == CLASS_LABELS[name.split("/")[0]]
                seen += paths[: b.real]
            assert batches == batches_per_epoch
            assert sorted(seen) == corpus.paths(corpus.good), f"epoch {epoch}"
            it.reset()
    assert len(it) == batches_per_epoch

    by_file = defaultdict(list)
    for e in p.errors():
        by_file[relpath(corpus, e["path"])].append(e)
    assert set(by_file) == set(bad)
    for name, entries in by_file.items():
        assert sorted(e["epoch"] for e in entries) == list(range(epochs)), name
        for e in entries:
            reads = name in ("c/deleted.png", corpus.unreadable)
            assert ("fn.readers.file" if reads else "fn.decoders.image") in e["operator"], e
            assert bad[name] in e["reason"], e

    warnings = [r for r in caplog.records if r.name == "chute" and r.levelname == "WARNING"]
    if on_error == "warn":
        assert len(warnings) == len(bad) * epochs
        for name in bad:
            assert any(name.split("/")[1] in r.getMessage() for r in warnings), name
    else:
        assert warnings == []
    p.close()


def test_skip_with_shards_covers_the_good_samples_once(corpus):
    pipes = [
        make_pipe("skip", file_root=str(corpus.root), num_shards=2, shard_id=s, random_shuffle=True)
        for s in range(2)
    ]
    iterators = [Iterator(p, OUTPUTS, reader_name="R") for p in pipes]
    assert len(iterators[0]) == len(iterators[1])
    seen = []
    for it in iterators:
        for (b,) in it:
            seen += paths_of(b)[: b.real]
    assert sorted(seen) == corpus.paths(corpus.good)
    assert len(pipes[0].errors()) + len(pipes[1].errors()) == len(corpus.bad)
    for p in pipes:
        p.close()


# ---- raise -------------------------------------------------------------------------------------


def _bad_names() -> list[str]:
    # The names are fixed by build_corpus; the unreadable one is tested on its own.
    return [
        "a/empty.jpg",
        "a/truncated.jpg",
        "c/truncated.png",
        "a/text.jpg",
        "a/random.jpg",
        "a/document.jpg",
        "c/huge.png",
        "a/huge.jpg",
    ]


@pytest.mark.parametrize("name", _bad_names())
def test_raise_names_file_operator_and_reason(corpus, name):
    files = [str(corpus.root / n) for n in ("a/photo0.jpg", name, "c/photo1.png")]
    p = make_pipe("raise", batch_size=3, files=files)
    with pytest.raises(OperatorError) as info:
        for _ in Iterator(p, OUTPUTS, reader_name="R"):
            pass
    message = str(info.value)
    assert str(corpus.root / name) in message
    assert "fn.decoders.image" in message
    assert corpus.bad[name] in message
    assert isinstance(info.value.__cause__, DecodeError)
    p.close()


def test_raise_on_a_file_deleted_after_listing(corpus):
    files = [str(corpus.root / n) for n in ("a/photo0.jpg", "a/photo1.jpg")]
    p = make_pipe("raise", batch_size=2, files=files)
    p.build()
    os.unlink(files[1])
    with pytest.raises(OperatorError, match=r"fn.readers.file.*photo1.jpg.*No such file"):
        Iterator(p, OUTPUTS, reader_name="R")
    p.close()


def test_unreadable_file(corpus):
    if corpus.unreadable is None:
        pytest.skip("chmod 000 does not block reads for this user (root); nothing to test")
    name = corpus.unreadable
    files = [str(corpus.root / n) for n in ("a/photo0.jpg", name)]
    p = make_pipe("raise", batch_size=2, files=files)
    with pytest.raises(OperatorError, match=r"fn.readers.file.*locked.png.*Permission denied"):
        Iterator(p, OUTPUTS, reader_name="R")
    p.close()


def test_good_variants_decode_by_content(corpus):
    files = [str(corpus.root / n) for n in sorted(corpus.good)]
    p = make_pipe("raise", batch_size=len(files), files=files)
    (b,) = next(Iterator(p, OUTPUTS, reader_name="R"))
    assert b.real == len(files)
    shapes = {relpath(corpus, path): b["image"].at(k).shape for k, path in enumerate(files)}
    assert shapes["c/deep16.png"] == (12, 10, 3)  # 16-bit PNG
    assert shapes["a/png_named.jpg"] == (16, 16, 3)  # a PNG named .jpg
    for name in ("a/cmyk.jpg", "a/gray.jpg", "c/gray.png", "c/palette.png"):
        assert shapes[name] == (16, 16, 3), name
    p.close()


# ---- folders -----------------------------------------------------------------------------------


def test_empty_folder_is_a_clear_error_at_build(tmp_path):
    root = tmp_path / "nothing_here"
    (root / "class0").mkdir(parents=True)
    (root / "class0" / "readme.txt").write_text("no images")
    p = make_pipe("skip", file_root=str(root))
    with pytest.raises(ValueError, match=r"fn.readers.file.*no files found.*nothing_here"):
        p.build()


def test_missing_folder_is_a_clear_error_at_build(tmp_path):
    p = make_pipe("skip", file_root=str(tmp_path / "absent"))
    with pytest.raises(ValueError, match=r"fn.readers.file.*absent.*is not a folder"):
        p.build()


def test_class_folder_without_images_keeps_labels_by_sorted_name(corpus):
    p = make_pipe("skip", file_root=str(corpus.root))
    p.build()
    source = p._reader("R")
    labels = {relpath(corpus, f): int(lab) for f, lab in zip(source.files, source.labels)}
    assert {n.split("/")[0] for n in labels} == {"a", "c"}
    for name, label in labels.items():
        assert label == CLASS_LABELS[name.split("/")[0]], name
    p.close()


# ---- decoders directly -------------------------------------------------------------------------


def test_huge_header_is_refused_before_allocating(corpus):
    for name in ("c/huge.png", "a/huge.jpg"):
        data = (corpus.root / name).read_bytes()
        tracemalloc.start()
        start = time.perf_counter()
        with pytest.raises(DecodeError, match="max_pixels"):
            decode(data)
        elapsed = time.perf_counter() - start
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        assert peak < 1 << 20, f"{name}: {peak} bytes traced"
        assert elapsed < 0.5, f"{name}: {elapsed:.2f} s"


def test_chmod_probe_matches_the_user():
    # The skip above is only honest if the probe is: root reads anything.
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        assert can_block_reads(Path(d)) == (os.geteuid() != 0)
