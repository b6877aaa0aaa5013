"""Framework-agnostic iteration: epochs, shards, last batches and resumable state.

Every plugin's iterator is a :class:`FrameworkIterator` that sets only how a
TensorList becomes a framework tensor (``to_tensor``) and where the shard of
this process comes from (``shard_info``), so the four frameworks see the same
batches, the same ``len()`` and the same real-sample counts. This module reads
only the public surface of :class:`~chute.pipeline.Pipeline` and imports no
framework.
"""

from __future__ import annotations

import abc
import json
import math
import warnings
from collections.abc import Callable, Sequence
from collections.abc import Iterator as PyIterator
from typing import Any

import numpy as np

from chute.distributed import PipelineSource, pipelines_for_shard
from chute.graph.spec import Spec
from chute.pipeline import Pipeline
from chute.types import LastBatchPolicy

__all__ = [
    "Batch",
    "Epochs",
    "FrameworkIterator",
    "Iterator",
    "LastBatchPolicy",
    "PipelineSource",
    "as_auto_reset",
    "as_policy",
    "empty_batch",
    "output_specs",
    "pipelines_for_shard",
]


def output_specs(pipeline: Pipeline, output_map: Sequence[str]) -> dict[str, Spec]:
    """Build-time Spec (dtype, ndim, layout; None = unknown) of each named pipeline output."""
    return dict(zip(output_map, pipeline.output_specs()))


def empty_batch(batch: Any, spec: Spec | None) -> np.ndarray:
    """An empty batch (a PARTIAL batch on a short shard) with the output's build-time dtype and ndim."""
    dtype = spec.dtype if spec is not None and spec.dtype is not None else batch.dtype
    ndim = spec.ndim if spec is not None and spec.ndim is not None else batch.ndim
    return np.empty((0,) * (ndim + 1), dtype=dtype)


class Batch(dict):
    """One pipeline's outputs by name for one step; ``real`` counts its real samples.

    Samples past ``real`` are padding (FILL); with PARTIAL the batch holds only
    real samples and may be shorter than the batch size — or empty, on a shard
    with fewer samples than the others.
    """

    real: int = 0


def as_policy(value: LastBatchPolicy | str) -> LastBatchPolicy:
    """A LastBatchPolicy from itself or its name ("fill", "DROP", ...); ValueError otherwise."""
    if isinstance(value, LastBatchPolicy):
        return value
    try:
        return LastBatchPolicy(str(value).lower())
    except ValueError:
        raise ValueError(
            f"last_batch_policy must be LastBatchPolicy.FILL, DROP or PARTIAL, got {value!r}"
        ) from None


def as_auto_reset(value: bool | str | None) -> bool:
    """DALI's ``auto_reset``: True or "yes" resets at the end of an epoch; False, None or "no" not."""
    if value is None or value is False or value == "no":
        return False
    if value is True or value == "yes":
        return True
    raise ValueError(f"auto_reset must be True, False, None, 'yes' or 'no', got {value!r}")


FILL_LAST_BATCH_DEPRECATED = (
    "Please do not use `fill_last_batch` and use `last_batch_policy` instead."  # DALI's words
)
SIZE_WITHOUT_READER = (
    "Please set `reader_name` and don't set last_batch_padded and size manually whenever "
    "possible: with size, some samples may be missed or repeated across shards"
)


