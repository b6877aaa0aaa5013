"""chute.tf.DataIterator: chute batches as tf.Tensors through DLPack."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from chute.iteration import (
    Iterator,
    PipelineSource,
    empty_batch,
    output_specs,
    pipelines_for_shard,
)
from chute.pipeline import Pipeline
from chute.types import LastBatchPolicy


def shard_info(input_context: tf.distribute.InputContext | None = None) -> tuple[int, int]:
    """``(shard_id, num_shards)`` from a tf.distribute InputContext (its input pipeline), else (0, 1)."""
    if input_context is None:
        return 0, 1
    return input_context.input_pipeline_id, input_context.num_input_pipelines


def build_pipelines(
    pipelines: PipelineSource, input_context: tf.distribute.InputContext | None = None
) -> Pipeline | list[Pipeline]:
    """Pipelines as given, or ``pipelines(shard_id=..., num_shards=...)`` for this input pipeline."""
    return pipelines_for_shard(pipelines, lambda: shard_info(input_context))


_TF_ALIGNMENT = 64  # bytes; Eigen's requirement for CPU tensors


def _from_dlpack(array: Any) -> tf.Tensor:
    if not hasattr(array, "__cuda_array_interface__"):
        host = np.asarray(array)
        if host.ctypes.data % _TF_ALIGNMENT:
            # TensorFlow kernels assume aligned buffers (an unaligned import aborts the
            # process in e.g. tf.pad): copy into TensorFlow's own memory instead
            return tf.convert_to_tensor(host)
    try:
        return tf.experimental.dlpack.from_dlpack(array.__dlpack__())
    except (BufferError, TypeError):
        # read-only host memory cannot be exported through DLPack 0.x: one copy
        return tf.convert_to_tensor(np.asarray(array))


def to_tf(batch: Any, pad_ragged: bool = False, spec: Any = None) -> tf.Tensor | list[tf.Tensor]:
    """A TensorList as one tf.Tensor (DLPack import), or a list per sample when ragged.

    On the CPU TensorFlow aliases the batch's memory when it is 64-byte
    aligned and copies it otherwise; device batches stay on their device.
    """
    if len(batch) == 0:
        return tf.convert_to_tensor(empty_batch(batch, spec))
    if batch.is_dense_tensor():
        return _from_dlpack(batch)
    samples = [_from_dlpack(batch.at(i)) for i in range(len(batch))]
    if not pad_ragged:
        return samples
    shape = tf.reduce_max(tf.stack([tf.shape(s) for s in samples]), axis=0)
    return tf.stack(
        [tf.pad(s, tf.stack([tf.zeros_like(shape), shape - tf.shape(s)], axis=1)) for s in samples]
    )


class DataIterator(Iterator):
    """Yields, like DALI's generic iterators, a list with one dict of tf.Tensors per pipeline.

    ``pipelines`` may be a callable ``pipeline_fn(shard_id=..., num_shards=...)``
    built with the shard of ``input_context`` (a ``tf.distribute.InputContext``).
    Dense outputs come through DLPack; ragged outputs as a list of per-sample
    tensors, or zero-padded with ``pad_ragged=True``. Each dict is a
    :class:`chute.Batch` (``.real`` = real samples).
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
        input_context: tf.distribute.InputContext | None = None,
    ):
        self.pad_ragged = pad_ragged
        pipelines = build_pipelines(pipelines, input_context)
        first = pipelines if isinstance(pipelines, Pipeline) else pipelines[0]
        self.specs = output_specs(first, output_map)
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

    def convert(self, batch: Any, name: str) -> tf.Tensor | list[tf.Tensor]:
        """A pipeline output as a tf.Tensor (or a list of them when ragged)."""
        return to_tf(batch, self.pad_ragged, self.specs.get(name))
