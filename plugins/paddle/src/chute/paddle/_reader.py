"""Paddle readers: a generator function and a paddle.io.IterableDataset over one pipeline."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from collections.abc import Iterator as PyIterator
from typing import Any

import paddle
from chute.iteration import Epochs, PipelineSource
from chute.paddle._iterator import DataIterator
from chute.types import LastBatchPolicy


class _Tuples:
    """A generator function: each call yields the next epoch as tuples in ``output_map`` order."""

    def __init__(self, epochs: Epochs, output_map: Sequence[str]):
        self.epochs = epochs
        self.output_map = list(output_map)

    def __call__(self) -> PyIterator[tuple[paddle.Tensor, ...]]:
        for batch in self.epochs:
            yield tuple(batch[name] for name in self.output_map)


def _tuples(
    owner: str, pipeline: PipelineSource, output_map: Sequence[str], **args: Any
) -> _Tuples:
    make = functools.partial(DataIterator, pipeline, output_map, prepare_first_batch=False, **args)
    return _Tuples(Epochs(make, owner), output_map)


def reader(
    pipeline: PipelineSource,
    output_map: Sequence[str],
    size: int = -1,
    reader_name: str | None = None,
    last_batch_policy: LastBatchPolicy | str = LastBatchPolicy.FILL,
    pad_ragged: bool = True,
) -> Callable[[], PyIterator[tuple[paddle.Tensor, ...]]]:
    """A generator function over one pipeline: each call yields one epoch of batches.

    Every batch is a tuple of paddle.Tensors in ``output_map`` order (ragged
    outputs zero-padded unless ``pad_ragged=False``), the form that
    ``paddle.io.DataLoader.from_generator(...).set_batch_generator(reader)``
    and plain training loops take; the next call continues with the next epoch.
    """
    return _tuples(
        "a chute paddle reader",
        pipeline,
        output_map,
        size=size,
        reader_name=reader_name,
        last_batch_policy=last_batch_policy,
        pad_ragged=pad_ragged,
    )


class IterableDataset(paddle.io.IterableDataset):
    """One pipeline as a ``paddle.io.IterableDataset`` of whole batches: each ``iter()`` one epoch.

    Items are tuples of paddle.Tensors in ``output_map`` order (ragged outputs
    zero-padded), so use it with ``paddle.io.DataLoader(dataset,
    batch_size=None)`` (keep ``num_workers=0``: the pipeline runs its own
    threads), with ``paddle.Model.fit``, or directly. ``pipeline`` may be a
    callable ``pipeline_fn(shard_id=..., num_shards=...)`` built with the
    paddle.distributed rank and world size.
    """

    def __init__(
        self,
        pipeline: PipelineSource,
        output_map: Sequence[str],
        size: int = -1,
        reader_name: str | None = None,
        last_batch_policy: LastBatchPolicy | str = LastBatchPolicy.FILL,
        pad_ragged: bool = True,
    ):
        self._generate = _tuples(
            "IterableDataset",
            pipeline,
            output_map,
            size=size,
            reader_name=reader_name,
            last_batch_policy=last_batch_policy,
            pad_ragged=pad_ragged,
        )

    def __iter__(self) -> PyIterator[tuple[paddle.Tensor, ...]]:
        return self._generate()

    def __len__(self) -> int:
        """Batches per epoch (needs ``reader_name`` or ``size``)."""
        return len(self._generate.epochs.iterator)
