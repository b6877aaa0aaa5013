"""chute for PaddlePaddle: batches as paddle.Tensors through DLPack (zero-copy, same device).

    from chute.paddle import DataIterator
    for (batch,) in DataIterator(pipe, ["images", "labels"], reader_name="reader"):
        images, labels = batch["images"], batch["labels"]

Epochs, shards, last batches and state come from ``chute.iteration``, so
every plugin sees the same batches. ``reader`` (a generator function) and
``IterableDataset`` feed ``paddle.io.DataLoader`` and Paddle's training
APIs. A callable ``pipeline_fn(shard_id=..., num_shards=...)`` given as the
pipeline is built with :func:`shard_info` (paddle.distributed rank / world size).

DALI's names work too (``from nvidia.dali.plugin.paddle import X`` ports to
``from chute.paddle import X``): ``DALIGenericIterator``,
``DALIClassificationIterator`` and ``LastBatchPolicy``.
"""

from __future__ import annotations

try:
    import paddle  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "chute.paddle needs paddle; install it with: pip install paddlepaddle"
    ) from exc

from chute.paddle._dali import DALIClassificationIterator, DALIGenericIterator
from chute.paddle._iterator import ClassificationIterator, DataIterator, shard_info, to_paddle
from chute.paddle._reader import IterableDataset, reader
from chute.types import LastBatchPolicy

__all__ = [
    "ClassificationIterator",
    "DALIClassificationIterator",
    "DALIGenericIterator",
    "DataIterator",
    "IterableDataset",
    "LastBatchPolicy",
    "reader",
    "shard_info",
    "to_paddle",
]
