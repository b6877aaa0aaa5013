"""torch iterators: chute batches as torch.Tensors through DLPack, epochs from chute.iteration."""

from __future__ import annotations

import os
from typing import Any

import torch
from chute.distributed import Placement, placement_from
from chute.iteration import FrameworkIterator, PipelineSource, empty_batch
from chute.iteration.dali import dali_iterator


def shard_info() -> tuple[int, int]:
    """``(shard_id, num_shards)`` of this process: torch.distributed's rank and world size.

    The global rank of the default process group; before one exists, the
    ``RANK`` / ``WORLD_SIZE`` variables that ``torchrun`` sets; ``(0, 1)``
    outside a distributed job.
    """
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    return 0, 1


def placement() -> Placement:
    """This process's shard and GPU: global rank from :func:`shard_info`, GPU from its local rank.

    The local rank is the launcher's (``LOCAL_RANK`` from torchrun, or MPI's and
    Slurm's equivalents), else the global rank modulo the GPUs this node shows;
    ``device_id`` is that rank's GPU among ``torch.cuda.device_count()``, or None
    without CUDA.
    """
    rank, world_size = shard_info()
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return placement_from(rank, world_size, gpus)


def device_id() -> int | None:
    """The GPU this process's pipelines run on (``placement().device_id``); None without CUDA."""
    return placement().device_id


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
    # a GPU sample (TensorGPU) orders torch's current stream after the pipeline's work
    gpu = batch.__dlpack_device__()[0] == 2
    samples = [torch.from_dlpack(batch[i] if gpu else batch.at(i)) for i in range(len(batch))]
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
    (torch.distributed's global rank and world size) and, with CUDA, with
    ``device_id=`` its local rank's GPU (:func:`placement`) when it takes one.

    Dense outputs become one tensor sharing the batch's memory (DLPack, no
    copy, same device); a GPU batch is ordered before torch's current stream
    on its device, so the pipeline's work is done before that stream reads it. Ragged outputs (samples of different shapes) become a
    list of per-sample tensors, or with ``pad_ragged=True`` one zero-padded
    tensor. Each dict is a :class:`chute.Batch`: ``batch.real`` counts its
    real samples (the rest is FILL padding). The arguments are
    :class:`chute.iteration.FrameworkIterator`'s.
    """

    shard_info = staticmethod(shard_info)
    device_info = staticmethod(device_id)
    to_tensor = staticmethod(to_torch)


class ClassificationIterator(DataIterator):
    """A :class:`DataIterator` over pipelines with two outputs, named ``"data"`` and ``"label"``."""

    # the keywords of FrameworkIterator after output_map, spelled out (typed in _iterator.pyi)
    @dali_iterator("pipelines", keyword_only=[("pad_ragged", False)])
    def __init__(self, pipelines: PipelineSource, **options: Any):
        super().__init__(pipelines, ["data", "label"], **options)
