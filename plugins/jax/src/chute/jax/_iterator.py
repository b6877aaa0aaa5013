"""chute.jax.DataIterator: chute batches as jax.Arrays, one pipeline per device with ``sharding``."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from chute.distributed import takes_argument
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


def gpu_id(device: jax.Device) -> int | None:
    """The CUDA device number (among this process's visible GPUs) of a jax GPU device, else None."""
    if device.platform != "gpu":
        return None
    local = getattr(device, "local_hardware_id", None)
    return local if local is not None else jax.local_devices(backend="gpu").index(device)


def device_id() -> int | None:
    """The GPU of this process's one pipeline without a sharding: its first local GPU, or None."""
    return gpu_id(jax.local_devices()[0])


@dataclasses.dataclass(frozen=True)
class BatchSlices:
    """How a sharding cuts a global batch along its first axis, seen from this process.

    ``count`` slices over all processes (the ``num_shards`` of one pipeline per
    slice); ``local`` holds this process's slices as ``(slice index, devices)``,
    the devices that hold that slice (several where the sharding replicates it over
    other mesh axes), in slice order. The first device of each runs its pipeline.
    """

    count: int
    local: list[tuple[int, list[jax.Device]]]

    @property
    def local_devices(self) -> list[jax.Device]:
        """The device that runs each local slice's pipeline, in slice order."""
        return [devices[0] for _, devices in self.local]


def batch_slices(sharding: jax.sharding.Sharding) -> BatchSlices:
    """The slices of the global batch that ``sharding`` makes, and which are this process's."""
    # a first axis as long as the device count splits evenly over every mesh axis size
    index_map = sharding.devices_indices_map((len(sharding.device_set),))
    starts = sorted({index[0].start or 0 for index in index_map.values()})
    mine: dict[int, list[jax.Device]] = {}
    for device, index in index_map.items():
        if device.process_index == jax.process_index():
            mine.setdefault(starts.index(index[0].start or 0), []).append(device)
    local = [(k, sorted(mine[k], key=lambda d: d.id)) for k in sorted(mine)]
    return BatchSlices(len(starts), local)


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
    ``pipeline_fn(shard_id=..., num_shards=...)``. With ``sharding`` (a
    ``jax.sharding.Sharding``, e.g. ``NamedSharding(mesh, P("batch"))``) every
    slice of the global batch along its first axis comes from its own pipeline,
    run on the device that holds it: the callable is called once per slice of
    this process with ``shard_id`` = the slice's index among the slices of all
    processes, ``num_shards`` = their count and, on GPUs, ``device_id`` = that
    device's GPU (when it takes one); a list gives the pipelines of this
    process's slices in slice order. Each output is a global array
    (``jax.make_array_from_single_device_arrays``) whose shape counts the
    slices of every process, so the same code runs in one process driving N
    devices and in N processes after ``jax.distributed.initialize()``.
    Without a sharding, a callable is built with :func:`shard_info` (jax
    process index / count) and several pipelines' batches are concatenated.

    Dense outputs come zero-copy through DLPack where XLA allows it. Ragged
    outputs come as a list of per-sample arrays, or zero-padded with
    ``pad_ragged=True`` (required with ``sharding``; with several processes the
    padded shapes must agree across them, so prefer dense outputs there).
    ``batch.real`` counts the real samples of this process's slices and
    ``batch.real_by_slice`` lists them per pipeline (per slice, in slice order):
    the first ``real_by_slice[k]`` rows of slice k are real, the rest padding.
    """

    shard_info = staticmethod(shard_info)
    device_info = staticmethod(device_id)

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
        self.sharding = sharding
        self.pad_ragged = pad_ragged
        self._peeked: Batch | None = None
        self._slices: BatchSlices | None = None
        if sharding is None:
            built = pipelines_for_shard(pipelines, self.shard_info, self.device_info)
            pipes = [built] if isinstance(built, Pipeline) else list(built)
        else:
            if as_policy(last_batch_policy) is LastBatchPolicy.PARTIAL:
                raise ValueError(
                    "DataIterator: sharding needs equal slices: use LastBatchPolicy.FILL or DROP"
                )
            self._slices = batch_slices(sharding)
            pipes = self._pipelines_for_slices(pipelines, self._slices)
        self._devices: list[jax.Device | None] = (
            [None] * len(pipes) if self._slices is None else self._slices.local_devices
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

    @staticmethod
    def _pipelines_for_slices(pipelines: PipelineSource, slices: BatchSlices) -> list[Pipeline]:
        if isinstance(pipelines, Pipeline) or not callable(pipelines):
            pipes = [pipelines] if isinstance(pipelines, Pipeline) else list(pipelines)
            if len(pipes) != len(slices.local):
                raise ValueError(
                    f"DataIterator: the sharding splits the batch over {len(slices.local)} "
                    f"devices of this process but {len(pipes)} pipelines were given"
                )
            return pipes
        return [
            pipelines(**slice_arguments(pipelines, index, slices.count, devices[0]))
            for index, devices in slices.local
        ]

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
        out.real_by_slice = [b.real for b in per_pipeline]  # type: ignore[attr-defined]
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
        if self._slices is not None:
            return self._global_array(arrays, self._slices)
        return arrays[0] if len(arrays) == 1 else self._join(name, arrays)

    def _global_array(self, arrays: list[jax.Array], slices: BatchSlices) -> jax.Array:
        # one array per addressable device: a slice's pipeline output, copied to its replicas
        per_device = [
            array if i == 0 else jax.device_put(array, device)
            for array, (_, devices) in zip(arrays, slices.local)
            for i, device in enumerate(devices)
        ]
        shape = (arrays[0].shape[0] * slices.count, *arrays[0].shape[1:])
        return jax.make_array_from_single_device_arrays(shape, self.sharding, per_device)

    def _join(self, name: str, arrays: list[jax.Array]) -> jax.Array:
        # several pipelines without a sharding: one batch, pipeline after pipeline
        return jnp.concatenate(arrays)

    def _dense(self, name: str, batch: Any) -> Any:
        if len(batch):
            return batch
        return empty_batch(batch, self.specs[name])  # an empty PARTIAL batch


def slice_arguments(
    factory: Callable, shard_id: int, num_shards: int, device: jax.Device
) -> dict[str, int]:
    """The arguments that build one slice's pipeline: its shard and, on a GPU, its device_id."""
    kwargs = {"shard_id": shard_id, "num_shards": num_shards}
    gpu = gpu_id(device)
    if gpu is not None and takes_argument(factory, "device_id"):
        kwargs["device_id"] = gpu
    return kwargs
