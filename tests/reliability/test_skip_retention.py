"""on_error="skip" keeps no memory per epoch: no frames behind a skip, a capped report.

Two retentions made the soak (tests/reliability/test_soak.py, 40 epochs) grow by ~9%:
each skipped sample's exception kept its traceback, whose frames held the batch being
decoded (a reference cycle only a full collection frees, and full collections are rare
in a long run), and ``pipe.errors()`` grew by one entry per bad file and epoch. Here the
cyclic collector is off while the epochs run, and tracemalloc measures what an epoch
leaves behind.
"""

from __future__ import annotations

import gc
import tracemalloc

import cv2
import numpy as np
import pytest

from chute import Iterator, LastBatchPolicy, fn, pipeline_def

GOOD, BAD, BATCH = 24, 8, 8


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    paths = []
    for i in range(GOOD):
        image = rng.integers(0, 256, (96, 128, 3), np.uint8)
        path = tmp_path / f"good{i:02d}.jpg"
        path.write_bytes(cv2.imencode(".jpg", image)[1].tobytes())
        paths.append(str(path))
    encoded = cv2.imencode(".jpg", rng.integers(0, 256, (96, 128, 3), np.uint8))[1].tobytes()
    for i in range(BAD):
        path = tmp_path / f"bad{i:02d}.jpg"
        path.write_bytes(b"not an image" if i % 2 else encoded[: len(encoded) // 3])
        paths.append(str(path))
    return paths


def _pipeline(files, **options):
    @pipeline_def(
        batch_size=BATCH, num_threads=2, seed=0, on_error="skip", device_id=None, **options
    )
    def pipe():
        data, labels = fn.readers.file(files=files, name="R", random_shuffle=True)
        return fn.decoders.image(data), labels

    return pipe()


def _epoch(it) -> int:
    real = 0
    for (b,) in it:
        real += b.real
    it.reset()
    return real


def test_an_epoch_of_skips_leaves_no_memory_behind(files):
    p = _pipeline(files, max_error_entries=BAD)  # the report is full after epoch 1
    it = Iterator(p, ["image", "label"], reader_name="R", last_batch_policy=LastBatchPolicy.FILL)
    gc.collect()
    gc.disable()
    tracemalloc.start()
    try:
        assert [_epoch(it) for _ in range(2)] == [GOOD, GOOD]  # warm-up: caches, pools
        traced = []
        for _ in range(8):
            assert _epoch(it) == GOOD
            traced.append(tracemalloc.get_traced_memory()[0])
    finally:
        tracemalloc.stop()
        gc.enable()
        p.close()
    # Before: every skip kept its batch's frames (decoded 96x128 images, the encoded
    # files): ~1.2 MB an epoch. A prefetched batch more or less in flight when an epoch
    # ends moves one reading by ~300 KB, so the growth is the slope of a line fitted
    # through the eight readings, not the difference of two.
    per_epoch = float(np.polyfit(np.arange(len(traced)), traced, 1)[0])
    assert per_epoch < 150_000, f"{per_epoch:.0f} bytes kept per epoch: {traced}"


def test_the_report_is_capped_and_counts_every_skip(files):
    p = _pipeline(files, max_error_entries=5)
    it = Iterator(p, ["image", "label"], reader_name="R", last_batch_policy=LastBatchPolicy.FILL)
    epochs = 3
    assert [_epoch(it) for _ in range(epochs)] == [GOOD] * epochs
    kept = p.errors()
    summary = p.error_summary()
    p.close()
    assert len(kept) == 5
    assert summary["skipped"] == BAD * epochs and summary["kept"] == 5
    assert summary["dropped"] == BAD * epochs - 5
    assert summary["by_operator"] == {kept[0]["operator"]: BAD * epochs}
    assert "decoders.image" in kept[0]["operator"]
    assert all(e["epoch"] == epochs - 1 for e in kept)  # the latest are kept
    assert summary["first"]["epoch"] == 0 and summary["first"]["path"].endswith(".jpg")
    assert {e["path"] for e in kept} <= set(files[GOOD:])


def test_max_error_entries_is_checked():
    with pytest.raises(ValueError, match="max_error_entries must be >= 0"):
        _pipeline(["x.jpg"], max_error_entries=-1)
    with pytest.raises(TypeError, match="max_error_entries must be an int"):
        _pipeline(["x.jpg"], max_error_entries=2.5)


def test_a_skipped_error_holds_no_traceback(files):
    """The exceptions behind the report are detached from the frames they came through."""
    from chute.runtime.errors import detached

    def fail():
        big = np.zeros(10**6, np.uint8)  # noqa: F841 - a local the frame would keep
        raise ValueError("bad")

    try:
        try:
            fail()
        except ValueError as inner:
            raise RuntimeError("outer") from inner
    except RuntimeError as exc:
        error = exc
    assert error.__traceback__ is not None and error.__cause__.__traceback__ is not None
    assert detached(error) is error
    assert error.__traceback__ is None and error.__cause__.__traceback__ is None
