"""Exact epochs over shards: which dataset sample goes into which batch.

For N samples, S shards, shard i and batch size B, epoch e visits the
permutation drawn from (seed, e) — or 0..N-1 without shuffling — and shard i
takes positions [floor(iN/S), floor((i+1)N/S)) of it. Every shard produces
the same number of batches per epoch, so distributed jobs never wait on a
rank that has run out:

- FILL and PARTIAL: ceil(ceil(N/S) / B) batches; past the shard's real
  samples come fillers (the shard's last sample with ``pad_last_batch``,
  else the shard's samples again from its start), each marked not real.
- DROP: floor(floor(N/S) / B) batches, all real.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from chute.types import LastBatchPolicy

if TYPE_CHECKING:
    from chute.graph.node import OpNode


class Slot(NamedTuple):
    """One batch entry: the dataset index and whether it is a real sample (not a filler).

    ``filler`` numbers the fillers of an epoch (1, 2, ...; 0 for a real sample), so that a
    sample repeated to fill a batch draws its own random numbers. (A named tuple: a
    reader makes one per sample per batch, at half a frozen dataclass's cost.)
    """

    index: int
    real: bool
    filler: int = 0


@dataclass
class EpochPlan:
    """The batches of one shard, epoch after epoch."""

    size: int
    batch_size: int
    num_shards: int = 1
    shard_id: int = 0
    shuffle: bool = False
    seed: int = 0
    pad_last_batch: bool = False
    stick_to_shard: bool = True
    policy: LastBatchPolicy = LastBatchPolicy.FILL
    first_in_order: bool = False  # shuffle_after_epoch: epoch 0 unshuffled, then permutations
    # An elastic resume: (epoch, positions in the epoch's order still to read, batches
    # already counted); that epoch's batches are drawn from those positions only.
    resumed: tuple[int, np.ndarray, int] | None = None

    def __post_init__(self) -> None:
        if self.num_shards < 1:
            raise ValueError(f"num_shards must be >= 1, got {self.num_shards}")
        if not 0 <= self.shard_id < self.num_shards:
            raise ValueError(f"shard_id must be in [0, {self.num_shards}), got {self.shard_id}")
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        self._order_cache: tuple[int, np.ndarray] | None = None

    @property
    def batches_per_epoch(self) -> int:
        return self.batches_for(self.size)

    def shard_bounds(self, epoch: int, n: int | None = None) -> tuple[int, int]:
        shard = self.shard_id if self.stick_to_shard else (self.shard_id + epoch) % self.num_shards
        n, s = self.size if n is None else n, self.num_shards
        return shard * n // s, (shard + 1) * n // s

    def batches_for(self, n: int) -> int:
        """Batches of an epoch of ``n`` samples over the shards (see the module docstring)."""
        s, b = self.num_shards, self.batch_size
        if self.policy is LastBatchPolicy.DROP:
            return (n // s) // b
        largest_shard = -(-n // s)
        return -(-largest_shard // b)

    def order(self, epoch: int) -> np.ndarray:
        """The permutation of the dataset for ``epoch`` (identical on every shard)."""
        if self._order_cache is not None and self._order_cache[0] == epoch:
            return self._order_cache[1]
        if self.shuffle and not (self.first_in_order and epoch == 0):
            rng = np.random.Generator(
                np.random.Philox(
                    key=np.array([self.seed & ((1 << 64) - 1), 0x5EED], np.uint64),
                    counter=np.array([epoch, 0, 0, 0], np.uint64),
                )
            )
            order = rng.permutation(self.size)
        else:
            order = np.arange(self.size)
        self._order_cache = (epoch, order)
        return order

    def batch(self, epoch: int, j: int) -> list[Slot]:
        """Batch ``j`` (0-based) of ``epoch`` for this shard."""
        order = self.order(epoch)
        if self.resumed is not None and self.resumed[0] == epoch:
            _, left, done = self.resumed
            lo, hi = self.shard_bounds(epoch, len(left))
            mine, j = order[left[lo:hi]], j - done
        else:
            lo, hi = self.shard_bounds(epoch)
            mine = order[lo:hi]
        start, stop = j * self.batch_size, (j + 1) * self.batch_size
        if stop <= len(mine):  # a batch of real samples (all but an epoch's last)
            return [Slot(index, True) for index in mine[start:stop].tolist()]
        slots = []
        for k in range(start, stop):
            if k < len(mine):
                slots.append(Slot(int(mine[k]), True))
            elif len(mine) == 0:
                slots.append(Slot(int(order[k % len(order)]), False, k + 1))
            elif self.pad_last_batch:
                slots.append(Slot(int(mine[-1]), False, k - len(mine) + 1))
            else:
                slots.append(Slot(int(mine[k % len(mine)]), False, k - len(mine) + 1))
        return slots

    def meta(self) -> dict[str, int | bool]:
        """DALI's reader metadata keys."""
        padded = (
            self.num_shards * -(-self.size // self.num_shards) if self.pad_last_batch else self.size
        )
        return {
            "epoch_size": self.size,
            "epoch_size_padded": padded,
            "number_of_shards": self.num_shards,
            "shard_id": self.shard_id,
            "pad_last_batch": self.pad_last_batch,
            "stick_to_shard": self.stick_to_shard,
            "batches_per_epoch": self.batches_per_epoch,
        }


class ShardedSource:
    """The running state every indexed reader shares: the epoch plan and the position in it.

    Subclasses call :meth:`init_plan` with their dataset size and implement
    ``next_batch`` around :meth:`take_batch`, which returns the slots of the
    next batch, their per-sample meta, and advances the position.
    """

    streams_across_epochs = True  # Pipeline.reset() keeps the position of the last batch
    unit = "samples"

    def init_plan(self, node: OpNode, size: int, batch_size: int, names: list[str]) -> None:
        """The epoch plan from the node's reader arguments; ``names`` seed the default shuffle.

        ``shuffle_after_epoch`` (where the reader has it) reads epoch 0 in order and
        every later epoch as a global permutation seeded by ``shuffle_after_epoch_seed``.
        """
        seed = node.args.get("seed")
        self._names_crc = zlib.crc32("\n".join(names).encode())
        if seed is None:  # the same on every shard, without the user agreeing on a seed
            seed = self._names_crc
        after_epoch = bool(node.args.get("shuffle_after_epoch"))
        if after_epoch and node.args.get("shuffle_after_epoch_seed") is not None:
            seed = node.args["shuffle_after_epoch_seed"]
        self.node = node
        self.plan = EpochPlan(
            size=size,
            batch_size=batch_size,
            num_shards=node.arg("num_shards"),
            shard_id=node.arg("shard_id"),
            shuffle=bool(node.arg("random_shuffle")) or after_epoch,
            seed=seed,
            pad_last_batch=node.arg("pad_last_batch"),
            stick_to_shard=node.arg("stick_to_shard"),
            first_in_order=after_epoch,
        )
        self.epoch = 0
        self.batch_index = 0

    def set_policy(self, policy: LastBatchPolicy) -> None:
        """Match the epoch layout to an iterator's last-batch policy."""
        self.plan.policy = policy
        if self.plan.batches_per_epoch == 0:
            raise ValueError(
                f"{self.node.label}: {self.plan.size} {self.unit} over {self.plan.num_shards} "
                f"shard(s) give no full batch of {self.plan.batch_size} under LastBatchPolicy.DROP"
            )

    def take_batch(self, source_info: Callable[[int], str]) -> tuple[list[Slot], list[dict]]:
        """The next batch's slots and meta (``source_info(index)`` names each sample)."""
        slots = self.plan.batch(self.epoch, self.batch_index)
        last = self.batch_index + 1 >= self.plan.batches_per_epoch
        epoch = self.epoch
        meta = [
            {
                "error": None,
                "source_info": source_info(slot.index),
                "index": slot.index,
                "real": slot.real,
                "epoch": epoch,
                # a filler repeats a sample of this epoch: its own stream, not the sample's
                "sample_key": (slot.index, epoch | (slot.filler << 32)),
            }
            for slot in slots
        ]
        self.batch_index += 1
        if last:
            self.epoch += 1
            self.batch_index = 0
        return slots, meta

    def meta(self) -> dict[str, Any]:
        return self.plan.meta()

    def reset(self) -> None:
        """Pipeline.reset(): readers stream across epochs, nothing to rewind."""

    def fingerprint(self) -> dict[str, int]:
        """What a saved position belongs to: the dataset (size, names), shards, batch, seed."""
        plan = self.plan
        return {
            "size": plan.size,
            "names_crc32": self._names_crc,
            "num_shards": plan.num_shards,
            "shard_id": plan.shard_id,
            "batch_size": plan.batch_size,
            "seed": plan.seed,
        }

    def state(self) -> dict[str, Any]:
        """The position after the last batch handed out, and what it belongs to."""
        return {
            "epoch": self.epoch,
            "batch_index": self.batch_index,
            "samples_in_epoch": self.batch_index * self.plan.batch_size,
            "fingerprint": self.fingerprint(),
        }

    def restore(self, state: dict[str, Any]) -> None:
        """Continue from ``state()``; a state of another setup or out of range is refused.

        A state without ``fingerprint`` (a position the pipeline made itself: the start
        of an epoch) is checked for its fields and range only.
        """
        label = self.node.label
        if not isinstance(state, dict):
            raise TypeError(f"{label}: a reader state is a dict, got {type(state).__name__}")
        for key in ("epoch", "batch_index"):
            value = state.get(key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(
                    f"{label}: state field {key!r} must be a non-negative integer, got {value!r}"
                )
        saved = state.get("fingerprint")
        if saved is not None:
            if not isinstance(saved, dict):
                raise TypeError(f"{label}: state field 'fingerprint' must be a dict")
            for key, value in self.fingerprint().items():
                if saved.get(key) != value:
                    raise ValueError(
                        f"{label}: the state was saved for another setup: {key} was "
                        f"{saved.get(key)!r}, this reader has {value!r}"
                    )
        batches = self.plan.batches_per_epoch
        if batches and state["batch_index"] >= batches:
            raise ValueError(
                f"{label}: state field 'batch_index' is {state['batch_index']}, past the "
                f"{batches} batches of an epoch"
            )
        self.epoch = state["epoch"]
        self.batch_index = state["batch_index"]
        self.plan.resumed = None

    def restore_elastic(self, state: dict[str, Any]) -> int:
        """Continue from ``state()`` saved with another batch size or number of shards:
        the samples that the saved setup's shards had not read yet are shared among this
        setup's shards; returns the batch of the epoch to continue at.

        Every shard reads the same number of batches, so one shard's position tells all:
        shard i of S had read the first ``samples_in_epoch`` of its part of the epoch.
        The dataset (size, names, seed) must be the same.
        """
        label = self.node.label
        saved = state.get("fingerprint") if isinstance(state, dict) else None
        if not isinstance(saved, dict):
            raise ValueError(f"{label}: elastic resume needs a state with its 'fingerprint'")
        mine = self.fingerprint()
        for key in ("size", "names_crc32", "seed"):
            if saved.get(key) != mine[key]:
                raise ValueError(
                    f"{label}: elastic resume needs the same dataset: {key} was "
                    f"{saved.get(key)!r}, this reader has {mine[key]!r}"
                )
        old_shards, old_batch = saved.get("num_shards"), saved.get("batch_size")
        read = state.get("samples_in_epoch")
        for key, value in (("num_shards", old_shards), ("batch_size", old_batch)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{label}: fingerprint field {key!r} must be >= 1, got {value!r}")
        if not isinstance(read, int) or isinstance(read, bool) or read < 0:
            raise ValueError(
                f"{label}: state field 'samples_in_epoch' must be a non-negative integer, "
                f"got {read!r}"
            )
        epoch, n = state.get("epoch"), self.plan.size
        if not isinstance(epoch, int) or isinstance(epoch, bool) or epoch < 0:
            raise ValueError(f"{label}: state field 'epoch' must be a non-negative integer")
        taken = np.zeros(n, bool)
        for shard in range(old_shards):
            lo, hi = shard * n // old_shards, (shard + 1) * n // old_shards
            taken[lo : min(hi, lo + read)] = True
        left = np.flatnonzero(~taken)
        self.plan.resumed = None
        if not len(left):  # the saved shards had read the whole epoch
            self.epoch, self.batch_index = epoch + 1, 0
            return 0
        done = max(self.plan.batches_per_epoch - self.plan.batches_for(len(left)), 0)
        self.epoch, self.batch_index = epoch, done
        if read:
            self.plan.resumed = (epoch, left, done)
        return done
