"""Paddle readers: a generator function and a paddle.io.IterableDataset over one pipeline."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from collections.abc import Iterator as PyIterator
from typing import Any

import paddle
from chute.iteration import PipelineSource
from chute.paddle._iterator import DataIterator
from chute.types import LastBatchPolicy


class _Epochs:
    """Runs one epoch of the iterator per call; a later call continues with the next epoch."""

    def __init__(self, args: dict[str, Any], as_tuple: bool):
        self.args = args
        self.as_tuple = as_tuple
        self._iterator: DataIterator | None = None
        self.started = False

    @property
    def iterator(self) -> DataIterator:
        if self._iterator is None:
            self._iterator = DataIterator(**self.args)
            if len(self._iterator.pipelines) != 1:
                raise ValueError("a chute paddle reader takes one pipeline")
        return self._iterator

    def __call__(self) -> PyIterator[Any]:
        iterator = self.iterator
        if self.started:
            iterator.reset()
        self.started = True
        for (batch,) in iterator:
            yield tuple(batch[name] for name in iterator.output_map) if self.as_tuple else batch


def _args(pipeline, output_map, size, reader_name, last_batch_policy, pad_ragged) -> dict:
    return dict(
        pipelines=pipeline,
        output_map=output_map,
        size=size,
        reader_name=reader_name,
        last_batch_policy=last_batch_policy,
        pad_ragged=pad_ragged,
        prepare_first_batch=False,
    )


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
    return _Epochs(
        _args(pipeline, output_map, size, reader_name, last_batch_policy, pad_ragged), as_tuple=True
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
        self._epochs = _Epochs(
            _args(pipeline, output_map, size, reader_name, last_batch_policy, pad_ragged),
            as_tuple=True,
        )

    def __iter__(self) -> PyIterator[tuple[paddle.Tensor, ...]]:
        return self._epochs()

    def __len__(self) -> int:
        """Batches per epoch (needs ``reader_name`` or ``size``)."""
        return len(self._epochs.iterator)