class Iterator:
    """Runs one or more pipelines (one per device) and yields a list of :class:`Batch` dicts.

    ``pipelines`` is a Pipeline, a list of them, or a callable
    ``pipeline_fn(shard_id=..., num_shards=...)`` called with :meth:`shard_info`
    (and ``device_id=`` :meth:`device_info`, where that is not None and it takes one).
    The epoch length comes from the reader named ``reader_name`` (exact,
    identical on every shard), from ``size`` (samples per epoch of this
    shard), or — with neither — from the pipeline raising StopIteration.
    ``output_map`` names the pipeline outputs in order.

    As in DALI: ``size`` is the property DALI computes (samples per shard and
    epoch, rounded as DALI rounds them; -1 when unknown), ``checkpoints()``
    gives one serialized state per pipeline. Subclasses that carry DALI's
    names set ``dali_conventions``: ``iter()`` on an ended epoch starts the
    next one, ``size`` without ``reader_name`` warns as DALI does, and an
    iterator of unknown length hands on short batches as they come.
    """

    dali_conventions = False

    def __init__(
        self,
        pipelines: PipelineSource,
        output_map: Sequence[str],
        size: int = -1,
        reader_name: str | None = None,
        auto_reset: bool | str = False,
        fill_last_batch: bool | None = None,
        dynamic_shape: bool = False,
        last_batch_padded: bool = False,
        last_batch_policy: LastBatchPolicy | str = LastBatchPolicy.FILL,
        prepare_first_batch: bool = True,
    ):
        pipelines = pipelines_for_shard(pipelines, self.shard_info, self.device_info)
        self.pipelines = [pipelines] if isinstance(pipelines, Pipeline) else list(pipelines)
        if not self.pipelines:
            raise ValueError("Iterator: give at least one pipeline")
        self.output_map = list(output_map)
        if len(set(self.output_map)) != len(self.output_map):
            raise ValueError(f"Iterator: output_map has repeated names: {self.output_map}")
        if fill_last_batch is not None:  # DALI's older spelling
            warnings.warn(FILL_LAST_BATCH_DEPRECATED, Warning, stacklevel=2)
            last_batch_policy = LastBatchPolicy.FILL if fill_last_batch else LastBatchPolicy.PARTIAL
        self.policy = as_policy(last_batch_policy)
        self.auto_reset = as_auto_reset(auto_reset)
        self.last_batch_padded = last_batch_padded
        self.dynamic_shape = dynamic_shape  # DALI keeps it for compatibility only
        self.reader_name = reader_name
        self._samples = int(size)  # samples per epoch of this shard, as given
        if self._samples == 0:
            raise ValueError("Iterator: size cannot be 0 (give -1, or leave it out, for unknown)")
        if reader_name is not None and size > 0:
            raise ValueError("Iterator: give reader_name or size, not both")
        if reader_name is not None and last_batch_padded:
            raise ValueError(
                "Iterator: with reader_name, last_batch_padded comes from the reader "
                "(its pad_last_batch); do not set it"
            )
        if self.dali_conventions and reader_name is None:
            if size > 0:
                warnings.warn(SIZE_WITHOUT_READER, Warning, stacklevel=2)
            elif len(self.pipelines) > 1:
                raise ValueError(
                    "Iterator: several pipelines need reader_name or size (epochs of unknown "
                    "length work with one pipeline only)"
                )
        for pipe in self.pipelines:
            outputs = len(pipe.output_specs())
            if outputs != len(self.output_map):
                raise ValueError(
                    f"Iterator: output_map names {len(self.output_map)} outputs "
                    f"but the pipeline has {outputs}"
                )
        self.batch_size = self.pipelines[0].batch_size
        # what is known of each output before it runs; the first batch fills in the rest
        self.specs = output_specs(self.pipelines[0], self.output_map)
        self._batches = self._epoch_length()
        self._size = self._dali_size()
        self.epoch = 0
        self._batch_in_epoch = 0
        self._ended = False
        self._first: list[Batch] | None = None
        self._initial_checkpoints: list[str] | None = None
        if prepare_first_batch and self._batches != 0:
            self._initial_checkpoints = self.checkpoints()
            try:
                self._first = self._step()
            except StopIteration:
                self._ended = True

    # ---- epoch length --------------------------------------------------------------------
    def _epoch_length(self) -> int | None:
        if self.reader_name is not None:
            lengths = set()
            for pipe in self.pipelines:
                pipe.set_last_batch_policy(self.reader_name, self.policy)
                lengths.add(pipe.reader_meta(self.reader_name)["batches_per_epoch"])
            if len(lengths) > 1:
                raise ValueError(
                    f"Iterator: the pipelines' readers give different epoch lengths {lengths}"
                )
            return lengths.pop()
        if self._samples > 0:
            per_step = self.batch_size * len(self.pipelines)
            if self.policy is LastBatchPolicy.DROP:
                return self._samples // per_step
            return math.ceil(self._samples / per_step)
        return None

    def _dali_size(self) -> int:
        # DALI's iterator `size`: with a reader, the samples one shard reads per epoch, rounded
        # up to whole batches unless the reader pads (pad_last_batch) or the policy drops
        if self.reader_name is None:
            return self._samples
        meta = self.pipelines[0].reader_meta(self.reader_name)
        self.last_batch_padded = bool(meta.get("pad_last_batch", False))
        samples, shards = meta["epoch_size"], meta["number_of_shards"]
        if self.policy is LastBatchPolicy.DROP:
            return samples // shards
        if self.last_batch_padded:
            return meta["epoch_size_padded"] // shards
        return math.ceil(math.ceil(samples / shards) / self.batch_size) * self.batch_size

    @property
    def size(self) -> int:
        """DALI's ``size``: samples of one shard per epoch (reader's, rounded as DALI does), or -1."""
        return self._size

    def __len__(self) -> int:
        """Batches per epoch: the same in every epoch and on every shard."""
        if self._batches is None:
            raise TypeError("the epoch length is unknown: give reader_name or size to the iterator")
        return self._batches

    # ---- iteration -------------------------------------------------------------------------
    _warned_ended = False  # warned once that an ended epoch is iterated again without reset

    def __iter__(self) -> Iterator:
        # DALI: iter() on an iterator whose epoch ended starts the next epoch
        if self.dali_conventions and self._finished():
            self.reset()
        return self

    def _finished(self) -> bool:
        return self._ended or (self._batches is not None and self._batch_in_epoch >= self._batches)

    def __next__(self) -> list[Batch]:
        if self._first is not None:
            batch, self._first = self._first, None
            return batch
        if self._ended:
            # DALI's iterators stop quietly; chute's own warn once that reset() is due
            if not self.auto_reset and not self._warned_ended and not self.dali_conventions:
                self._warned_ended = True
                warnings.warn(
                    "Iterator: the epoch has ended and auto_reset is off, so this is an empty "
                    "epoch; call reset() before iterating again, or pass auto_reset=True",
                    stacklevel=2,
                )
            self._end_epoch()
        return self._step_or_end()

    def _step_or_end(self) -> list[Batch]:
        try:
            return self._step()
        except StopIteration:
            self._ended = True
            self._end_epoch()
            raise

    def _end_epoch(self) -> None:
        if self.auto_reset:
            self.reset()
        raise StopIteration

    def _step(self) -> list[Batch]:
        if self._batches is not None and self._batch_in_epoch >= self._batches:
            raise StopIteration
        results = []
        for p, pipe in enumerate(self.pipelines):
            outputs = pipe.run()
            real = self._real_count(pipe.last_batch_meta(), len(outputs[0]), p)
            if p == 0:
                self._learn_specs(outputs)
            if self.policy is LastBatchPolicy.PARTIAL and real < len(outputs[0]):
                outputs = tuple(o.head(real) for o in outputs)
            elif (
                self.policy is LastBatchPolicy.FILL
                and len(outputs[0]) < self.batch_size
                and not (self.dali_conventions and self._batches is None)
            ):
                outputs = tuple(o.repeat_last(self.batch_size) for o in outputs)
            batch = Batch(
                {name: self.convert(o, name) for name, o in zip(self.output_map, outputs)}
            )
            batch.real = real
            results.append(batch)
        self._batch_in_epoch += 1
        return results

    def _learn_specs(self, outputs: Sequence[Any]) -> None:
        # dtype and ndim that the build could not tell come from the first batch
        for name, out in zip(self.output_map, outputs):
            spec = self.specs[name]
            if spec.dtype is None or spec.ndim is None:
                self.specs[name] = spec.with_(
                    dtype=out.dtype if spec.dtype is None else spec.dtype,
                    ndim=out.ndim if spec.ndim is None else spec.ndim,
                )

    def _real_count(self, meta: list[dict], n: int, pipe_index: int) -> int:
        if meta and "real" in meta[0]:
            return sum(1 for m in meta if m.get("real", True))
        if self._samples > 0:
            per_step = self.batch_size * len(self.pipelines)
            left = self._samples - self._batch_in_epoch * per_step - pipe_index * self.batch_size
            return max(0, min(n, left))
        return n

    def shard_info(self) -> tuple[int, int]:
        """``(shard_id, num_shards)`` for a callable ``pipelines``; plugins ask their framework."""
        return 0, 1

    def device_info(self) -> int | None:
        """The GPU a callable ``pipelines`` is built on (its ``device_id``); None: as it says."""
        return None

    def convert(self, batch: Any, name: str) -> Any:
        """A pipeline output as handed to the user; plugins return framework tensors."""
        return batch

    def reset(self) -> None:
        """Start the next epoch (after StopIteration, or cutting the current one short)."""
        finished = self._finished()
        for pipe in self.pipelines:
            if self.reader_name is not None:
                if not finished:
                    pipe.seek_reader(self.reader_name, self.epoch + 1)
            elif self._batches is None or self._ended:
                pipe.reset()
        self.epoch += 1
        self._batch_in_epoch = 0
        self._ended = False
        self._first = None

    # ---- state ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """Where the iterator stands: restoring it continues with the exact next batch."""
        if self._first is not None:
            raise RuntimeError("state_dict() before the first batch was taken: nothing to save yet")
        return {
            "epoch": self.epoch,
            "batch_in_epoch": self._batch_in_epoch,
            "ended": self._ended,
            "pipelines": [pipe.state_dict() for pipe in self.pipelines],
        }

    def load_state_dict(self, state: dict[str, Any], elastic: bool = False) -> None:
        """Continue from ``state_dict()`` output (the pipelines must be built the same way).

        ``elastic=True``: the state was saved with another batch size or number of shards
        (see Pipeline.load_state_dict); the epoch goes on with what no shard had read."""
        if len(state["pipelines"]) != len(self.pipelines):
            raise ValueError("load_state_dict: the state has a different number of pipelines")
        for pipe, pipe_state in zip(self.pipelines, state["pipelines"]):
            if elastic:
                pipe.load_state_dict(pipe_state, elastic=True)
            else:
                pipe.load_state_dict(pipe_state)
        self.epoch = state["epoch"]
        self._batch_in_epoch = state["batch_in_epoch"]
        if elastic:  # the batches of the epoch this setup counts as read
            self._batch_in_epoch = self.pipelines[0].state_dict()["iteration"]
        self._ended = state["ended"]
        self._first = None

    def checkpoints(self) -> list[str]:
        """DALI's ``checkpoints()``: one serialized checkpoint (a JSON string) per pipeline.

        Each holds the pipeline's state and this iterator's position; before the
        first batch is taken it is the state at construction. Give the list to
        :meth:`load_checkpoints` of an iterator over pipelines built the same way.
        """
        if self._first is not None and self._initial_checkpoints is not None:
            return list(self._initial_checkpoints)
        position = {
            "epoch": self.epoch,
            "batch_in_epoch": self._batch_in_epoch,
            "ended": self._ended,
        }
        return [
            json.dumps({"iterator": position, "pipeline": pipe.state_dict()})
            for pipe in self.pipelines
        ]

    def load_checkpoints(self, checkpoints: Sequence[str]) -> None:
        """Continue from :meth:`checkpoints` output: the next batch is the one that came next."""
        states = [json.loads(c) for c in checkpoints]
        self.load_state_dict(
            {**states[0]["iterator"], "pipelines": [s["pipeline"] for s in states]}
        )


