"""on_error="skip" fills a batch's failed places with later samples of the reader (issue 30, 2).

Each epoch keeps its number of batches (``len()``), each good sample comes once per epoch,
in reader order and with its own data, every skip is reported, and a checkpoint taken
while places are being filled resumes without losing or repeating a sample.
"""

from __future__ import annotations

import math
import os

import cv2
import numpy as np
import pytest

from chute import Iterator, LastBatchPolicy, fn, pipeline_def

N = 23
BAD = {1, 4, 5, 6, 7, 8, 9, 10, 13, 20, 21}  # a whole batch, runs across batches, the end
BATCH = 4


def make_files(root, n=N, bad=BAD):
    paths = []
    for i in range(n):
        path = root / f"{i:03d}.png"
        if i in bad:
            path.write_bytes(b"not an image at all")
        else:
            ok, data = cv2.imencode(".png", np.full((4, 5, 3), i, np.uint8))
            path.write_bytes(data.tobytes())
        paths.append(str(path))
    return paths


def make_pipe(files, pipelined=True, shard=0, shards=1, depth=2):
    @pipeline_def(
        batch_size=BATCH,
        num_threads=2,
        seed=0,
        device_id=None,
        on_error="skip",
        exec_pipelined=pipelined,
        prefetch_queue_depth=depth,
    )
    def pipe():
        data, _ = fn.readers.file(files=files, name="R", shard_id=shard, num_shards=shards)
        return fn.decoders.image(data), fn.get_property(data, key="source_info")

    return pipe()


def index_of(path: str) -> int:
    return int(os.path.basename(path)[:3])


def collect(batch) -> list[int]:
    """Indices of the batch's real samples; each image's pixels must be its file's index."""
    out = []
    for k in range(batch.real):
        i = index_of(str(batch["path"].at(k)))
        assert int(batch["image"].at(k)[0, 0, 0]) == i  # data and meta moved together
        out.append(i)
    return out


@pytest.mark.parametrize("policy", [LastBatchPolicy.PARTIAL, LastBatchPolicy.FILL])
@pytest.mark.parametrize("pipelined", [True, False])
def test_failed_places_are_filled_and_epochs_stay_exact(tmp_path, policy, pipelined):
    files = make_files(tmp_path)
    good = [i for i in range(N) if i not in BAD]
    p = make_pipe(files, pipelined)
    it = Iterator(p, ["image", "path"], reader_name="R", last_batch_policy=policy)
    assert len(it) == math.ceil(N / BATCH)
    for epoch in range(2):
        reals, seen = [], []
        for (b,) in it:
            reals.append(b.real)
            assert len(b["image"]) == (BATCH if policy is LastBatchPolicy.FILL else b.real)
            seen += collect(b)
        assert seen == good  # each good sample once, in reader order
        full, rest = divmod(len(good), BATCH)
        assert reals == [BATCH] * full + [rest] + [0] * (len(it) - full - 1)
        reported = [e for e in p.errors() if e["epoch"] == epoch]
        assert sorted(index_of(e["path"]) for e in reported) == sorted(BAD)
        it.reset()
    p.close()


def test_shards_keep_the_same_number_of_batches(tmp_path):
    # Distributed training needs every rank to take the same number of steps.
    files = make_files(tmp_path)
    seen, lengths = [], []
    for shard in range(2):
        p = make_pipe(files, shard=shard, shards=2)
        it = Iterator(p, ["image", "path"], reader_name="R", last_batch_policy="partial")
        batches = [b for (b,) in it]
        lengths.append((len(it), len(batches)))
        seen += [i for b in batches for i in collect(b)]
        p.close()
    assert lengths[0] == lengths[1] == (3, 3)
    assert sorted(seen) == [i for i in range(N) if i not in BAD]


