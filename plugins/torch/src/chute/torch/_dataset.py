"""chute.torch.IterableDataset: a chute pipeline as a torch.utils.data.IterableDataset."""

from __future__ import annotations

from collections.abc import Iterator as PyIterator
from collections.abc import Sequence
from typing import Any

import torch.utils.data
from chute.iteration import Batch, PipelineSource
from chute.torch._iterator import DataIterator
from chute.types import LastBatchPolicy


class IterableDataset(torch.utils.data.IterableDataset):
    """One pipeline as a torch ``IterableDataset``: each ``iter()`` is one epoch of batches.

    Every item is a whole batch (a :class:`chute.Batch` dict of tensors,
    ``.real`` = real samples), so use it directly or with
    ``DataLoader(dataset, batch_size=None)``; keep ``num_workers=0`` — the
    pipeline runs its own threads. Iterating again continues with the
    pipeline's next epoch (an epoch abandoned half-way is skipped to its end).
    ``pipeline`` may be a callable ``pipeline_fn(shard_id=..., num_shards=...)``
    built with the torch.distributed rank and world size (see ``shard_info``).
    """

    def __init__(
        self,
        pipeline: PipelineSource,
        output_map: Sequence[str],
        size: int = -1,
        reader_name: str | None = None,
        last_batch_policy: LastBatchPolicy | str = LastBatchPolicy.FILL,
        last_batch_padded: bool = False,
        pad_ragged: bool = False,
    ):
        self._args: dict[str, Any] = dict(
            pipelines=pipeline,
            output_map=output_map,
            size=size,
            reader_name=reader_name,
            last_batch_policy=last_batch_policy,
            last_batch_padded=last_batch_padded,
            pad_ragged=pad_ragged,
            prepare_first_batch=False,
        )
        self._iterator: DataIterator | None = None
        self._started = False

    @property
    def iterator(self) -> DataIterator:
        """The underlying :class:`DataIterator`, built on first use."""
        if self._iterator is None:
            self._iterator = DataIterator(**self._args)
            if len(self._iterator.pipelines) != 1:
                raise ValueError("IterableDataset takes one pipeline")
        return self._iterator

    def __iter__(self) -> PyIterator[Batch]:
        if torch.utils.data.get_worker_info() is not None:
            raise RuntimeError(
                "chute.torch.IterableDataset runs its own threads: use DataLoader(num_workers=0)"
            )
        iterator = self.iterator
        if self._started:
            iterator.reset()
        self._started = True
        for (batch,) in iterator:
            yield batch

    def __len__(self) -> int:
        """Batches per epoch (needs ``reader_name`` or ``size``)."""
        return len(self.iterator)

    def state_dict(self) -> dict[str, Any]:
        """The iterator's state: restore it to continue with the exact next batch."""
        return {"iterator": self.iterator.state_dict(), "started": self._started}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state_dict` output; the next ``iter()`` resumes mid-epoch."""
        self.iterator.load_state_dict(state["iterator"])
        self._started = False
