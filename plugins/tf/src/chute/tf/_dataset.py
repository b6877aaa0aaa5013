"""chute.tf.dataset: a chute pipeline as a finite, re-iterable tf.data.Dataset."""

from __future__ import annotations

from collections.abc import Iterator as PyIterator
from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from chute.iteration import Epochs, Iterator, PipelineSource, empty_batch, pipelines_for_shard
from chute.pipeline import Pipeline
from chute.tf._iterator import shard_info
from chute.types import LastBatchPolicy


class _Epochs:
    """The generator function behind the dataset: each call runs the pipeline's next epoch."""

    def __init__(self, iterator: Iterator):
        self.epochs = Epochs(lambda: iterator, "chute.tf.dataset")
        self.iterator = iterator

    def __call__(self) -> PyIterator[tuple[np.ndarray, ...]]:
        for batch in self.epochs:
            yield tuple(self._numpy(batch[name], name) for name in self.iterator.output_map)

    def _numpy(self, batch: Any, name: str) -> np.ndarray:
        batch = batch.as_cpu()
        if len(batch) == 0:
            return empty_batch(batch, self.iterator.specs[name])
        return batch.as_padded() if not batch.is_dense_tensor() else batch.as_array()


def dataset(
    pipeline: PipelineSource,
    output_map: Sequence[str],
    size: int = -1,
    reader_name: str | None = None,
    last_batch_policy: LastBatchPolicy | str = LastBatchPolicy.FILL,
    last_batch_padded: bool = False,
    input_context: tf.distribute.InputContext | None = None,
    output_shapes: Sequence[Sequence[int | None] | None] | None = None,
) -> tf.data.Dataset:
    """One pipeline as a ``tf.data.Dataset`` of tuples of batches, in ``output_map`` order.

    The dataset is finite (one epoch: ``len()`` batches, with ``reader_name``
    or ``size``) and each new iteration — ``for`` loop, ``model.fit`` epoch —
    continues with the pipeline's next epoch; iterate it from one place at a
    time. ``element_spec`` is declared up front: dtypes and ranks come from
    the pipeline's build-time specs, the batch dimension is the batch size
    with FILL or DROP and None with PARTIAL, sample dimensions are None.
    ``output_shapes`` (as DALI's: one full batch shape per output, None for
    unknown dims, or None for the whole output) fills in what the build
    cannot know, e.g. ``[(None, 224, 224, 3), (None, 1)]``; TensorFlow checks
    every batch against it. Ragged outputs are zero-padded to the batch's largest sample. Batches are
    copied into TensorFlow (``tf.data`` owns its buffers); use
    :class:`DataIterator` for DLPack zero-copy.

    ``pipeline`` may be a callable ``pipeline_fn(shard_id=..., num_shards=...)``;
    it is built with the shard of ``input_context``, so that
    ``strategy.distribute_datasets_from_function(lambda ctx: dataset(fn, ...,
    input_context=ctx))`` gives each input pipeline its own shard.
    """
    pipe = pipelines_for_shard(pipeline, lambda: shard_info(input_context))
    if not isinstance(pipe, Pipeline):
        raise TypeError("chute.tf.dataset takes one pipeline (or a callable that makes one)")
    specs = pipe.output_specs()
    unknown = any(s.dtype is None or s.ndim is None for s in specs)
    iterator = Iterator(
        pipe,
        output_map,
        size=size,
        reader_name=reader_name,
        last_batch_policy=last_batch_policy,
        last_batch_padded=last_batch_padded,
        # a first batch tells dtypes and ranks that the build could not
        prepare_first_batch=unknown,
    )
    specs = iterator.specs  # with what the first batch told
    known_batch = iterator.policy is not LastBatchPolicy.PARTIAL
    batch_dim = pipe.batch_size if known_batch else None
    shapes = [tf.TensorShape((batch_dim, *[None] * specs[name].ndim)) for name in output_map]
    for i, given in enumerate(output_shapes or ()):
        if given is not None:
            try:
                shapes[i] = shapes[i].merge_with(tf.TensorShape(given))
            except ValueError:
                raise ValueError(
                    f"chute.tf.dataset: output_shapes[{i}] = {tuple(given)} does not fit output "
                    f"{output_map[i]!r} of shape {shapes[i]}"
                ) from None
    signature = tuple(
        tf.TensorSpec(shape, tf.as_dtype(specs[name].dtype), name)
        for shape, name in zip(shapes, output_map)
    )
    ds = tf.data.Dataset.from_generator(_Epochs(iterator), output_signature=signature)
    try:
        ds = ds.apply(tf.data.experimental.assert_cardinality(len(iterator)))
    except TypeError:
        pass  # no reader_name or size: the epoch ends when the pipeline says so
    return ds
