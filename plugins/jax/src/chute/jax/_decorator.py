"""``@chute.jax.data_iterator`` (DALI's decorator): a pipeline function becomes an iterator factory."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import jax
from chute.jax._dali import DALIGenericIterator, DALIGenericPeekableIterator
from chute.jax._iterator import batch_slices, gpu_id, shard_info
from chute.pipeline import PIPELINE_ARGS, pipeline_def
from chute.types import LastBatchPolicy

if TYPE_CHECKING:  # typing.Unpack from Python 3.11; annotations are not evaluated
    from typing_extensions import Unpack

    from chute.pipeline.options import PipelineArguments


def data_iterator(
    pipeline_fn: Callable | None = None,
    output_map: Sequence[str] = (),
    size: int = -1,
    reader_name: str | None = None,
    auto_reset: bool | str = False,
    last_batch_padded: bool = False,
    last_batch_policy: LastBatchPolicy | str = LastBatchPolicy.FILL,
    prepare_first_batch: bool = True,
    sharding: jax.sharding.Sharding | None = None,
    pad_ragged: bool = False,
    **decorator_kwargs: Unpack[PipelineArguments],
) -> Callable:
    """Turn a pipeline definition function into a function that returns a :class:`DALIGenericIterator`.

    DALI's decorator. It takes the iterator's arguments and, as
    ``decorator_kwargs``, pipeline arguments (``batch_size``, ``num_threads``,
    ``seed``, ...); the returned function takes the remaining pipeline
    arguments and the definition function's own (an argument given both to
    the decorator and to the call is a ValueError, as in DALI). ``batch_size`` is the global batch: with
    ``sharding`` it is split evenly over the slices of the batch on all devices of
    all processes, and this process builds one pipeline per slice it holds, on
    that slice's device (``device_id`` = its GPU). If the definition function
    has ``shard_id`` / ``num_shards`` parameters, they receive each pipeline's
    shard: its slice's index among all slices of all processes with
    ``sharding``, else the process index and count (:func:`shard_info`)::

        @data_iterator(output_map=["images", "labels"], reader_name="reader", sharding=sharding)
        def iterator_fn(shard_id, num_shards):
            jpegs, labels = fn.readers.file(file_root=root, name="reader",
                                            shard_id=shard_id, num_shards=num_shards)
            return fn.decoders.image(jpegs), labels

        iterator = iterator_fn(batch_size=64, num_threads=4, seed=0)
    """

    return _decorator(
        DALIGenericIterator,
        pipeline_fn,
        decorator_kwargs,
        output_map=output_map,
        size=size,
        reader_name=reader_name,
        auto_reset=auto_reset,
        last_batch_padded=last_batch_padded,
        last_batch_policy=last_batch_policy,
        prepare_first_batch=prepare_first_batch,
        sharding=sharding,
        pad_ragged=pad_ragged,
    )


def peekable_data_iterator(
    pipeline_fn: Callable | None = None,
    output_map: Sequence[str] = (),
    size: int = -1,
    reader_name: str | None = None,
    auto_reset: bool | str = False,
    last_batch_padded: bool = False,
    last_batch_policy: LastBatchPolicy | str = LastBatchPolicy.FILL,
    prepare_first_batch: bool = True,
    sharding: jax.sharding.Sharding | None = None,
    pad_ragged: bool = False,
    **decorator_kwargs: Unpack[PipelineArguments],
) -> Callable:
    """DALI's ``clu.peekable_data_iterator``: :func:`data_iterator` making a peekable iterator.

    The returned function makes a :class:`DALIGenericPeekableIterator`
    (``peek()``, ``peek_async()``, ``element_spec``); the arguments are
    :func:`data_iterator`'s.
    """
    return _decorator(
        DALIGenericPeekableIterator,
        pipeline_fn,
        decorator_kwargs,
        output_map=output_map,
        size=size,
        reader_name=reader_name,
        auto_reset=auto_reset,
        last_batch_padded=last_batch_padded,
        last_batch_policy=last_batch_policy,
        prepare_first_batch=prepare_first_batch,
        sharding=sharding,
        pad_ragged=pad_ragged,
    )


def _decorator(
    iterator_type: type[DALIGenericIterator],
    pipeline_fn: Callable | None,
    decorator_kwargs: Mapping[str, Any],
    sharding: jax.sharding.Sharding | None,
    **iterator_kwargs: Any,
) -> Callable:
    def decorate(func: Callable) -> Callable:
        params = inspect.signature(func).parameters

        @functools.wraps(func)
        def create(*args: Any, **call_kwargs: Any) -> DALIGenericIterator:
            twice = sorted(set(decorator_kwargs) & set(call_kwargs))
            if twice:
                raise ValueError(
                    f"data_iterator: {', '.join(twice)} given both to the decorator and to the call"
                )
            kwargs = {**decorator_kwargs, **call_kwargs}
            pipe_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in PIPELINE_ARGS}
            batch_size = int(pipe_kwargs.pop("batch_size", 0))
            if batch_size < 1:
                raise ValueError("data_iterator: pass batch_size=... (the global batch size)")
            if sharding is None:
                shards = [(shard_info(), {})]
                per_device = batch_size
            else:
                if "device_id" in pipe_kwargs:
                    raise ValueError(
                        "data_iterator: with sharding, each pipeline's device_id is its "
                        "device's; do not pass device_id"
                    )
                slices = batch_slices(sharding)
                if batch_size % slices.count:
                    raise ValueError(
                        f"data_iterator: batch_size {batch_size} (the global batch) does not "
                        f"split evenly over the sharding's {slices.count} batch slices"
                    )
                per_device = batch_size // slices.count
                shards = []
                for index, devices in slices.local:
                    gpu = gpu_id(devices[0])  # decode on the device that holds the slice
                    shards.append(
                        ((index, slices.count), {} if gpu is None else {"device_id": gpu})
                    )
            pipes = []
            for (shard_id, num_shards), device in shards:
                fn_kwargs = dict(kwargs)
                if "shard_id" in params:
                    fn_kwargs["shard_id"] = shard_id
                if "num_shards" in params:
                    fn_kwargs["num_shards"] = num_shards
                make = pipeline_def(func, batch_size=per_device, **pipe_kwargs, **device)
                pipes.append(make(*args, **fn_kwargs))
            return iterator_type(pipes, sharding=sharding, **iterator_kwargs)

        return create

    return decorate(pipeline_fn) if pipeline_fn is not None else decorate
