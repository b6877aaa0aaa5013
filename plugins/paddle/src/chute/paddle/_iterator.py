"""chute.paddle iterators: chute batches as paddle.Tensors through DLPack."""

from __future__ import annotations

from typing import Any

import numpy as np

import paddle
from chute.iteration import FrameworkIterator, PipelineSource, empty_batch
from chute.iteration.dali import dali_iterator


def shard_info() -> tuple[int, int]:
    """``(shard_id, num_shards)`` of this process: paddle.distributed's rank and world size."""
    import paddle.distributed as dist

    return dist.get_rank(), dist.get_world_size()


def _from_dlpack(array: Any) -> paddle.Tensor:
    try:
        return paddle.utils.dlpack.from_dlpack(array)
    except (BufferError, TypeError):
        # read-only host memory cannot be exported through DLPack 0.x: one copy
        return paddle.to_tensor(np.asarray(array))


def to_paddle(
    batch: Any, pad_ragged: bool = False, spec: Any = None
) -> paddle.Tensor | list[paddle.Tensor]:
    """A TensorList as one paddle.Tensor (zero-copy DLPack import), or a list when ragged."""
    if len(batch) == 0:
        return paddle.to_tensor(empty_batch(batch, spec))
    if batch.is_dense_tensor():
        return _from_dlpack(batch)
    if not pad_ragged:
        return [_from_dlpack(batch.at(i)) for i in range(len(batch))]
    if hasattr(batch, "as_padded"):  # host batch: pad in NumPy (paddle's pad lacks uint8)
        return _from_dlpack(batch.as_padded())
    samples = [_from_dlpack(batch.at(i)) for i in range(len(batch))]
    shape = [max(s.shape[d] for s in samples) for d in range(samples[0].ndim)]
    out = paddle.zeros([len(samples), *shape], dtype=samples[0].dtype)
    for i, s in enumerate(samples):
        out[(i, *(slice(0, d) for d in s.shape))] = s
    return out


class DataIterator(FrameworkIterator):
    """Yields, like DALI's ``DALIGenericIterator``, a list with one dict of paddle.Tensors per pipeline.

    ``pipelines`` is a Pipeline, a list (one per device), or a callable
    ``pipeline_fn(shard_id=..., num_shards=...)`` built with this process's
    shard from :func:`shard_info` (paddle.distributed rank / world size).
    Dense outputs share the batch's memory (DLPack); ragged outputs come as a
    list of per-sample tensors, or zero-padded with ``pad_ragged=True``.
    Each dict is a :class:`chute.Batch` (``.real`` = real samples). The
    arguments are :class:`chute.iteration.FrameworkIterator`'s.
    """

    shard_info = staticmethod(shard_info)
    to_tensor = staticmethod(to_paddle)


class ClassificationIterator(DataIterator):
    """A :class:`DataIterator` over pipelines with two outputs, named ``"data"`` and ``"label"``."""

    # the keywords of FrameworkIterator after output_map, spelled out (typed in _iterator.pyi)
    @dali_iterator("pipelines", keyword_only=[("pad_ragged", False)])
    def __init__(self, pipelines: PipelineSource, **options: Any):
        super().__init__(pipelines, ["data", "label"], **options)
