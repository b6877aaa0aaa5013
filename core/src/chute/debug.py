"""Debug mode: ``@pipeline_def(debug=True)`` runs the pipeline function eagerly.

Each ``fn.*`` call (and each arithmetic expression) inside the function runs
at once on the current iteration's data and returns a :class:`DebugDataNode`:
a DataNode that also holds its batch, so it can be printed, indexed with
``at(i)``, turned into NumPy (``as_array()``, ``np.asarray``) and passed on to
further ``fn.*`` calls. ``run()`` calls the function once per iteration.

Results equal the traced pipeline's, batch for batch: every call adds a node
to a fresh graph in trace order, so node ids, names and therefore the
counter-based random streams are those of the traced graph; sources (readers,
external_source) are opened once, keyed by node id, and keep their position
across ``run()`` calls; each node runs through the graph executor's own
:func:`chute.executor.run_node.run_node` (sources through ``read_source``), so
eager and graph mode share one code path per node.

Differences: ``on_error="skip"/"warn"`` replacement, checkpoints
(``state_dict``) and ``chute.Iterator`` are not supported in debug mode; the
per-sample meta an operator sees is that of the most recent source called in
the iteration (the traced pipeline reads all sources first), so call sources
before the operators that depend on reader keys, as pipelines usually do.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np

from chute.executor.run_node import (
    BatchWhere,
    check_batch_size,
    read_source,
    run_node,
    unfused_kind,
)
from chute.graph import trace
from chute.graph.node import DataNode, OpNode
from chute.graph.spec import Spec
from chute.graph.trace import Graph
from chute.pipeline import Pipeline
from chute.runtime.workers import WorkerPool
from chute.tensors.cpu import TensorListCPU

__all__ = ["DebugDataNode", "DebugPipeline"]


class DebugDataNode(DataNode):
    """An operator output in debug mode: a DataNode that holds the current iteration's batch.

    TensorList methods (``len``, ``at``, ``as_array``, ``as_cpu``, ``layout``,
    ``dtype``, iteration, ``np.asarray``) read the batch. Arithmetic, ``[...]``
    subscripts and ``shape()`` stay operators, as in a traced pipeline, and
    run at once.
    """

    def __init__(self, producer: OpNode, index: int, device: str):
        super().__init__(producer, index, device)
        self.value: Any = None
        self.spec = Spec()
        self.meta: list[dict] | None = None

    @property
    def batch(self) -> Any:
        """The batch as a TensorListCPU (or TensorListGPU for GPU outputs)."""
        if isinstance(self.value, list):
            return TensorListCPU(self.value, self.spec.layout or "", meta=self.meta)
        return self.value

    def __len__(self) -> int:
        return len(self.value)

    def at(self, i: int) -> Any:
        """Sample ``i`` of the batch."""
        return self.batch.at(i)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.batch)

    def as_array(self) -> Any:
        """The whole (dense) batch as one array."""
        return self.batch.as_array()

    as_tensor = as_array

    def as_cpu(self) -> TensorListCPU:
        """The batch in host memory."""
        return self.batch.as_cpu()

    def is_dense_tensor(self) -> bool:
        return self.batch.is_dense_tensor()

    def layout(self) -> str:
        return self.batch.layout()

    @property
    def dtype(self) -> np.dtype:
        return self.batch.dtype

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        arr = np.asarray(self.as_cpu().as_array())
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def __repr__(self) -> str:
        return f"DebugDataNode(name={self.name!r}, device={self.device!r}, batch={self.batch!r})"


class DebugGraph(Graph):
    """A graph that runs each node as soon as it is added."""

    data_node_type = DebugDataNode

    def __init__(self, pipeline: DebugPipeline):
        super().__init__()
        self._pipeline = weakref.proxy(pipeline)

    def add(self, op, device, inputs, args, arg_inputs, name, num_outputs, output_device) -> OpNode:
        node = super().add(op, device, inputs, args, arg_inputs, name, num_outputs, output_device)
        self._pipeline._execute(node)
        return node


class _Iteration:
    """What one ``run()`` has seen so far: batch size and reader meta."""

    def __init__(self, epoch: int, iteration: int):
        self.epoch = epoch
        self.iteration = iteration
        self.size: int | None = None
        self.meta: list[dict] | None = None


class DebugPipeline(Pipeline):
    """A pipeline that calls its function on every ``run()``, running operators eagerly."""

    def __init__(self, func: Callable, args: tuple, kwargs: dict[str, Any], **pipeline_kwargs: Any):
        super().__init__(**pipeline_kwargs)
        self._func = func
        self._func_args = args
        self._func_kwargs = kwargs
        self._sources: dict[int, Any] = {}
        self._source_nodes: dict[int, OpNode] = {}
        self._node_state: dict[int, Any] = {}
        self._pending_feeds: dict[str, list[Any]] = {}
        self._pool: WorkerPool | None = None
        self._gpu: Any = None
        self._exec_epoch = 0
        self._exec_iteration = 0
        self._ended = False
        self._current: _Iteration | None = None
        self._graph = DebugGraph(self)

    # ---- building and running ------------------------------------------------------------
    def build(self) -> None:
        """Prepare the worker pool (sources open on first use)."""
        if self._built:
            return
        if self._closed:
            raise RuntimeError("the pipeline is closed")
        self._pool = WorkerPool(self.num_threads)
        self._finalizer = weakref.finalize(self, _close, self._pool, self._sources)
        self._built = True

    def run(self, cuda_stream: Any = None, /, **pipeline_inputs: Any) -> tuple[Any, ...]:
        """Call the pipeline function once, eagerly; one batch per output.

        ``pipeline_inputs`` are fed to the external sources of those names first.
        """
        if not self._built:
            self.build()
        for name, data in pipeline_inputs.items():
            self.feed_input(name, data)
        if self._closed:
            raise RuntimeError("the pipeline is closed")
        if self._ended:
            raise StopIteration
        self._current = _Iteration(self._exec_epoch, self._exec_iteration)
        self._graph = DebugGraph(self)
        trace.push(self)
        try:
            outputs = self._func(*self._func_args, **self._func_kwargs)
        except StopIteration:
            self._ended = True
            raise
        finally:
            trace.pop()
            self._current = None
        outputs = outputs if isinstance(outputs, (list, tuple)) else (outputs,)
        result = []
        for i, out in enumerate(outputs):
            if not isinstance(out, DebugDataNode) or out.producer not in self._graph.nodes:
                raise TypeError(
                    f"pipeline output {i} is a {type(out).__name__}, not an operator's output "
                    "from this run"
                )
            result.append(out.batch)
        self._exec_iteration += 1
        self._iteration += 1
        return tuple(result)

    def serialize(self, define_graph: Any = None, filename: str | None = None) -> bytes:
        """Refused: a debug pipeline traces a new graph on every run, it has none to write."""
        raise TypeError(
            "Pipeline.serialize: a debug pipeline (debug=True) has no fixed graph to serialize"
        )

    def reset(self) -> None:
        """Start the next epoch of the sources."""
        for source in self._sources.values():
            source.reset()
        self._exec_epoch += 1
        self._exec_iteration = 0
        self._ended = False
        self._epoch += 1
        self._iteration = 0

    def feed_input(self, data_node: DataNode | str, data: Any, layout: str | None = None) -> None:
        """Give the next batch to an ``external_source`` (by name or by its debug node)."""
        name = data_node.producer.name if isinstance(data_node, DataNode) else data_node
        for node_id, node in self._source_nodes.items():
            if node.name == name:
                self._sources[node_id].feed(data, layout)
                return
        self._pending_feeds.setdefault(name, []).append((data, layout))

    def state_dict(self) -> dict[str, Any]:
        raise NotImplementedError("state_dict is not available in debug mode")

    def load_state_dict(self, state: dict[str, Any]) -> None:
        raise NotImplementedError("load_state_dict is not available in debug mode")

    def errors(self) -> list[dict[str, Any]]:
        return []

    def close(self) -> None:
        """Close the sources, the worker pool and worker processes."""
        if self._finalizer is not None:
            self._finalizer()
        from chute.ops.parallel import close_worker_processes

        close_worker_processes(self)
        self._closed = True

    def _reader(self, name: str | None) -> Any:
        self.build()
        if not self._sources:
            self._open_sources_by_tracing()
        readers = {
            node.name: self._sources[node_id]
            for node_id, node in self._source_nodes.items()
            if hasattr(self._sources[node_id], "meta")
        }
        if name is None:
            if len(readers) != 1:
                raise ValueError(f"name the reader; this pipeline has {sorted(readers) or 'none'}")
            return next(iter(readers.values()))
        if name not in readers:
            raise KeyError(
                f"no reader named {name!r}; readers: {', '.join(sorted(readers)) or 'none'}"
            )
        return readers[name]

    def _open_sources_by_tracing(self) -> None:
        """Trace the function once (nothing runs) to open the readers before the first run."""
        plain = Pipeline(
            batch_size=self.batch_size, num_threads=1, seed=self.seed, on_error=self.on_error
        )
        with plain:
            self._func(*self._func_args, **self._func_kwargs)
        for node in plain._graph.nodes:
            if node.op.kind == "source":
                self._open_source(node)

    # ---- running one operator --------------------------------------------------------------
    def _execute(self, node: OpNode) -> None:
        cur = self._current
        if cur is None:
            raise RuntimeError(
                "in debug mode operators run inside pipe.run(); call run() on the pipeline"
            )
        for d in [*node.inputs, *node.arg_inputs.values()]:
            if not isinstance(d, DebugDataNode) or d.producer not in self._graph.nodes:
                raise ValueError(
                    f"{node.label}: inputs must be outputs of operators from the same run() "
                    "in debug mode"
                )
        try:
            specs = node.op.infer(node, [d.spec for d in node.inputs])
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{node.label}: {exc}") from None
        if node.op.kind == "source":
            values = self._read(node, cur)
        else:
            values = run_node(
                node,
                [d.value for d in node.inputs],
                {k: d.value for k, d in node.arg_inputs.items()},
                self._batch_size_for(node, cur),
                self._state(node),
                self._where(node, cur),
                unfused_kind(node),
            )
        for out, spec, value in zip(node.outputs, specs, values):
            out.value, out.spec, out.meta = value, spec, cur.meta

    def _open_source(self, node: OpNode) -> Any:
        source = self._sources.get(node.id)
        if source is not None:
            known = self._source_nodes[node.id]
            if known.schema.name != node.schema.name or known.name != node.name:
                raise RuntimeError(
                    f"{node.label}: in an earlier run() this node was {known.label}; debug "
                    "mode needs the function to call the same operators in the same order"
                )
            return source
        source = node.op.open(node, self)
        self._sources[node.id] = source
        self._source_nodes[node.id] = node
        for data, layout in self._pending_feeds.pop(node.name, []):
            source.feed(data, layout)
        return source

    def _read(self, node: OpNode, cur: _Iteration) -> list[Any]:
        """A source's next batch, as the executor's reader stage takes it."""
        source = self._open_source(node)
        gpu = self._gpu_context() if node.device == "gpu" else None
        outputs, meta = read_source(node, source, self.batch_size, cur.epoch, cur.iteration, gpu)
        n = len(outputs[0]) if outputs else 0
        check_batch_size(node, n, cur.size, cur.iteration)
        cur.size = n
        if meta is not None:
            cur.meta = meta
        return outputs

    def _batch_size_for(self, node: OpNode, cur: _Iteration) -> int:
        for d in [*node.inputs, *node.arg_inputs.values()]:
            return len(d.value)
        return cur.size if cur.size is not None else self.batch_size

    def _state(self, node: OpNode) -> Any:
        if node.id not in self._node_state:
            self._node_state[node.id] = node.op.setup(node)
        return self._node_state[node.id]

    def _where(self, node: OpNode, cur: _Iteration) -> BatchWhere:
        n = self._batch_size_for(node, cur)
        meta = cur.meta if cur.meta is not None and len(cur.meta) == n else [{}] * n
        gpu = self._gpu_context() if node.device in ("gpu", "mixed") else None
        stream = gpu.stream if gpu is not None else None
        return BatchWhere(self.seed, cur.epoch, cur.iteration, meta, self._pool, gpu, stream)

    def _gpu_context(self) -> Any:
        if self._gpu is None:
            if self.device_id is None:
                raise ValueError(
                    "the pipeline uses GPU operators but device_id is None; pass device_id=0"
                )
            from chute.executor.gpu import GPUContext

            self._gpu = GPUContext(self.device_id)
        return self._gpu


def _close(pool: WorkerPool, sources: dict[int, Any]) -> None:
    for source in sources.values():
        close = getattr(source, "close", None)
        if close is not None:
            close()
    pool.close()
