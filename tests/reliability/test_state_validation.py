"""load_state_dict refuses states that are malformed, out of range or of another setup."""

from __future__ import annotations

import copy

import pytest

from chute import fn, pipeline_def


def make_files(root, n):
    (root / "a").mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (root / "a" / f"{i:03d}.jpg").write_bytes(bytes([i % 256]) * 3)
    return str(root)


def reader_pipe(root, batch_size):
    @pipeline_def(batch_size=batch_size, num_threads=1, device_id=None, seed=3)
    def pipe():
        data, labels = fn.readers.file(file_root=root, name="r")
        return data

    p = pipe()
    p.build()
    return p


@pytest.fixture
def saved(tmp_path):
    root = make_files(tmp_path / "d40", 40)
    p = reader_pipe(root, 4)
    p.run()
    p.run()
    state = p.state_dict()
    p.close()
    return root, state


def test_state_is_versioned_and_fingerprinted(saved):
    _, state = saved
    assert state["version"] == 1 and state["batch_size"] == 4
    reader = state["sources"]["r"]
    assert reader["batch_index"] == 2 and reader["samples_in_epoch"] == 8
    assert reader["fingerprint"]["size"] == 40 and reader["fingerprint"]["num_shards"] == 1


def test_a_valid_state_resumes_at_the_next_batch(saved):
    root, state = saved
    p = reader_pipe(root, 4)
    p.load_state_dict(state)
    (out,) = p.run()
    assert [bytes(out.at(i).tobytes())[0] for i in range(4)] == [8, 9, 10, 11]
    p.close()


@pytest.mark.parametrize(
    ("mutate", "error", "match"),
    [
        (lambda s: {}, ValueError, "no 'epoch' field"),
        (lambda s: None, TypeError, "got NoneType"),
        (lambda s: {**s, "epoch": -1}, ValueError, "'epoch' must be a non-negative"),
        (lambda s: {**s, "version": 7}, ValueError, "state version 7"),
        (
            lambda s: {**s, "sources": {"r": {**s["sources"]["r"], "batch_index": 10**9}}},
            ValueError,
            "past the 10 batches",
        ),
        (
            lambda s: {**s, "sources": {"r": {**s["sources"]["r"], "batch_index": -5}}},
            ValueError,
            "'batch_index' must be a non-negative",
        ),
    ],
)
def test_malformed_states_are_refused_naming_the_field(saved, mutate, error, match):
    root, state = saved
    p = reader_pipe(root, 4)
    with pytest.raises(error, match=match):
        p.load_state_dict(mutate(copy.deepcopy(state)))
    p.close()


def test_a_state_of_another_batch_size_is_refused(saved, tmp_path):
    _, state = saved
    other = reader_pipe(make_files(tmp_path / "d100", 100), 16)
    with pytest.raises(ValueError, match="'batch_size' is 4, this pipeline's is 16"):
        other.load_state_dict(state)
    other.close()


def test_a_state_of_another_dataset_is_refused(saved, tmp_path):
    _, state = saved
    other = reader_pipe(make_files(tmp_path / "d100", 100), 4)
    with pytest.raises(
        ValueError, match="saved for another setup: size was 40, this reader has 100"
    ):
        other.load_state_dict(state)
    other.close()