class FrameworkIterator(Iterator, abc.ABC):
    """The iterator every plugin subclasses: DALI's iterator arguments, framework tensors out.

    A plugin sets ``to_tensor(batch, pad_ragged, spec)`` — one TensorList as its
    tensor type (``spec``, the output's :class:`Spec`, shapes an empty PARTIAL
    batch) — and ``shard_info()``, the ``(shard_id, num_shards)`` of this process
    in its distributed runtime. Dense outputs are meant to come zero-copy through
    DLPack; ragged outputs as a list of per-sample tensors, or zero-padded with
    ``pad_ragged=True``. Each step is a list with one :class:`Batch` per pipeline.
    """

    def __init__(
        self,
        pipelines: PipelineSource,
        output_map: Sequence[str],
        size: int = -1,
        reader_name: str | None = None,
        auto_reset: bool | str = False,
        fill_last_batch: bool | None = None,
        dynamic_shape: bool = False,
        last_batch_padded: bool = False,
        last_batch_policy: LastBatchPolicy | str = LastBatchPolicy.FILL,
        prepare_first_batch: bool = True,
        pad_ragged: bool = False,
    ):
        self.pad_ragged = pad_ragged  # before the base class converts the first batch
        super().__init__(
            pipelines,
            output_map,
            size=size,
            reader_name=reader_name,
            auto_reset=auto_reset,
            fill_last_batch=fill_last_batch,
            dynamic_shape=dynamic_shape,
            last_batch_padded=last_batch_padded,
            last_batch_policy=last_batch_policy,
            prepare_first_batch=prepare_first_batch,
        )

    @staticmethod
    @abc.abstractmethod
    def to_tensor(batch: Any, pad_ragged: bool = False, spec: Spec | None = None) -> Any:
        """One TensorList as the framework's tensor (or a list of them when ragged)."""

    def convert(self, batch: Any, name: str) -> Any:
        """A pipeline output as the framework's tensor (or a list of them when ragged)."""
        return self.to_tensor(batch, self.pad_ragged, self.specs.get(name))


