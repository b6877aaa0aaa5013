"""Refill.feed: a batch with nothing skipped takes the reader's own per-sample facts, and
those are the ones the per-sample pass over its meta finds."""

import pytest

from chute.executor.executor import SourceBatch
from chute.executor.refill import Refill


def _batch(meta, errors=(), branch_failures=None, epoch=3):
    b = SourceBatch(epoch, 7, len(meta), {}, list(meta), {1: {"pos": 5}})
    b.real_read = sum(1 for m in meta if m.get("real", True))
    b.epochs_read = [m.get("epoch", epoch) for m in meta]
    b.errors = list(errors)
    b.branch_failures = branch_failures or {}
    return b


def _entry(batch, outputs):
    refill = Refill({1: {"pos": 0}})
    refill.feed(outputs, batch)
    return refill.entries[0]


def _by_meta(batch, outputs):
    """What a pass over the meta gives (the path taken when something was skipped)."""
    meta, slots = batch.meta, len(outputs[0])
    good = [i for i in range(slots) if i < len(meta) and meta[i].get("real", True)]
    return good, [meta[i].get("epoch", batch.epoch) for i in good]


@pytest.mark.parametrize(
    "meta",
    [
        [{"epoch": 3}] * 4,  # one epoch
        [{"epoch": 3}, {"epoch": 3}, {"epoch": 4}, {"epoch": 4}],  # across an epoch's end
        [{}, {}, {}],  # no epoch in the meta: the batch's
    ],
)
def test_all_real_batches_match_the_pass_over_their_meta(meta):
    outputs = [list(range(len(meta)))]
    batch = _batch(meta)
    entry = _entry(batch, outputs)
    assert (entry.good, entry.epochs) == _by_meta(batch, outputs)
    assert entry.epoch == batch.epochs_read[0] and entry.last_epoch == max(batch.epochs_read)
    assert entry.capacity == len(meta)


def test_padding_and_skips_still_read_the_meta():
    meta = [{"epoch": 3}, {"epoch": 3, "real": False}, {"epoch": 3}]
    outputs = [[0, 1, 2]]
    entry = _entry(_batch(meta), outputs)
    assert entry.good == [0, 2] and entry.capacity == 2
    # a skip's filler carries another sample's meta: its epoch, not the one read there
    skipped = _batch([{"epoch": 3}, {"epoch": 3}], errors=[{"index": 1}])
    skipped.meta[1] = {"epoch": 4}
    entry = _entry(skipped, [[0, 1]])
    assert entry.epochs == [3, 4]
    failed_in_branch = _batch([{"epoch": 3}, {"epoch": 3}], branch_failures={1: "x"})
    failed_in_branch.meta[1] = {"epoch": 4}
    assert _entry(failed_in_branch, [[0, 1]]).epochs == [3, 4]


def test_the_entry_does_not_share_the_batchs_epoch_list():
    batch = _batch([{"epoch": 3}] * 2)
    entry = _entry(batch, [[0, 1]])
    entry.epochs.append(9)
    assert batch.epochs_read == [3, 3]
