"""Iterating an ended epoch again with auto_reset off: StopIteration at once, and one warning."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from chute import Iterator, LastBatchPolicy, fn, pipeline_def


@pipeline_def(batch_size=4, num_threads=1, seed=0, device_id=None)
def counting_pipe():
    x = fn.external_source(
        source=lambda info: np.full((2,), info.idx_in_epoch, np.int32), batch=False
    )
    return x


def _iterator(auto_reset: bool) -> Iterator:
    return Iterator(
        counting_pipe(),
        ["x"],
        size=10,
        auto_reset=auto_reset,
        last_batch_policy=LastBatchPolicy.PARTIAL,
    )


def test_exhausted_iterator_stops_at_once_and_warns_once():
    it = _iterator(auto_reset=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the first epoch ends without any warning
        assert [b.real for (b,) in it] == [4, 4, 2]
    with pytest.warns(UserWarning, match="auto_reset is off.*reset\\(\\)"):
        assert list(it) == []
    with pytest.raises(StopIteration):
        next(it)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once per iterator, not at every call
        assert list(it) == []
        it.reset()  # the way on: the next epoch is whole, with no warning
        assert [b.real for (b,) in it] == [4, 4, 2]


def test_auto_reset_starts_the_next_epoch_without_a_warning():
    it = _iterator(auto_reset=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first = [b["x"].as_array()[:, 0].tolist() for (b,) in it]
        second = [b["x"].as_array()[:, 0].tolist() for (b,) in it]
    assert first == second == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
