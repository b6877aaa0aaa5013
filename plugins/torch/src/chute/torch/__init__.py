"""chute for PyTorch: batches as torch.Tensors through DLPack (zero-copy, same device).

    from chute.torch import DataIterator
    it = DataIterator(pipe, ["images", "labels"], reader_name="reader")
    for (batch,) in it:
        images, labels = batch["images"], batch["labels"]

Epochs, shards, last batches and state come from ``chute.iteration``, so
every plugin sees the same batches. Give ``pipelines`` as a callable
``pipeline_fn(shard_id=..., num_shards=...)`` and it is built with
:func:`shard_info` (torch.distributed's global rank / world size) and, with
CUDA, ``device_id`` = the local rank's GPU (:func:`placement`; see
docs/multi-gpu.md for launching on one node or several).

DALI's names work too (``from nvidia.dali.plugin.pytorch import X`` ports to
``from chute.torch import X``): ``DALIGenericIterator``,
``DALIClassificationIterator``, ``DALIRaggedIterator``, ``LastBatchPolicy``,
``feed_ndarray``, ``TorchPythonFunction``, ``fn.torch_python_function`` and
``chute.torch.experimental.proxy.DALIServer`` / ``DataLoader``.
"""

from __future__ import annotations

try:
    import torch  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("chute.torch needs torch; install it with: pip install torch") from exc

from chute.torch import experimental, fn, proxy
from chute.torch._dali import (
    DALIClassificationIterator,
    DALIGenericIterator,
    DALIRaggedIterator,
    feed_ndarray,
)
from chute.torch._dataset import IterableDataset
from chute.torch._iterator import (
    ClassificationIterator,
    DataIterator,
    device_id,
    placement,
    shard_info,
    to_torch,
)
from chute.torch.python_function import TorchPythonFunction, torch_python_function
from chute.types import LastBatchPolicy

__all__ = [
    "ClassificationIterator",
    "DALIClassificationIterator",
    "DALIGenericIterator",
    "DALIRaggedIterator",
    "DataIterator",
    "IterableDataset",
    "LastBatchPolicy",
    "TorchPythonFunction",
    "device_id",
    "experimental",
    "feed_ndarray",
    "fn",
    "placement",
    "proxy",
    "shard_info",
    "to_torch",
    "torch_python_function",
]
