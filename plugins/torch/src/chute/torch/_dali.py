"""PyTorch iterators under DALI's names: ``from nvidia.dali.plugin.pytorch import X`` ports
to ``from chute.torch import X``.

The classes are :class:`chute.torch.DataIterator` with DALI's conventions
switched on (``iter()`` after an ended epoch starts the next one, DALI's
warnings) and DALI's exact signatures; outputs are DALI's: a list with one
dict of tensors per pipeline, keyed by ``output_map``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import torch
from chute.iteration import PipelineSource
from chute.iteration.dali import dali_iterator
from chute.torch._iterator import DataIterator, to_torch

__all__ = [
    "DALIClassificationIterator",
    "DALIGenericIterator",
    "DALIRaggedIterator",
    "feed_ndarray",
]


def _as_torch(tensor_or_tl: Any) -> torch.Tensor:
    if hasattr(tensor_or_tl, "is_dense_tensor"):  # a TensorList: the whole batch
        if len(tensor_or_tl) and not tensor_or_tl.is_dense_tensor():
            raise ValueError(
                f"feed_ndarray: the batch is ragged (sample shapes {tensor_or_tl.shape()}); "
                "copy its samples one by one (batch.at(i))"
            )
        return to_torch(tensor_or_tl)
    try:
        return torch.from_dlpack(tensor_or_tl)
    except (BufferError, TypeError, AttributeError):
        return torch.tensor(np.asarray(tensor_or_tl))  # read-only host memory: one copy


def feed_ndarray(
    tensor_or_tl: Any, arr: torch.Tensor, cuda_stream: torch.cuda.Stream | int | None = None
) -> torch.Tensor:
    """Copy a dense batch (TensorList) or one sample into the torch tensor ``arr``; return ``arr``.

    ``arr`` must already have the source's dtype and shape (a batch's shape is
    ``(samples, *sample_shape)``). With ``cuda_stream`` (a ``torch.cuda.Stream``
    or a raw ``cudaStream_t``) the copy is queued on that stream without waiting.
    """
    source = _as_torch(tensor_or_tl)
    if source.dtype != arr.dtype:
        raise TypeError(
            f"feed_ndarray: the source holds {source.dtype} but the target tensor is {arr.dtype}"
        )
    if list(source.shape) != list(arr.shape):
        raise ValueError(
            f"feed_ndarray: shapes differ: source {list(source.shape)}, target {list(arr.shape)}"
        )
    if cuda_stream is None:
        arr.copy_(source)
        return arr
    stream = (
        cuda_stream
        if isinstance(cuda_stream, torch.cuda.Stream)
        else torch.cuda.ExternalStream(int(cuda_stream))
    )
    with torch.cuda.stream(stream):
        arr.copy_(source, non_blocking=True)
    return arr


class DALIGenericIterator(DataIterator):
    """DALI's ``DALIGenericIterator``: a list with one dict of torch.Tensors per pipeline.

    ``size`` (samples per shard, -1 = until the pipeline stops) and
    ``reader_name`` (the reader that tells the epoch) are mutually exclusive;
    ``auto_reset`` is a bool or "yes"/"no"; ``fill_last_batch`` is DALI's
    deprecated spelling of FILL (True) / PARTIAL (False) and warns;
    ``dynamic_shape`` is accepted and ignored, as in DALI. Ragged outputs,
    which DALI refuses, come as lists of per-sample tensors. The signature is
    DALI's (chute.iteration.dali).
    """

    dali_conventions = True

    @dali_iterator("pipelines", "output_map")
    def __init__(self, pipelines: PipelineSource, output_map: Sequence[str], **options: Any):
        super().__init__(pipelines, output_map, **options)


class DALIClassificationIterator(DALIGenericIterator):
    """DALI's ``DALIClassificationIterator``: a DALIGenericIterator with outputs "data" and "label"."""

    @dali_iterator("pipelines")
    def __init__(self, pipelines: PipelineSource, **options: Any):
        super().__init__(pipelines, ["data", "label"], **options)


def _sparse_coo(samples: list[torch.Tensor], device: torch.device) -> torch.Tensor:
    # entry (sample i, position j along the sample's first axis); trailing axes stay dense
    indices = [(i, j) for i, s in enumerate(samples) for j in range(s.shape[0])]
    index = torch.tensor(indices, dtype=torch.int64, device=device).reshape(-1, 2).T
    values = torch.cat(samples) if samples else torch.empty(0, device=device)
    return torch.sparse_coo_tensor(index, values)


class DALIRaggedIterator(DALIGenericIterator):
    """DALI's ``DALIRaggedIterator``: each output dense, a list of per-sample tensors, or sparse COO.

    ``output_types`` holds one tag per output: ``DENSE_TAG`` (one tensor; the
    samples must share a shape), ``SPARSE_LIST_TAG`` (a list of per-sample
    tensors) or ``SPARSE_COO_TAG`` (a ``torch.sparse_coo_tensor`` whose entry
    ``[i, j]`` is position ``j`` of sample ``i``). None marks every output dense.
    """

    DENSE_TAG: str = "dense"
    SPARSE_LIST_TAG: str = "sparse_list"
    SPARSE_COO_TAG: str = "sparse_coo"

    @dali_iterator("pipelines", "output_map", after={"reader_name": [("output_types", None)]})
    def __init__(
        self,
        pipelines: PipelineSource,
        output_map: Sequence[str],
        output_types: Sequence[str] | None,
        **options: Any,
    ):
        tags = {self.DENSE_TAG, self.SPARSE_LIST_TAG, self.SPARSE_COO_TAG}
        if output_types is not None:
            unknown = sorted(set(output_types) - tags)
            if unknown:
                raise ValueError(
                    f"DALIRaggedIterator: output_types may hold only DENSE_TAG, SPARSE_LIST_TAG "
                    f"and SPARSE_COO_TAG ({sorted(tags)}), got {unknown}"
                )
            if len(output_types) != len(output_map):
                raise ValueError(
                    f"DALIRaggedIterator: {len(output_types)} output_types for "
                    f"{len(output_map)} outputs"
                )
        types = output_types or [self.DENSE_TAG] * len(output_map)
        self.output_types = dict(zip(output_map, types))
        super().__init__(pipelines, output_map, **options)

    def convert(self, batch: Any, name: str) -> Any:
        """One output as its tag says: a dense tensor, a list of tensors, or a sparse COO tensor."""
        tag = self.output_types[name]
        if tag == self.DENSE_TAG:
            if len(batch) and not batch.is_dense_tensor():
                raise ValueError(
                    f"DALIRaggedIterator: output {name!r} is ragged (sample shapes "
                    f"{batch.shape()}); mark it SPARSE_LIST_TAG or SPARSE_COO_TAG in output_types"
                )
            return to_torch(batch, spec=self.specs.get(name))
        samples = [_as_torch(batch.at(i)) for i in range(len(batch))]
        if tag == self.SPARSE_LIST_TAG:
            return samples
        device_type, device_id = batch.__dlpack_device__()
        device = torch.device("cuda", device_id) if device_type == 2 else torch.device("cpu")
        return _sparse_coo(samples, device)
