"""Elastic resume: a checkpoint taken with N shards and batch size B continues on M shards
with batch size B' at the same sample position (issue 30, item 5)."""

from __future__ import annotations

import pytest

from chute import Iterator, LastBatchPolicy, fn, pipeline_def

N = 23


@pytest.fixture
def files(tmp_path):
    paths = []
    for i in range(N):
        path = tmp_path / f"{i:03d}.bin"
        path.write_bytes(bytes([i]))
        paths.append(str(path))
    return paths


def make_iter(files, batch, shard=0, shards=1, policy=LastBatchPolicy.PARTIAL):
    @pipeline_def(batch_size=batch, num_threads=1, seed=0, device_id=None)
    def pipe():
        data, _ = fn.readers.file(
            files=files, name="R", shard_id=shard, num_shards=shards, random_shuffle=True, seed=7
        )
        return data

    return Iterator(pipe(), ["data"], reader_name="R", last_batch_policy=policy)


def real_samples(batch) -> list[int]:
    return [int(batch["data"].at(k)[0]) for k in range(batch.real)]


def epoch_of(it) -> list[list[int]]:
    return [real_samples(b) for (b,) in it]


@pytest.mark.parametrize(("old", "new"), [((2, 4), (3, 3)), ((1, 4), (1, 5)), ((3, 2), (1, 8))])
def test_resume_on_other_shards_and_batch_size_reads_the_rest_of_the_epoch_once(files, old, new):
    old_shards, old_batch = old
    olds = [make_iter(files, old_batch, s, old_shards) for s in range(old_shards)]
    seen = []
    for it in olds:  # every rank reads two batches, then the job stops
        seen += [i for _ in range(2) for i in real_samples(next(it)[0])]
    state = olds[0].state_dict()
    for it in olds:
        it.pipelines[0].close()

    new_shards, new_batch = new
    lengths, rest = set(), []
    for s in range(new_shards):
        it = make_iter(files, new_batch, s, new_shards)
        it.load_state_dict(state, elastic=True)
        counted = it.state_dict()["batch_in_epoch"]  # batches this setup counts as read
        batches = epoch_of(it)
        assert counted + len(batches) == len(it)  # the epoch ends where len() says
        lengths.add(len(batches))
        rest += [i for b in batches for i in b]
        if s == 0:  # the next epoch is a whole one of the new setup
            it.reset()
            following = [i for b in epoch_of(it) for i in b]
            assert len(following) == len(set(following))
        it.pipelines[0].close()
    assert sorted(seen + rest) == list(range(N))  # each sample of the epoch exactly once
    assert len(lengths) == 1  # every new shard has the same number of batches


def test_the_remaining_samples_keep_the_epoch_order(files):
    whole = make_iter(files, 4)
    order = [i for b in epoch_of(whole) for i in b]
    whole.pipelines[0].close()
    first = make_iter(files, 4)
    head = [i for _ in range(2) for i in real_samples(next(first)[0])]
    state = first.state_dict()
    first.pipelines[0].close()
    resumed = make_iter(files, 5)
    resumed.load_state_dict(state, elastic=True)
    batches = epoch_of(resumed)
    assert head == order[:8]
    assert batches == [order[8:13], order[13:18], order[18:23]]
    assert len(resumed) == 5  # ceil(23 / 5): two batches counted as read
    resumed.pipelines[0].close()


def test_elastic_resume_refuses_another_dataset(files):
    it = make_iter(files, 4)
    next(it)
    state = it.state_dict()
    it.pipelines[0].close()
    other = make_iter(files[:-1], 4)
    with pytest.raises(ValueError, match="elastic resume needs the same dataset: size was 23"):
        other.load_state_dict(state, elastic=True)
    other.pipelines[0].close()


def test_without_elastic_another_batch_size_is_still_refused(files):
    it = make_iter(files, 4)
    next(it)
    state = it.state_dict()
    it.pipelines[0].close()
    other = make_iter(files, 5)
    with pytest.raises(ValueError, match="field 'batch_size' is 4, this pipeline's is 5"):
        other.load_state_dict(state)
    other.pipelines[0].close()
