"""What an operator sees while it runs: sample position, random stream, state."""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.runtime.operator import ArgView

_MASK64 = (1 << 64) - 1


def philox_key(
    seed: int, node_id: int, epoch: int, iteration: int, sample: int
) -> tuple[tuple[int, int], tuple[int, int, int, int]]:
    """The Philox (key, counter) of a stream: the one layout every drawer of it uses.

    Word 0 of the counter is the block number (the generator moves it on before each
    block of four words); the position lives in words 1-3, so no two streams share a
    block. (With the sample in word 0, sample i's fifth word was sample i+1's first.)
    """
    return (seed & _MASK64, node_id & _MASK64), (
        0,
        sample & _MASK64,
        iteration & _MASK64,
        epoch & _MASK64,
    )


def random_generator(seed: int, node_id: int, epoch: int, iteration: int, sample: int):
    """Counter-based generator: a pure function of (seed, operator, epoch, iteration, sample)."""
    key, counter = philox_key(seed, node_id, epoch, iteration, sample)
    bits = np.random.Philox(
        key=np.array(key, dtype=np.uint64), counter=np.array(counter, dtype=np.uint64)
    )
    return np.random.Generator(bits)


def sample_position(
    epoch: int, iteration: int, idx_in_batch: int, meta: dict | None
) -> tuple[int, int, int]:
    """(epoch, iteration, sample) that key a sample's stream: by its reader key when it
    has one (dataset index, epoch: the same draw wherever the sample lands), else by
    its position in the batch (in the whole batch, ``batch_index``, for the samples of
    a conditional's branch). The one rule; runtime/philox.py draws by it too."""
    key = meta.get("sample_key") if meta else None
    if key is not None:
        index, sample_epoch = key
        return (1 << 63) | sample_epoch, 0, index
    if meta:  # a sample of a conditional's branch: its place in the whole batch
        idx_in_batch = meta.get("batch_index", idx_in_batch)
    return epoch, iteration, idx_in_batch


def sample_key(
    seed: int, node_id: int, epoch: int, iteration: int, idx_in_batch: int, meta: dict | None
) -> tuple[tuple[int, int], tuple[int, int, int, int]]:
    """The Philox (key, counter) of one sample's stream (see sample_position)."""
    return philox_key(seed, node_id, *sample_position(epoch, iteration, idx_in_batch, meta))


def sample_generator(
    seed: int, node_id: int, epoch: int, iteration: int, idx_in_batch: int, meta: dict | None
) -> np.random.Generator:
    """The generator of one sample (see sample_position)."""
    return random_generator(seed, node_id, *sample_position(epoch, iteration, idx_in_batch, meta))


class SampleContext:
    """Per-sample context handed to ``Operator.run_sample``."""

    __slots__ = ("_rng", "epoch", "idx_in_batch", "iteration", "meta", "node", "seed", "state")

    def __init__(
        self,
        node: OpNode,
        seed: int,
        epoch: int,
        iteration: int,
        idx_in_batch: int,
        state: Any,
        meta: dict | None,
    ):
        self.node = node
        self.seed = seed
        self.epoch = epoch
        self.iteration = iteration
        self.idx_in_batch = idx_in_batch
        self.state = state
        self.meta = meta
        self._rng = None

    @property
    def rng(self) -> np.random.Generator:
        """This sample's random stream for this operator (independent of threads and timing).

        Samples from a reader are keyed by (dataset index, epoch), so a sample gets
        the same augmentation whatever the shard count or its position in a batch.
        """
        if self._rng is None:
            self._rng = sample_generator(
                self.seed, self.node.id, self.epoch, self.iteration, self.idx_in_batch, self.meta
            )
        return self._rng


class BatchContext:
    """Per-batch context handed to ``Operator.run_batch`` and ``Operator.run_gpu``."""

    def __init__(
        self,
        node: OpNode,
        seed: int,
        epoch: int,
        iteration: int,
        state: Any,
        meta: list,
        pool: Any,
        stream: Any = None,
        device_id: int | None = None,
        on_error: str = "raise",
    ):
        self.node = node
        self.on_error = on_error  # "skip" / "warn": a GPU op reports failed samples, see failed
        self.seed = seed
        self.epoch = epoch
        self.iteration = iteration
        self.state = state
        self.meta = meta
        self.pool = pool
        self.stream = stream
        self.device_id = device_id

    def rng(self, idx_in_batch: int) -> np.random.Generator:
        """The random stream of one sample (the same as its SampleContext.rng)."""
        meta = self.meta[idx_in_batch] if idx_in_batch < len(self.meta) else None
        return sample_generator(
            self.seed, self.node.id, self.epoch, self.iteration, idx_in_batch, meta
        )


def _numeric_column(arg: Any, values: list[Any]) -> list[Any] | None:
    """A column of one-number NumPy values (a random operator's draws) converted at once.

    What Arg.convert gives each, for the cases that cannot fail: integers and bools for an
    int or bool argument, finite floats for a float one; None for anything else (converted
    one by one, with its error).
    """
    if arg.type not in ("int", "bool", "float") or arg.choices is not None or not values:
        return None
    if not all(type(v) is np.ndarray for v in values):
        return None
    try:
        column = np.asarray(values)
    except ValueError:
        return None
    if column.size != len(values):
        return None
    column = column.reshape(-1)
    kind = column.dtype.kind
    if arg.type == "int" and kind in "iu":
        return column.tolist()  # Python ints, exact
    if arg.type == "int" and kind == "b":
        return column.astype(np.int64).tolist()
    if arg.type == "bool" and kind in "iub":
        return column.astype(bool).tolist()
    if arg.type == "float" and kind in "iubf" and np.isfinite(column).all():
        return column.astype(np.float64).tolist()
    return None


class BatchArgs:
    """The arguments of a whole batch, for batch-level and GPU operators."""

    def __init__(self, node: OpNode, columns: dict[str, list[Any]], n: int):
        self.node = node
        self.columns = columns
        self.n = n

    def sample(self, i: int) -> ArgView:
        return ArgView(self.node.schema, self.node.args, {k: v[i] for k, v in self.columns.items()})

    def is_per_sample(self, name: str) -> bool:
        return name in self.columns

    def column(self, name: str) -> list[Any]:
        """The converted value of an argument for each sample."""
        if name in self.columns:
            arg = self.node.schema.arg(name)
            values = self.columns[name]
            fast = _numeric_column(arg, values)
            if fast is not None:
                return fast
            label = self.node.schema.display_name
            return [arg.convert(label, v) for v in values]
        return [self.node.arg(name)] * self.n

    def __getitem__(self, name: str) -> Any:
        if name in self.columns:
            raise TypeError(
                f"{self.node.label}: argument '{name}' is per sample here; use column()"
            )
        return self.node.arg(name)
