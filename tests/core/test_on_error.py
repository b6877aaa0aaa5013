"""on_error: failed samples are skipped and reported; epochs stay exact."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from chute import Iterator, LastBatchPolicy, OperatorError, fn, pipeline_def


@pytest.fixture(scope="module")
def mixed_folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("mixed")
    (root / "cls").mkdir()
    good = []
    for i in range(7):
        buf = io.BytesIO()
        Image.fromarray(np.full((8, 8, 3), i * 30, np.uint8)).save(buf, "PNG")
        p = root / "cls" / f"good{i}.png"
        p.write_bytes(buf.getvalue())
        good.append(str(p))
    (root / "cls" / "empty.jpg").write_bytes(b"")
    (root / "cls" / "text.jpg").write_bytes(b"hello, not an image")
    return root, sorted(good)


def make(root, on_error, policy=LastBatchPolicy.PARTIAL, **kw):
    @pipeline_def(batch_size=4, num_threads=2, seed=0, on_error=on_error, **kw)
    def pipe():
        data, _ = fn.readers.file(file_root=str(root), random_shuffle=True, name="R")
        image = fn.decoders.image(data)
        return image, fn.get_property(data, key="source_info")

    return pipe()


@pytest.mark.parametrize("policy", [LastBatchPolicy.PARTIAL, LastBatchPolicy.FILL])
def test_skip_delivers_each_good_sample_once_and_reports_bad(mixed_folder, policy):
    root, good = mixed_folder
    p = make(root, "skip")
    it = Iterator(p, ["image", "path"], reader_name="R", last_batch_policy=policy)
    for epoch in range(2):
        seen = []
        for (b,) in it:
            paths = [str(b["path"].at(i)) for i in range(len(b["path"]))]  # may be empty
            seen += paths[: b.real]
            if policy is LastBatchPolicy.FILL:
                assert len(paths) == 4
            assert all(x.endswith(".png") for x in paths)  # bad ones replaced by good ones
        assert sorted(seen) == good
        it.reset()
    errors = p.errors()
    assert sorted(e["path"].rsplit("/", 1)[1] for e in errors) == [
        "empty.jpg",
        "empty.jpg",
        "text.jpg",
        "text.jpg",
    ]
    assert {e["epoch"] for e in errors} == {0, 1}
    assert all("decoders.image" in e["operator"] and e["reason"] for e in errors)
    p.close()


def test_raise_names_file_and_operator(mixed_folder):
    root, _ = mixed_folder
    p = make(root, "raise")
    with pytest.raises(OperatorError, match=r"fn.decoders.image.*(empty|text)\.jpg"):
        for _ in range(3):
            p.run()
    p.close()


def test_warn_logs(mixed_folder, caplog):
    root, _ = mixed_folder
    p = make(root, "warn")
    with caplog.at_level("WARNING", logger="chute"):
        for _ in range(3):
            p.run()
    assert "skipped" in caplog.text and ".jpg" in caplog.text
    p.close()


def test_max_error_ratio_aborts(mixed_folder):
    root, _ = mixed_folder
    p = make(root, "skip", max_error_ratio=0.1)
    with pytest.raises(RuntimeError, match="max_error_ratio=0.1"):
        for _ in range(3):
            p.run()
    p.close()


def test_unreadable_file_is_skipped(tmp_path):
    (tmp_path / "c").mkdir()
    for i in range(3):
        Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(tmp_path / "c" / f"{i}.png")

    @pipeline_def(batch_size=3, num_threads=1, seed=0, on_error="skip")
    def pipe():
        data, _ = fn.readers.file(file_root=str(tmp_path), name="R")
        return fn.decoders.image(data)

    p = pipe()
    p.build()  # lists the files
    (tmp_path / "c" / "1.png").unlink()  # deleted after the listing
    it = Iterator(p, ["x"], reader_name="R", last_batch_policy=LastBatchPolicy.PARTIAL)
    (batch,) = next(it)
    assert batch.real == 2 and len(batch["x"]) == 2
    assert p.errors()[0]["path"].endswith("1.png") and "cannot read" in p.errors()[0]["reason"]


def test_op_level_on_error_overrides_pipeline(mixed_folder):
    root, _ = mixed_folder

    @pipeline_def(batch_size=9, num_threads=2, seed=0)  # pipeline default: raise
    def pipe():
        data, _ = fn.readers.file(file_root=str(root), name="R")
        return fn.decoders.image(data, on_error="skip")

    p = pipe()
    (images,) = p.run()
    assert len(images) == 9 and len(p.errors()) == 2


def test_all_samples_failing_raises(tmp_path):
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "a.jpg").write_bytes(b"xx")

    @pipeline_def(batch_size=2, num_threads=1, seed=0, on_error="skip")
    def pipe():
        data, _ = fn.readers.file(file_root=str(tmp_path))
        return fn.decoders.image(data)

    with pytest.raises(RuntimeError, match="every sample of the epoch failed .1 skipped"):
        pipe().run()
