"""chute.paddle iterators: chute batches as paddle.Tensors through DLPack."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import paddle
from chute.iteration import (
    Iterator,
    PipelineSource,
    empty_batch,
    output_specs,
    pipelines_for_shard,
)
from chute.pipeline import Pipeline
from chute.types import LastBatchPolicy


def shard_info() -> tuple[int, int]:
    """``(shard_id, num_shards)`` of this process: paddle.distributed's rank and world size."""
    import paddle.distributed as dist

    return dist.get_rank(), dist.get_world_size()


def build_pipelines(pipelines: PipelineSource) -> Pipeline | list[Pipeline]:
    """Pipelines as given, or ``pipelines(shard_id=..., num_shards=...)`` for this rank's shard."""
    return pipelines_for_shard(pipelines, shard_info)


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


class DataIterator(Iterator):
    """Yields, like DALI's ``DALIGenericIterator``, a list with one dict of paddle.Tensors per pipeline.

    ``pipelines`` is a Pipeline, a list (one per device), or a callable
    ``pipeline_fn(shard_id=..., num_shards=...)`` built with this process's
    shard from :func:`shard_info` (paddle.distributed rank / world size).
    Dense outputs share the batch's memory (DLPack); ragged outputs come as a
    list of per-sample tensors, or zero-padded with ``pad_ragged=True``.
    Each dict is a :class:`chute.Batch` (``.real`` = real samples).
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
        self.pad_ragged = pad_ragged
        pipelines = build_pipelines(pipelines)
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

    def convert(self, batch: Any, name: str) -> paddle.Tensor | list[paddle.Tensor]:
        """A pipeline output as a paddle.Tensor (or a list of them when ragged)."""
        return to_paddle(batch, self.pad_ragged, self.specs.get(name))


class ClassificationIterator(DataIterator):
    """A :class:`DataIterator` over pipelines with two outputs, named ``"data"`` and ``"label"``."""

    def __init__(self, pipelines: PipelineSource, **kwargs: Any):
        super().__init__(pipelines, ["data", "label"], **kwargs)
