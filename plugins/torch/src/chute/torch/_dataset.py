"""chute.torch.IterableDataset: a chute pipeline as a torch.utils.data.IterableDataset."""

from __future__ import annotations

from collections.abc import Iterator as PyIterator
from collections.abc import Sequence
from typing import Any

import torch.utils.data
from chute.iteration import Batch, Epochs, PipelineSource
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
        self._epochs = Epochs(
            lambda: DataIterator(
                pipeline,
                output_map,
                size=size,
                reader_name=reader_name,
                last_batch_policy=last_batch_policy,
                last_batch_padded=last_batch_padded,
                pad_ragged=pad_ragged,
                prepare_first_batch=False,
            ),
            "IterableDataset",
        )

    @property
    def iterator(self) -> DataIterator:
        """The underlying :class:`DataIterator`, built on first use."""
        return self._epochs.iterator

    def __iter__(self) -> PyIterator[Batch]:
        if torch.utils.data.get_worker_info() is not None:
            raise RuntimeError(
                "chute.torch.IterableDataset runs its own threads: use DataLoader(num_workers=0)"
            )
        return iter(self._epochs)

    def __len__(self) -> int:
        """Batches per epoch (needs ``reader_name`` or ``size``)."""
        return len(self.iterator)

    def state_dict(self) -> dict[str, Any]:
        """The iterator's state: restore it to continue with the exact next batch."""
        return self._epochs.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from :meth:`state_dict` output; the next ``iter()`` resumes mid-epoch."""
        self._epochs.load_state_dict(state)