@pytest.mark.parametrize("after", [1, 2, 3, 4])
def test_a_checkpoint_while_filling_resumes_exactly(tmp_path, after):
    files = make_files(tmp_path)
    good = [i for i in range(N) if i not in BAD]
    p = make_pipe(files)
    it = Iterator(p, ["image", "path"], reader_name="R", last_batch_policy="partial")
    first = [collect(next(it)[0]) for _ in range(after)]
    state = it.state_dict()
    if after in (1, 2):  # places were filled from batches not yet delivered
        assert "carry" in state["pipelines"][0]
    p.close()
    q = make_pipe(files)
    it2 = Iterator(q, ["image", "path"], reader_name="R", last_batch_policy="partial")
    it2.load_state_dict(state)
    rest = [collect(b) for (b,) in it2]
    assert len(first) + len(rest) == len(it2)
    assert [i for b in first + rest for i in b] == good
    reported = {index_of(e["path"]) for e in p.errors() + q.errors()}
    assert reported == BAD
    q.close()


def test_a_corrupt_carry_is_refused_naming_the_field(tmp_path):
    files = make_files(tmp_path)
    p = make_pipe(files)
    it = Iterator(p, ["image", "path"], reader_name="R", last_batch_policy="partial")
    next(it)
    state = it.state_dict()
    state["pipelines"][0]["carry"] = {"drop": -1, "pending": []}
    with pytest.raises(ValueError, match="'carry' 'drop' must be a non-negative integer"):
        it.load_state_dict(state)
    p.close()


def test_pipe_run_without_an_iterator_fills_too(tmp_path):
    files = make_files(tmp_path, 8, {0, 1, 2, 3})
    p = make_pipe(files)
    p.build()
    images, paths = p.run()
    meta = p.last_batch_meta()
    assert [index_of(str(paths.at(k))) for k in range(4)] == [4, 5, 6, 7]
    assert [m["real"] for m in meta] == [True] * 4
    assert [int(images.at(k)[0, 0, 0]) for k in range(4)] == [4, 5, 6, 7]
    p.close()


def test_a_fed_source_is_not_drawn_from(tmp_path):
    # feed_input: the user hands one batch per run(); nothing more to draw, so the
    # failed place keeps another sample of its batch, marked not real (no hang, no error).
    def fragile(x):
        if int(x[0]) == 2:
            raise ValueError("two")
        return x

    @pipeline_def(batch_size=4, num_threads=1, device_id=None, seed=0, on_error="skip")
    def pipe():
        x = fn.external_source(name="x")
        return fn.python_function(x, function=fragile)

    p = pipe()
    p.build()
    p.feed_input("x", [np.array([i], np.int32) for i in range(4)])
    (out,) = p.run()
    assert [int(out.at(k)[0]) for k in range(4)] == [0, 1, 3, 3]
    assert [m.get("real", True) for m in p.last_batch_meta()] == [True, True, True, False]
    assert [e["reason"] for e in p.errors()] == ["ValueError: two"]
    p.close()


def test_lanes_deliver_what_one_lane_delivers(tmp_path):
    """Under skip a pipeline computes two batches at once (lanes) and still delivers, batch
    by batch, the same samples, pixels and padding as one lane, every epoch."""
    from chute.runtime import tuning

    files = make_files(tmp_path)

    def epochs(cpu_lanes: int) -> list:
        with tuning.use(tuning.Tuning(cpu_lanes=cpu_lanes)):
            p = make_pipe(files)
            it = Iterator(
                p, ["image", "path"], reader_name="R", last_batch_policy=LastBatchPolicy.FILL
            )
            assert p._executor.lanes == cpu_lanes
            out = []
            for _ in range(3):
                for (b,) in it:
                    images = [
                        np.asarray(b["image"].at(k)).tobytes() for k in range(len(b["image"]))
                    ]
                    paths = [str(b["path"].at(k)) for k in range(len(b["image"]))]
                    out.append((b.real, paths, images))
                it.reset()
            p.close()
        return out

    assert epochs(2) == epochs(1)
