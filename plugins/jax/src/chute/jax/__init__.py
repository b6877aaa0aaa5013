"""chute for JAX: batches as jax.Arrays through DLPack, sharded over devices on request.

    from chute.jax import DataIterator
    it = DataIterator(pipe, ["images", "labels"], reader_name="reader")
    batch = next(it)            # {"images": jax.Array, "labels": jax.Array}

Epochs, shards, last batches and state come from ``chute.iteration``, so
every plugin sees the same batches. ``sharding=`` lays a global batch over
several devices (one pipeline per device); ``@data_iterator`` builds those
pipelines with the right ``shard_id`` / ``num_shards``. A callable
``pipeline_fn(shard_id=..., num_shards=...)`` given as ``pipelines`` is built
with :func:`shard_info` (jax process index / count).

DALI's names work too (``from nvidia.dali.plugin.jax import X`` ports to
``from chute.jax import X``): ``DALIGenericIterator``, ``data_iterator``,
``LastBatchPolicy``, and ``chute.jax.clu.peekable_data_iterator`` /
``DALIGenericPeekableIterator``.
"""

from __future__ import annotations

try:
    import jax  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("chute.jax needs jax; install it with: pip install jax") from exc

from chute.jax import clu
from chute.jax._dali import DALIGenericIterator, DALIGenericPeekableIterator
from chute.jax._decorator import data_iterator, peekable_data_iterator
from chute.jax._iterator import DataIterator, device_id, gpu_id, shard_info, to_jax
from chute.types import LastBatchPolicy

__all__ = [
    "DALIGenericIterator",
    "DALIGenericPeekableIterator",
    "DataIterator",
    "LastBatchPolicy",
    "clu",
    "data_iterator",
    "device_id",
    "gpu_id",
    "peekable_data_iterator",
    "shard_info",
    "to_jax",
]
