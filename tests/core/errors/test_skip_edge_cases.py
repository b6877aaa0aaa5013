"""on_error="skip" edge cases found while testing issue 7, each with the fix it needed."""

from __future__ import annotations

import os
import time

import numpy as np
import pytest
from _bad_corpus import encode, rgb

from chute import Iterator, LastBatchPolicy, fn, pipeline_def


@pytest.fixture
def files(tmp_path):
    """good0..3, bad0..3, good4..5: the second batch of 4 is entirely bad."""
    names = [f"good{i}.jpg" for i in range(4)]
    names += [f"bad{i}.jpg" for i in range(4)]
    names += [f"good{i}.jpg" for i in range(4, 6)]
    for name in names:
        data = encode(rgb(len(name)), "JPEG") if name.startswith("good") else b"broken"
        (tmp_path / name).write_bytes(data)
    return [str(tmp_path / n) for n in names]


def bad_of(files):
    return sorted(f for f in files if os.path.basename(f).startswith("bad"))


def make_pipe(files, on_error="skip", **kw):
    @pipeline_def(batch_size=4, num_threads=2, seed=0, on_error=on_error, **kw)
    def pipe():
        data, _ = fn.readers.file(files=files, name="R")
        return fn.decoders.image(data), fn.get_property(data, key="source_info")

    return pipe()


@pytest.mark.parametrize("policy", [LastBatchPolicy.PARTIAL, LastBatchPolicy.FILL])
def test_a_batch_with_only_bad_samples_is_filled_with_later_samples(files, policy):
    # issue 30 item 2: the bad batch's places go to good4..5; the epoch keeps its three
    # batches (len() holds) and the places given up show in its last batch.
    p = make_pipe(files)
    it = Iterator(p, ["image", "path"], reader_name="R", last_batch_policy=policy)
    reals, seen = [], []
    for (b,) in it:
        reals.append(b.real)
        assert len(b["image"]) == (4 if policy is LastBatchPolicy.FILL else b.real)
        seen += [str(b["path"].at(k)) for k in range(b.real)]
    assert reals == [4, 2, 0]
    assert seen == [f for f in files if os.path.basename(f).startswith("good")]
    assert sorted(e["path"] for e in p.errors()) == bad_of(files)
    p.close()


def test_first_batch_with_only_bad_samples_is_filled_with_later_samples(files):
    # Nothing good has been seen yet to pad the batch with: before issue 30 this raised.
    p = make_pipe(files[4:])
    it = Iterator(p, ["image", "path"], reader_name="R", last_batch_policy=LastBatchPolicy.PARTIAL)
    batches = [([str(b["path"].at(k)) for k in range(b.real)]) for (b,) in it]
    assert batches == [files[8:], []]
    assert sorted(e["path"] for e in p.errors()) == bad_of(files)
    p.close()


@pytest.mark.parametrize("iterator", [False, True])
def test_an_epoch_of_only_bad_samples_is_a_clear_error(files, iterator):
    p = make_pipe(files[4:8])
    with pytest.raises(RuntimeError, match="every sample of the epoch failed .4 skipped"):
        if iterator:
            next(iter(Iterator(p, ["image", "path"], reader_name="R")))
        else:
            p.run()
    assert sorted(e["path"] for e in p.errors()) == bad_of(files)
    p.close()


def test_errors_count_only_delivered_batches(files):
    p = make_pipe(files, prefetch_queue_depth=3)
    (images, _) = p.run()
    deadline = time.monotonic() + 5
    while p._executor._out_q.qsize() < 2 and time.monotonic() < deadline:
        time.sleep(0.01)  # let the pipeline compute the all-bad batch ahead
    assert p._executor.errors_computed >= 4
    assert p.errors() == []  # the user has not received that batch yet
    p.run()
    assert len(p.errors()) == 4
    p.close()


def test_errors_are_not_reported_twice_after_a_restore(files):
    p = make_pipe(files)
    it = Iterator(p, ["image", "path"], reader_name="R")
    next(it)
    state = it.state_dict()
    time.sleep(0.2)  # prefetch computes the bad batch, which the restore drops
    it.load_state_dict(state)
    for _ in it:
        pass
    assert sorted(e["path"] for e in p.errors()) == bad_of(files)
    p.close()


def test_warn_logs_each_skip_once_when_delivered(files, caplog):
    p = make_pipe(files, on_error="warn")
    with caplog.at_level("WARNING", logger="chute"):
        p.run()
        time.sleep(0.2)
        assert not [r for r in caplog.records if r.name == "chute"]
        p.run()
    messages = [r.getMessage() for r in caplog.records if r.name == "chute"]
    assert len(messages) == 4
    assert all("fn.decoders.image" in m and "bad" in m for m in messages)
    p.close()


def test_source_info_of_paths_with_different_lengths(tmp_path):
    names = ["a.png", "longer_name.png", "much_much_longer_name.png"]
    for i, name in enumerate(names):
        (tmp_path / name).write_bytes(encode(rgb(i), "PNG"))
    p = make_pipe([str(tmp_path / n) for n in names])
    (_, paths) = p.run()
    assert paths.as_array().tolist()[:3] == [str(tmp_path / n) for n in names]
    assert np.asarray(paths).dtype.kind == "U"
    p.close()
