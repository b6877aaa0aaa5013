"""chute.jax.DataIterator: chute batches as jax.Arrays, one pipeline per device with ``sharding``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from chute.iteration import (
    Batch,
    Iterator,
    PipelineSource,
    as_policy,
    empty_batch,
    pipelines_for_shard,
)
from chute.pipeline import Pipeline
from chute.types import LastBatchPolicy


def shard_info() -> tuple[int, int]:
    """``(shard_id, num_shards)`` of this process: ``jax.process_index()`` and ``jax.process_count()``."""
    return jax.process_index(), jax.process_count()


def batch_devices(sharding: jax.sharding.Sharding, global_batch: int) -> list[jax.Device]:
    """This process's devices in the order of the batch slices they hold (one pipeline each)."""
    return slice_devices(sharding.addressable_devices_indices_map((global_batch,)))


def slice_devices(index_map: dict[jax.Device, Any]) -> list[jax.Device]:
    """One device per distinct batch slice of a sharding's index map, in slice order.

    Replicated over other mesh axes, a slice is read by the first of its devices.
    """
    starts: dict[int, jax.Device] = {}
    for device, index in index_map.items():
        start = index[0].start or 0
        if start not in starts or device.id < starts[start].id:
            starts[start] = device
    return [starts[s] for s in sorted(starts)]


def to_jax(array: Any, device: jax.Device | None = None) -> jax.Array:
    """One array (numpy, TensorList or device array) as a jax.Array through DLPack.

    Zero-copy where XLA allows it (host memory aligned to 64 bytes, or device
    memory on ``device``); read-only host arrays, which DLPack before 1.0
    cannot export, are copied.
    """
    try:
        out = jax.dlpack.from_dlpack(array)
    except BufferError:
        out = jnp.asarray(np.asarray(array))
    if device is not None and device not in out.devices():
        out = jax.device_put(out, device)
    return out


def _pad(samples: list[jax.Array], shape: Sequence[int], batch: Any) -> jax.Array:
    if not samples:
        return jnp.zeros((0, *shape), dtype=batch.dtype)
    return jnp.stack(
        [jnp.pad(s, [(0, int(n) - d) for n, d in zip(shape, s.shape)]) for s in samples]
    )


