"""torch iterators: chute batches as torch.Tensors through DLPack, epochs from chute.iteration."""

from __future__ import annotations

import os
from typing import Any

import torch
from chute.iteration import FrameworkIterator, PipelineSource, empty_batch


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


class DataIterator(FrameworkIterator):
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
    real samples (the rest is FILL padding). The arguments are
    :class:`chute.iteration.FrameworkIterator`'s.
    """

    shard_info = staticmethod(shard_info)
    to_tensor = staticmethod(to_torch)


class ClassificationIterator(DataIterator):
    """A :class:`DataIterator` over pipelines with two outputs, named ``"data"`` and ``"label"``."""

    def __init__(self, pipelines: PipelineSource, **kwargs: Any):
        super().__init__(pipelines, ["data", "label"], **kwargs)
