"""Checks every record reader of this folder runs: shard splits per epoch, resume mid-epoch."""

from __future__ import annotations

from collections.abc import Callable

from chute import Iterator, LastBatchPolicy


def shard_epochs(
    make_pipe: Callable[[int, int], object],
    names: list[str],
    key: Callable[[dict, int], object],
    num_shards: int,
    epochs: int = 2,
) -> list[list[list[object]]]:
    """The real samples' keys of each epoch, per shard: result[epoch][shard] = [keys]."""
    its = [
        Iterator(
            make_pipe(shard, num_shards),
            names,
            reader_name="R",
            last_batch_policy=LastBatchPolicy.PARTIAL,
        )
        for shard in range(num_shards)
    ]
    assert len({len(it) for it in its}) == 1  # every shard the same number of batches
    out = []
    for _ in range(epochs):
        per_shard = []
        for it in its:
            keys = []
            for (batch,) in it:
                keys += [key(batch, i) for i in range(batch.real)]
            per_shard.append(keys)
            it.reset()
        out.append(per_shard)
    for it in its:
        for p in it.pipelines:
            p.close()
    return out


def check_resume(make_pipe: Callable[[], object], names: list[str], flat: Callable) -> None:
    """Saving the iterator's state mid-epoch (and in a later epoch) and restoring it in a
    fresh pipeline continues with exactly the batches the uninterrupted run gave."""

    def make():
        return Iterator(
            make_pipe(),
            names,
            reader_name="R",
            last_batch_policy=LastBatchPolicy.PARTIAL,
            auto_reset=True,
        )

    reference = make()
    ref = []
    for _ in range(3):
        ref += [flat(next(reference)[0]) for _ in range(len(reference))]
        try:
            next(reference)  # the epoch's end; auto_reset starts the next
        except StopIteration:
            pass
    k = len(reference)
    for cut in (1, k + 1):
        it = make()
        taken = []
        while len(taken) < cut:
            try:
                taken.append(flat(next(it)[0]))
            except StopIteration:
                pass
        state = it.state_dict()
        for p in it.pipelines:
            p.close()
        resumed = make()
        resumed.load_state_dict(state)
        while len(taken) < len(ref):
            try:
                taken.append(flat(next(resumed)[0]))
            except StopIteration:
                pass
        assert taken == ref, cut
        for p in resumed.pipelines:
            p.close()
