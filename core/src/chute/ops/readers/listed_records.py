"""What the listed-record readers share: a plan with ``shuffle_after_epoch``, per-record errors.

A record reader (coco, mxnet, caffe, caffe2, nemo_asr) lists its dataset at build
time and reads record ``i`` on demand; :class:`RecordSource` runs the epoch plan of
:mod:`chute.ops.readers.sharding` over the records (shards, padding, shuffling, exact
epochs, state / restore) and turns a record that cannot be read into an error naming
the file and the offset, line or key — raised, or under ``on_error="skip"`` reported
while the rest still read.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import Arg
from chute.ops.readers.file import check_shard_args
from chute.ops.readers.sharding import EpochPlan, ShardedSource

log = logging.getLogger("chute")

SHUFFLE_AFTER_EPOCH = Arg(
    "shuffle_after_epoch",
    "bool",
    False,
    "Read the first epoch in order, then every epoch as a new permutation of the whole "
    "dataset (the same on every shard).",
    per_sample=False,
)


class RecordError(ValueError):
    """A record that cannot be read; the message names the file and the offset, line or key."""


@dataclass
class RecordPlan(EpochPlan):
    """The epoch plan, where ``first_in_order`` keeps epoch 0 unshuffled (shuffle_after_epoch)."""

    first_in_order: bool = False

    def order(self, epoch: int) -> np.ndarray:
        if self.first_in_order and epoch == 0:
            return np.arange(self.size)
        return super().order(epoch)


def check_record_args(op_name: str, args: dict[str, Any]) -> None:
    """Trace-time checks every record reader shares (shards, shuffle_after_epoch)."""
    check_shard_args(op_name, args)
    if args.get("shuffle_after_epoch"):
        if args.get("random_shuffle"):
            raise ValueError(
                f"{op_name}: arguments 'shuffle_after_epoch' and 'random_shuffle' exclude each other"
            )
        if args.get("stick_to_shard"):
            raise ValueError(
                f"{op_name}: arguments 'shuffle_after_epoch' and 'stick_to_shard' exclude each other"
            )


def on_error_of(node: OpNode, pipeline: Any) -> str:
    """The node's on_error, else the pipeline's."""
    return node.args.get("on_error") or getattr(pipeline, "on_error", "raise")


def bad_entry(on_error: str, message: str) -> None:
    """A bad entry found while listing the dataset: raise, or log it and go on (skip / warn)."""
    if on_error == "raise":
        raise RecordError(message)
    log.warning("skipped: %s", message)


class RecordSource(ShardedSource):
    """A running record reader: the epoch plan over ``size`` records, read by :meth:`read`.

    Subclasses call :meth:`start` once their records are listed, and implement
    ``read(index) -> list of outputs`` (raising RecordError or OSError naming the file
    and where in it), ``source_info(index)`` and ``empty()`` (the outputs of a record
    that failed under on_error="skip"; the executor replaces it with a good sample).
    """

    def start(
        self, node: OpNode, pipeline: Any, size: int, names: list[str], on_error: str
    ) -> None:
        """Set the plan over ``size`` records (``names`` seed the default shuffle)."""
        if size == 0:
            raise ValueError(f"{node.label}: the dataset has no records")
        self.on_error = on_error
        self.init_plan(node, size, pipeline.batch_size, names)
        if node.args.get("shuffle_after_epoch"):
            p = self.plan
            self.plan = RecordPlan(
                size=p.size,
                batch_size=p.batch_size,
                num_shards=p.num_shards,
                shard_id=p.shard_id,
                shuffle=True,
                seed=p.seed,
                pad_last_batch=p.pad_last_batch,
                stick_to_shard=p.stick_to_shard,
                policy=p.policy,
                first_in_order=True,
            )

    def read(self, index: int) -> list[Any]:
        raise NotImplementedError

    def source_info(self, index: int) -> str:
        raise NotImplementedError

    def empty(self) -> list[Any]:
        raise NotImplementedError

    def begin_batch(self) -> None:
        """Called before the records of a batch are read (e.g. to open a transaction)."""

    def end_batch(self) -> None:
        """Called after the records of a batch were read."""

    def next_batch(self, batch_size: int, epoch: int, iteration: int):
        slots, meta = self.take_batch(self.source_info)
        columns: list[list[Any]] | None = None
        self.begin_batch()
        try:
            for slot, m in zip(slots, meta):
                try:
                    values = self.read(slot.index)
                except (RecordError, OSError, ValueError) as exc:
                    if self.on_error == "raise":
                        raise
                    m["error"] = (self.node.label, exc)
                    values = self.empty()
                if columns is None:
                    columns = [[] for _ in values]
                for column, value in zip(columns, values):
                    column.append(value)
        finally:
            self.end_batch()
        return columns or [], meta
