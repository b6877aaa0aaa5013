"""Checks every indexed reader passes: shard splits per epoch, and resume mid-epoch."""

from __future__ import annotations

from collections.abc import Callable

from chute import Iterator, LastBatchPolicy


def shard_epochs(
    make_pipe: Callable[..., object],
    num_shards: int,
    sample_id: Callable[[object], int],
    policy: LastBatchPolicy = LastBatchPolicy.PARTIAL,
    epochs: int = 2,
) -> list[list[int]]:
    """The ids of the real samples every shard read, per epoch (all shards together)."""
    its = [
        Iterator(
            make_pipe(shard_id=i, num_shards=num_shards),
            ["x"],
            reader_name="R",
            last_batch_policy=policy,
        )
        for i in range(num_shards)
    ]
    assert len({len(it) for it in its}) == 1  # every shard has as many batches
    out = []
    for _ in range(epochs):
        ids = []
        for it in its:
            for (batch,) in it:
                ids += [sample_id(batch["x"].at(k)) for k in range(batch.real)]
            it.reset()
        out.append(ids)
    for it in its:
        for p in it.pipelines:
            p.close()
    return out


def check_resume(make_pipe: Callable[..., object], cuts: tuple[int, ...] = (1, 3)) -> None:
    """Checkpoint after ``cut`` batches, restore in a new pipeline: the same batches follow."""

    def make() -> Iterator:
        return Iterator(make_pipe(), ["x"], reader_name="R", auto_reset=True)

    def flat(batches: list) -> list:
        return [[b[0]["x"].at(k).tolist() for k in range(len(b[0]["x"]))] for b in batches]

    def take(it: Iterator, n: int) -> list:
        out: list = []
        while len(out) < n:
            try:
                out.append(next(it))
            except StopIteration:  # the end of an epoch (auto_reset starts the next)
                pass
        return out

    reference = make()
    ref = take(reference, 3 * len(reference))
    for cut in cuts:
        it = make()
        taken = take(it, cut)
        state = it.state_dict()
        for p in it.pipelines:
            p.close()
        resumed = make()
        resumed.load_state_dict(state)
        rest = take(resumed, len(ref) - cut)
        assert flat(taken + rest) == flat(ref), cut
        for p in resumed.pipelines:
            p.close()
