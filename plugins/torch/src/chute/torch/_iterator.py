"""torch iterators: chute batches as torch.Tensors through DLPack, epochs from chute.iteration."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import torch
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
    """``(shard_id, num_shards)`` of this process: torch.distributed's rank and world size.

    Falls back to the ``RANK`` / ``WORLD_SIZE`` variables that ``torchrun`` sets
    before the process group exists, and to ``(0, 1)`` outside a distributed job.
    """
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    return 0, 1


def build_pipelines(pipelines: PipelineSource) -> Pipeline | list[Pipeline]:
    """Pipelines as given, or ``pipelines(shard_id=..., num_shards=...)`` for this rank's shard."""
    return pipelines_for_shard(pipelines, shard_info)


def to_torch(
    batch: Any, pad_ragged: bool = False, spec: Any = None
) -> torch.Tensor | list[torch.Tensor]:
    """A TensorList as one tensor (zero-copy DLPack import), or a list per sample when ragged."""
    if len(batch) == 0:
        empty = torch.from_numpy(empty_batch(batch, spec))
        device_type, device_id = batch.__dlpack_device__()
        return empty.to(f"cuda:{device_id}") if device_type == 2 else empty  # 2 = kDLCUDA
    if batch.is_dense_tensor():
        return torch.from_dlpack(batch)
    samples = [torch.from_dlpack(batch.at(i)) for i in range(len(batch))]
    if not pad_ragged:
        return samples
    shape = [max(s.shape[d] for s in samples) for d in range(samples[0].ndim)]
    out = samples[0].new_zeros((len(samples), *shape))
    for i, s in enumerate(samples):
        out[(i, *(slice(0, d) for d in s.shape))] = s
    return out


class DataIterator(Iterator):
    """Yields, like DALI's ``DALIGenericIterator``, a list with one dict of torch.Tensors per pipeline.

    ``pipelines`` is a Pipeline, a list of them (one per device), or a
    callable ``pipeline_fn(shard_id=..., num_shards=...)`` — e.g. a
    ``@pipeline_def`` function whose reader takes those arguments — which is
    called with this process's shard from :func:`shard_info`
    (torch.distributed rank and world size).

    Dense outputs become one tensor sharing the batch's memory (DLPack, no
    copy, same device). Ragged outputs (samples of different shapes) become a
    list of per-sample tensors, or with ``pad_ragged=True`` one zero-padded
    tensor. Each dict is a :class:`chute.Batch`: ``batch.real`` counts its
    real samples (the rest is FILL padding).
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
        # set before the base class converts the first batch
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

    def convert(self, batch: Any, name: str) -> torch.Tensor | list[torch.Tensor]:
        """A pipeline output as a torch.Tensor (or a list of them when ragged)."""
        return to_torch(batch, self.pad_ragged, self.specs.get(name))


class ClassificationIterator(DataIterator):
    """A :class:`DataIterator` over pipelines with two outputs, named ``"data"`` and ``"label"``."""

    def __init__(self, pipelines: PipelineSource, **kwargs: Any):
        super().__init__(pipelines, ["data", "label"], **kwargs)