class DataIterator(Iterator):
    """Yields one dict of jax.Arrays per step (a :class:`chute.Batch`; ``.real`` = real samples).

    ``pipelines`` is a Pipeline, a list (one per device), or a callable
    ``pipeline_fn(shard_id=..., num_shards=...)`` built with :func:`shard_info`
    (jax process index / count). With ``sharding`` (a
    ``jax.sharding.Sharding``, e.g. ``NamedSharding(mesh, P("batch"))``) each
    pipeline feeds one device's slice of a global batch, assembled with
    ``jax.make_array_from_single_device_arrays``; pipeline i feeds the i-th
    slice. Without it, several pipelines' batches are concatenated.

    Dense outputs come zero-copy through DLPack where XLA allows it. Ragged
    outputs come as a list of per-sample arrays, or zero-padded with
    ``pad_ragged=True`` (required with ``sharding``).
    """

    shard_info = staticmethod(shard_info)

    def __init__(
        self,
        pipelines: PipelineSource,
        output_map: Sequence[str],
        size: int = -1,
        reader_name: str | None = None,
        auto_reset: bool | str = False,
        last_batch_padded: bool = False,
        last_batch_policy: LastBatchPolicy | str = LastBatchPolicy.FILL,
        prepare_first_batch: bool = True,
        sharding: jax.sharding.Sharding | None = None,
        pad_ragged: bool = False,
    ):
        pipelines = pipelines_for_shard(pipelines, self.shard_info)
        pipes = [pipelines] if isinstance(pipelines, Pipeline) else list(pipelines)
        self.sharding = sharding
        self.pad_ragged = pad_ragged
        self._peeked: Batch | None = None
        self._devices: list[jax.Device | None] = [None] * len(pipes)
        if sharding is not None:
            global_batch = sum(p.batch_size for p in pipes)
            self._devices = batch_devices(sharding, global_batch)
            if len(self._devices) != len(pipes):
                raise ValueError(
                    f"DataIterator: the sharding splits the batch over {len(self._devices)} "
                    f"devices of this process but {len(pipes)} pipelines were given"
                )
            if as_policy(last_batch_policy) is LastBatchPolicy.PARTIAL:
                raise ValueError(
                    "DataIterator: sharding needs equal slices: use LastBatchPolicy.FILL or DROP"
                )
        super().__init__(
            pipes,
            output_map,
            size=size,
            reader_name=reader_name,
            auto_reset=auto_reset,
            last_batch_padded=last_batch_padded,
            last_batch_policy=last_batch_policy,
            prepare_first_batch=prepare_first_batch,
        )

    def __next__(self) -> Batch:
        if self._peeked is not None:
            batch, self._peeked = self._peeked, None
            return batch
        return self._assemble(super().__next__())

    def peek(self) -> Batch:
        """The next batch, without consuming it."""
        if self._peeked is None:
            self._peeked = next(self)
        return self._peeked

    @property
    def element_spec(self) -> dict[str, jax.ShapeDtypeStruct | list[jax.ShapeDtypeStruct]]:
        """Shape, dtype and sharding of each output, from the next batch (``peek()``)."""

        def spec(x: Any) -> Any:
            if isinstance(x, list):
                return [spec(s) for s in x]
            return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=x.sharding)

        return {name: spec(value) for name, value in self.peek().items()}

    def reset(self) -> None:
        """Start the next epoch (drops a peeked batch)."""
        self._peeked = None
        super().reset()

    def state_dict(self) -> dict[str, Any]:
        """Where the iterator stands (a peeked batch counts as not yet taken)."""
        if self._peeked is not None:
            raise RuntimeError("state_dict() after peek(): take the peeked batch first")
        return super().state_dict()

    def _assemble(self, per_pipeline: list[Batch]) -> Batch:
        # jax arrays are made here, per step, where the device of each pipeline is known
        out = Batch()
        out.real = sum(b.real for b in per_pipeline)
        for name in self.output_map:
            lists = [b[name] for b in per_pipeline]
            out[name] = self._output(name, lists)
        return out

    def _output(self, name: str, lists: list[Any]) -> Any:
        # ragged within a batch, or dense batches of different shapes from different pipelines
        shapes = {shape for t in lists for shape in t.shape()}
        ragged = len(shapes) > 1
        if ragged and not self.pad_ragged:
            if self.sharding is not None:
                raise ValueError(
                    f"DataIterator: output {name!r} is ragged; pass pad_ragged=True with sharding"
                )
            return [to_jax(t.at(i)) for t in lists for i in range(len(t))]
        if ragged:
            # pad on the device the samples are on (host or GPU) to one shape for all pipelines
            shape = np.max([s for t in lists for s in t.shape()], axis=0)
            parts = [_pad([to_jax(t.at(i)) for i in range(len(t))], shape, t) for t in lists]
        else:
            parts = [self._dense(name, t) for t in lists]
        arrays = [to_jax(p, d) for p, d in zip(parts, self._devices)]
        if self.sharding is not None:
            shape = (sum(a.shape[0] for a in arrays), *arrays[0].shape[1:])
            return jax.make_array_from_single_device_arrays(shape, self.sharding, arrays)
        return arrays[0] if len(arrays) == 1 else self._join(name, arrays)

    def _join(self, name: str, arrays: list[jax.Array]) -> jax.Array:
        # several pipelines without a sharding: one batch, pipeline after pipeline
        return jnp.concatenate(arrays)

    def _dense(self, name: str, batch: Any) -> Any:
        if len(batch):
            return batch
        return empty_batch(batch, self.specs[name])  # an empty PARTIAL batch