class Epochs:
    """One pipeline's iterator seen epoch by epoch: each ``iter()`` runs the next epoch.

    What the plugins' datasets and readers (torch ``IterableDataset``,
    ``tf.data``, paddle readers) iterate: the iterator is made by ``make`` on
    first use; an epoch abandoned half-way is skipped to its end by the next
    ``iter()``, and after ``load_state_dict`` the next ``iter()`` resumes mid-epoch.
    """

    def __init__(self, make: Callable[[], Iterator], owner: str):
        self._make = make
        self._owner = owner
        self._iterator: Iterator | None = None
        self.started = False

    @property
    def iterator(self) -> Iterator:
        """The underlying iterator, made on first use."""
        if self._iterator is None:
            iterator = self._make()
            if len(iterator.pipelines) != 1:
                raise ValueError(f"{self._owner} takes one pipeline")
            self._iterator = iterator
        return self._iterator

    def __iter__(self) -> PyIterator[Batch]:
        iterator = self.iterator
        if self.started:
            iterator.reset()
        self.started = True
        for (batch,) in iterator:
            yield batch

    def state_dict(self) -> dict[str, Any]:
        """The iterator's state: restoring it continues with the exact next batch."""
        return {"iterator": self.iterator.state_dict(), "started": self.started}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state_dict` output; the next ``iter()`` resumes mid-epoch."""
        self.iterator.load_state_dict(state["iterator"])
        self.started = False
