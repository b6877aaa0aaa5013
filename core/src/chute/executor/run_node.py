"""One operator node over one batch: the step the graph executor and eager mode share.

:func:`run_node` runs a node on the batch's values, by the node's kind and device:
a per-sample CPU operator on the worker pool (:func:`run_sample` per sample), a
batch CPU operator through ``run_batch``, a GPU or mixed operator through
``run_gpu`` on a stream. :func:`read_source` takes a source's next batch.

The graph executor (compute.py) calls them for its batch and GPU steps, for
random draws it takes for the whole batch, and calls :func:`run_sample` inside
its CPU segments, which run several nodes sample-major in one pass over the
pool; eager mode (chute.debug) calls them node by node as the pipeline function
runs. Same code, same contexts, hence the same random streams and results.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from chute.executor.batched import batched_values, supports_batched
from chute.graph.node import OpNode
from chute.runtime.context import BatchArgs, BatchContext, SampleContext
from chute.runtime.dense import SlotContext
from chute.runtime.errors import OperatorError, SampleError
from chute.runtime.operator import ArgView
from chute.runtime.workers import WorkerPool

__all__ = [
    "BatchWhere",
    "as_list",
    "check_batch_size",
    "read_source",
    "run_node",
    "run_sample",
    "unfused_kind",
    "with_layout",
]


@dataclass(frozen=True)
class BatchWhere:
    """Where a batch stands and what runs it: the inputs of every node's contexts.

    ``seed`` is the pipeline's (a node's own ``seed`` argument wins); ``meta`` the
    reader's per-sample dicts; ``gpu`` the GPUContext and ``stream`` the CUDA stream
    that GPU nodes queue their work on.
    """

    seed: int
    epoch: int
    iteration: int
    meta: list[dict]
    pool: WorkerPool
    gpu: Any = None
    stream: Any = None
    on_error: str = "raise"


def run_node(
    node: OpNode,
    inputs: list[Any],
    arg_inputs: dict[str, Any],
    size: int,
    state: Any,
    where: BatchWhere,
    kind: str,
) -> list[Any]:
    """Run ``node`` over a batch of ``size`` samples; one value (a batch) per output.

    ``kind`` is the plan's step kind for the node: "segment" (per sample on the
    pool), "batch" (``run_batch``; fusion may make a per-sample operator run batch-wise,
    as the CPU decoders do) or "gpu". ``inputs`` and ``arg_inputs`` are the producers'
    values: sample lists or TensorLists. Failures raise :class:`OperatorError` naming
    the node (and the sample and file for per-sample operators).
    """
    seed = node.args.get("seed", where.seed)
    if kind == "segment":
        if supports_batched(node):
            return [batched_values(node, seed, where.epoch, where.iteration, where.meta[:size])]
        ins = [as_list(v) for v in inputs]
        arg_ins = {k: as_list(v) for k, v in arg_inputs.items()}
        outs: list[list[Any]] = [[None] * size for _ in node.outputs]
        maskable = node.schema.maskable

        def work(i: int) -> None:
            run_sample(
                node,
                ins,
                arg_ins,
                outs,
                seed,
                state,
                maskable,
                where.epoch,
                where.iteration,
                i,
                where.meta[i],
            )

        failures = where.pool.run(work, size)
        if failures:
            i, exc = failures[0]
            if isinstance(exc, OperatorError):
                raise exc
            info = where.meta[i].get("source_info")
            raise OperatorError(node, i, where.iteration, exc, info) from exc
        return outs
    columns = {k: as_list(v) for k, v in arg_inputs.items()}
    args = BatchArgs(node, columns, size)
    gpu = where.gpu if kind == "gpu" else None
    ctx = BatchContext(
        node,
        seed,
        where.epoch,
        where.iteration,
        state,
        where.meta,
        where.pool,
        stream=where.stream,
        device_id=where.gpu.device_id if where.gpu is not None else None,
        on_error=node.args.get("on_error") or where.on_error,
    )
    try:
        if gpu is not None:
            with gpu.activate(where.stream):
                result = node.op.run_gpu(inputs, args, ctx)
        else:
            result = node.op.run_batch(inputs, args, ctx)
    except OperatorError:
        raise
    except Exception as exc:
        raise OperatorError(node, None, where.iteration, exc) from exc
    return [result] if len(node.outputs) == 1 else list(result)


def unfused_kind(node: OpNode) -> str:
    """The step kind of a node that no fusion pass has seen (eager mode runs nodes so)."""
    if node.device in ("gpu", "mixed"):
        return "gpu"
    return "segment" if node.op.kind == "sample" else "batch"


def run_sample(
    node: OpNode,
    ins: list[list[Any]],
    arg_ins: dict[str, list[Any]],
    outs: list[list[Any]],
    seed: int,
    state: Any,
    maskable: bool,
    epoch: int,
    iteration: int,
    i: int,
    meta: dict,
    slots: Any = None,
) -> None:
    """Run a per-sample node on sample ``i`` and store its outputs in ``outs[k][i]``."""
    args = ArgView(node.schema, node.args, {k: v[i] for k, v in arg_ins.items()})
    inputs = tuple(v[i] for v in ins)
    if maskable and not args["mask"]:
        result: Any = inputs[0]
    else:
        where = (node, seed, epoch, iteration, i, state, meta)
        ctx = SampleContext(*where) if slots is None else SlotContext(*where, slots=slots)
        result = node.op.run_sample(inputs, args, ctx)
    if len(outs) == 1:
        outs[0][i] = result
    else:
        for o, r in zip(outs, result):
            o[i] = r


def read_source(
    node: OpNode, source: Any, batch_size: int, epoch: int, iteration: int, gpu: Any = None
) -> tuple[list[Any], list[dict] | None]:
    """A source's next batch: (one value per output, per-sample meta or None).

    StopIteration passes through (the epoch ended); other failures raise
    :class:`OperatorError` naming the node. GPU sources' outputs become TensorListGPU.
    """
    try:
        outputs, meta = source.next_batch(batch_size, epoch, iteration)
    except (StopIteration, OperatorError):
        raise
    except SampleError as exc:
        raise OperatorError(node, exc.sample, iteration, exc.cause, exc.source_info) from exc.cause
    except Exception as exc:
        raise OperatorError(node, None, iteration, exc) from exc
    if node.device == "gpu":
        from chute.tensors.gpu import TensorListGPU

        outputs = [TensorListGPU(o, "", gpu.stream, gpu.device_id) for o in outputs]
    return list(outputs), meta


def check_batch_size(node: OpNode, n: int, known: int | None, iteration: int) -> None:
    """All sources of an iteration give batches of one size."""
    if known is not None and n != known:
        raise OperatorError(
            node,
            None,
            iteration,
            ValueError(f"produced a batch of {n} samples while another source produced {known}"),
        )


def with_layout(value: Any, layout: str | None) -> Any:
    """A device batch with the plan's build-time ``layout`` where it came without one.

    GPU sources, host-to-GPU copies and some GPU backends give their TensorListGPU no
    layout; the plan's spec (the operator's ``infer``) says what it is, as it does for
    CPU outputs. A batch that has a layout, a plain list of samples, or samples whose
    rank does not match ``layout`` are returned as they are. The batch is not changed
    in place (another reader may hold it): a shallow copy shares its storage.
    """
    if not layout or isinstance(value, list) or not callable(getattr(value, "layout", None)):
        return value
    if value.layout() or not hasattr(value, "_layout"):
        return value
    shape = getattr(value, "shape", None)
    if callable(shape) and len(value) and len(shape()[0]) != len(layout):
        return value
    out = copy.copy(value)
    out._layout = layout
    return out


def as_list(value: Any) -> list[Any]:
    """A batch value as a list of samples (TensorLists are split)."""
    if isinstance(value, list):
        return value
    return [value.at(i) for i in range(len(value))]
