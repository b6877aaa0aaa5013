"""chute.tf.DataIterator: chute batches as tf.Tensors through DLPack."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import tensorflow as tf

from chute.iteration import FrameworkIterator, PipelineSource, empty_batch


def shard_info(input_context: tf.distribute.InputContext | None = None) -> tuple[int, int]:
    """``(shard_id, num_shards)`` from a tf.distribute InputContext (its input pipeline), else (0, 1)."""
    if input_context is None:
        return 0, 1
    return input_context.input_pipeline_id, input_context.num_input_pipelines


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


class DataIterator(FrameworkIterator):
    """Yields, like DALI's generic iterators, a list with one dict of tf.Tensors per pipeline.

    ``pipelines`` may be a callable ``pipeline_fn(shard_id=..., num_shards=...)``
    built with the shard of ``input_context`` (a ``tf.distribute.InputContext``).
    Dense outputs come through DLPack; ragged outputs as a list of per-sample
    tensors, or zero-padded with ``pad_ragged=True``. Each dict is a
    :class:`chute.Batch` (``.real`` = real samples). The other arguments are
    :class:`chute.iteration.FrameworkIterator`'s.
    """

    to_tensor = staticmethod(to_tf)

    def __init__(
        self,
        pipelines: PipelineSource,
        output_map: Sequence[str],
        *args: Any,
        input_context: tf.distribute.InputContext | None = None,
        **kwargs: Any,
    ):
        self.input_context = input_context
        super().__init__(pipelines, output_map, *args, **kwargs)

    def shard_info(self) -> tuple[int, int]:
        """This input pipeline's ``(shard_id, num_shards)`` in ``input_context``, else (0, 1)."""
        return shard_info(self.input_context)
