"""Pipeline and @pipeline_def: define a graph of operators, build it, run it batch by batch."""

from __future__ import annotations

import functools
import inspect
import os
import weakref
from collections.abc import Callable
from typing import Any

from chute.executor import Executor, build_plan
from chute.graph import trace
from chute.graph.node import DataNode, OpNode
from chute.graph.spec import Spec
from chute.graph.trace import Graph
from chute.types import LastBatchPolicy

__all__ = ["Pipeline", "pipeline_def"]

# Constructor arguments that @pipeline_def functions accept at call time.
PIPELINE_ARGS = (
    "batch_size",
    "num_threads",
    "device_id",
    "seed",
    "exec_pipelined",
    "prefetch_queue_depth",
    "exec_async",
    "bytes_per_sample",
    "set_affinity",
    "max_streams",
    "default_cuda_stream_priority",
    "enable_memory_stats",
    "enable_checkpointing",
    "py_num_workers",
    "py_start_method",
    "on_error",
    "max_error_ratio",
)


class Pipeline:
    """A graph of operators that produces one batch per output on each ``run()``.

    Define the graph with ``@pipeline_def``, inside ``with pipe:`` followed by
    ``pipe.set_outputs(...)``, or (legacy) by overriding ``define_graph()``.
    ``device_id=None`` runs on the CPU only. ``seed=None`` draws a random seed.
    """

    def __init__(
        self,
        batch_size: int = -1,
        num_threads: int = -1,
        device_id: int | None = None,
        seed: int | None = None,
        exec_pipelined: bool = True,
        prefetch_queue_depth: int = 2,
        exec_async: bool = True,
        bytes_per_sample: int = 0,
        set_affinity: bool = False,
        max_streams: int = -1,
        default_cuda_stream_priority: int = 0,
        enable_memory_stats: bool = False,
        enable_checkpointing: bool = False,
        py_num_workers: int = 1,
        py_start_method: str = "fork",
        on_error: str = "raise",
        max_error_ratio: float = 1.0,
    ):
        if batch_size is None or int(batch_size) < 1:
            raise ValueError(f"Pipeline: batch_size must be a positive integer, got {batch_size!r}")
        if isinstance(prefetch_queue_depth, dict):
            prefetch_queue_depth = max(prefetch_queue_depth.values())
        if int(prefetch_queue_depth) < 1:
            raise ValueError(
                f"Pipeline: prefetch_queue_depth must be >= 1, got {prefetch_queue_depth}"
            )
        self._batch_size = int(batch_size)
        self._num_threads = (
            int(num_threads) if num_threads and num_threads > 0 else (os.cpu_count() or 1)
        )
        self._device_id = None if device_id is None or device_id < 0 else int(device_id)
        self._seed = (
            int(seed) if seed is not None and seed >= 0 else int.from_bytes(os.urandom(6), "little")
        )
        self._exec_pipelined = bool(exec_pipelined)
        self._prefetch_queue_depth = int(prefetch_queue_depth)
        self._exec_async = bool(exec_async)
        self.enable_memory_stats = enable_memory_stats
        self.py_num_workers = py_num_workers
        self.py_start_method = py_start_method
        self.on_error = getattr(on_error, "value", on_error)
        if self.on_error not in ("raise", "skip", "warn"):
            raise ValueError(
                f"Pipeline: on_error must be 'raise', 'skip' or 'warn', got {on_error!r}"
            )
        if not 0.0 <= max_error_ratio <= 1.0:
            raise ValueError(f"Pipeline: max_error_ratio must be in [0, 1], got {max_error_ratio}")
        self.max_error_ratio = max_error_ratio
        self._graph = Graph()
        self._outputs: list[DataNode] | None = None
        self._executor: Executor | None = None
        self._built = False
        self._closed = False
        self._epoch = 0
        self._iteration = 0
        self._finalizer: weakref.finalize | None = None

    # ---- properties ----------------------------------------------------------------------
    @property
    def batch_size(self) -> int:
        return self._batch_size

    max_batch_size = batch_size

    @property
    def num_threads(self) -> int:
        return self._num_threads

    @property
    def device_id(self) -> int | None:
        return self._device_id

    @property
    def seed(self) -> int:
        return self._seed

    @property
    def exec_pipelined(self) -> bool:
        return self._exec_pipelined

    @property
    def exec_async(self) -> bool:
        return self._exec_async

    @property
    def prefetch_queue_depth(self) -> int:
        return self._prefetch_queue_depth

    # ---- defining ------------------------------------------------------------------------
    def __enter__(self) -> Pipeline:
        """Define the graph in this block (DALI); on a built pipeline, close it at the end."""
        self._closing_stack = getattr(self, "_closing_stack", [])
        self._closing_stack.append(self._built)
        if not self._built:
            trace.push(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._closing_stack.pop():
            self.close()
        else:
            trace.pop()

    def set_outputs(self, *outputs: DataNode) -> None:
        """Declare the pipeline's outputs (DataNodes of this pipeline)."""
        for i, out in enumerate(outputs):
            if not isinstance(out, DataNode):
                raise TypeError(
                    f"Pipeline.set_outputs: output {i} is a {type(out).__name__}, not a DataNode"
                )
            if out.producer not in self._graph.nodes:
                raise ValueError(f"Pipeline.set_outputs: output {i} belongs to another pipeline")
        self._outputs = list(outputs)

    def define_graph(self) -> Any:
        """Override in a subclass (legacy API): wire ops and return the outputs."""
        raise NotImplementedError(
            "define the pipeline with @pipeline_def, with `with pipe: ... pipe.set_outputs(...)`, "
            "or by overriding define_graph()"
        )

    def iter_setup(self) -> None:
        """Called before every run(); legacy pipelines feed external sources here."""

    # ---- building and running ------------------------------------------------------------
    def build(self) -> None:
        """Check, type and plan the graph and start the executor (idempotent)."""
        if self._built:
            return
        if self._closed:
            raise RuntimeError("the pipeline is closed")
        if self._outputs is None:
            with self:
                outputs = self.define_graph()
            self.set_outputs(*_as_tuple(outputs))
        preserved = [n for n in self._graph.nodes if n.args.get("preserve")]
        plan = build_plan(self._outputs, preserved)
        if plan.uses_gpu and self._device_id is None:
            gpu_ops = sorted({n.schema.display_name for n in plan.nodes if n.device != "cpu"})
            raise ValueError(
                f"the pipeline uses GPU operators ({', '.join(gpu_ops)}) but device_id is None; "
                "pass device_id=0 (or another GPU) to the pipeline"
            )
        self._plan = plan
        self._executor = Executor(plan, self)
        self._finalizer = weakref.finalize(self, Executor.close, self._executor)
        self._built = True

    def run(self) -> tuple[Any, ...]:
        """Run one iteration: one batch per output. Raises StopIteration at an epoch's end."""
        if not self._built:
            self.build()
        if self._closed:
            raise RuntimeError("the pipeline is closed")
        self.iter_setup()
        outputs = self._executor.run()
        self._iteration += 1
        return tuple(outputs)

    def schedule_run(self) -> None:
        """Accepted for DALI compatibility; work is always scheduled ahead when pipelined."""
        self.build()

    def outputs(self) -> tuple[Any, ...]:
        """The next batch of every output (DALI's schedule_run/outputs pair)."""
        return self.run()

    share_outputs = outputs

    def release_outputs(self) -> None:
        """Accepted for DALI compatibility: batches are released when dropped."""

    def reset(self) -> None:
        """Start the next epoch of the sources (after StopIteration, or to cut one short)."""
        if self._built:
            self._executor.reset()
        self._epoch += 1
        self._iteration = 0

    def feed_input(self, data_node: DataNode | str, data: Any, layout: str | None = None) -> None:
        """Give the next batch to an ``external_source`` that has no ``source``."""
        node = self._find(data_node)
        if not getattr(node.op, "feedable", False):
            raise TypeError(f"feed_input: {node.label} is not an external_source")
        if not self._built:
            self.build()
        self._executor.sources[node.id].feed(data, layout)

    def _find(self, key: DataNode | str) -> OpNode:
        if isinstance(key, DataNode):
            return key.producer
        for node in self._graph.nodes:
            if node.name == key:
                return node
        names = [n.name for n in self._graph.nodes]
        raise KeyError(f"no operator named {key!r} in this pipeline; names: {', '.join(names)}")

    def errors(self) -> list[dict[str, Any]]:
        """Samples skipped under on_error="skip"/"warn": path, index, operator, reason, epoch."""
        return list(self._executor.errors) if self._built else []

    # ---- what iterators and plugins read (chute.iteration, chute.torch, ...) -----------
    def output_specs(self) -> tuple[Spec, ...]:
        """Build-time dtype, ndim and layout of each output, in order (None = known at run time)."""
        self.build()
        return tuple(self._plan.spec(node) for node in self._outputs)

    def last_batch_meta(self) -> list[dict[str, Any]]:
        """Per-sample metadata of the batch that ``run()`` returned last, one dict per sample.

        Readers fill ``source_info``, ``index``, ``epoch`` and ``real`` (False for
        samples that pad a shard's last batch); other sources may leave the dicts empty.
        """
        return list(self._executor.last_meta) if self._built else []

    def external_source_names(self) -> list[str]:
        """Names of the ``external_source`` operators that take ``feed_input()`` (no ``source``)."""
        if self._outputs is None:  # legacy define_graph(): trace it
            self.build()
        return [
            node.name
            for node in self._graph.nodes
            if getattr(node.op, "feedable", False) and node.arg("source") is None
        ]

    def set_last_batch_policy(self, reader_name: str, policy: LastBatchPolicy) -> None:
        """Lay out the epochs of reader ``reader_name`` for an iterator's last-batch policy.

        ``reader_meta(reader_name)["batches_per_epoch"]`` follows the policy; the
        reader keeps its position (batches read ahead are read again).
        """
        reader = self._reader(reader_name)
        plan = getattr(reader, "plan", None)
        if plan is None:
            raise ValueError(f"{reader_name!r} is not a reader with epochs")
        if plan.policy is policy:
            return
        ex = self._executor
        epoch, iteration = ex.last_position
        ex.restore(epoch, iteration, dict(ex.last_states))  # no work in flight while it changes
        reader.set_policy(policy)

    def seek_reader(self, reader_name: str, epoch: int) -> None:
        """Move reader ``reader_name`` to the start of ``epoch`` (an iterator's reset mid-epoch)."""
        self._reader(reader_name)  # builds; KeyError naming the readers if there is no such one
        ex = self._executor
        node = next(n for n in self._plan.sources if n.name == reader_name)
        states = dict(ex.last_states)
        states[node.id] = {"epoch": epoch, "batch_index": 0}
        pos_epoch, iteration = ex.last_position
        ex.restore(pos_epoch, iteration, states)

    # ---- seeing the pipeline: graph, statistics (chute.graph.dot, chute.executor.stats) --
    def graph(self, path: str | None = None, format: str = "dot") -> str:
        """The operator graph as DOT text; with ``path``, also write it (.dot, .png, .svg, .pdf)."""
        from chute.graph.dot import graph_dot, render_dot

        if self._outputs is None:  # legacy define_graph(): trace it
            self.build()
        dot = graph_dot(self._graph.nodes, self._outputs)
        if path is not None:
            render_dot(dot, os.fspath(path), None if format == "dot" else format)
        return dot

    def executor_statistics(self) -> dict[str, dict[str, Any]]:
        """Per operator name: fn, device, calls, samples, time and output bytes (DALI's keys)."""
        return self._executor.stats.snapshot() if self._built else {}

    def memory_stats(self) -> dict[str, Any]:
        """Bytes of the latest batch's outputs on the host and GPU, and CuPy's pool when loaded."""
        from chute.executor.stats import gpu_pool_bytes, memory_stats

        if not self._built:
            return {"host_output_bytes": 0, "gpu_output_bytes": 0, **(gpu_pool_bytes() or {})}
        return memory_stats(self._plan, self._executor.stats)

    # ---- state ---------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """The position after the last delivered batch: sources, epoch and iteration."""
        self.build()
        epoch, iteration = self._executor.last_position
        names = {n.id: n.name for n in self._plan.sources}
        return {
            "epoch": epoch,
            "iteration": iteration,
            "sources": {names[k]: v for k, v in self._executor.last_states.items()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue after the batch at which ``state_dict()`` was taken."""
        self.build()
        ids = {n.name: n.id for n in self._plan.sources}
        missing = set(state["sources"]) - set(ids)
        if missing:
            raise ValueError(
                f"load_state_dict: this pipeline has no sources named {sorted(missing)}"
            )
        states = {ids[k]: v for k, v in state["sources"].items()}
        self._executor.restore(state["epoch"], state["iteration"], states)

    def close(self) -> None:
        """Stop worker threads and close files; the pipeline cannot run afterwards."""
        if self._finalizer is not None:
            self._finalizer()
        from chute.ops.parallel import close_worker_processes

        close_worker_processes(self)  # python_function(parallel=True) processes
        self._closed = True

    # ---- reader information ----------------------------------------------------------------
    def _reader(self, name: str | None) -> Any:
        self.build()
        readers = {
            n.name: self._executor.sources[n.id]
            for n in self._plan.sources
            if hasattr(self._executor.sources[n.id], "meta")
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

    def reader_meta(self, name: str | None = None) -> dict[str, Any]:
        """DALI's reader metadata: epoch_size, epoch_size_padded, number_of_shards, shard_id, ..."""
        if name is None and self._built:
            try:
                return self._reader(None).meta()
            except ValueError:
                return {
                    n.name: self._executor.sources[n.id].meta()
                    for n in self._plan.sources
                    if hasattr(self._executor.sources[n.id], "meta")
                }
        return self._reader(name).meta()

    def epoch_size(self, name: str | None = None) -> int:
        """Samples in one epoch of the reader (all shards)."""
        return self._reader(name).meta()["epoch_size"]


def _as_tuple(outputs: Any) -> tuple:
    if isinstance(outputs, (list, tuple)):
        return tuple(outputs)
    return (outputs,)


def pipeline_def(fn: Callable | None = None, **pipeline_kwargs: Any) -> Callable:
    """Turn a function that wires operators into a factory of Pipelines.

    Pipeline arguments (batch_size, num_threads, device_id, seed, ...) may be
    given to the decorator and overridden when calling the factory; the other
    call arguments go to the function. ``debug=True`` gives a pipeline that
    runs the function eagerly on every ``run()`` (see :mod:`chute.debug`).
    """
    pipeline_kwargs.pop("enable_conditionals", None)
    debug_default = pipeline_kwargs.pop("debug", False)

    def decorate(func: Callable) -> Callable:
        sig = inspect.signature(func)

        @functools.wraps(func)
        def create(*args: Any, **kwargs: Any) -> Pipeline:
            debug = debug_default
            if "debug" in kwargs and "debug" not in sig.parameters:
                debug = kwargs.pop("debug")
            ctor = {k: kwargs.pop(k) for k in list(kwargs) if k in PIPELINE_ARGS}
            if debug:  # eager: operators run on each run(), see chute.debug
                from chute.debug import DebugPipeline

                return DebugPipeline(func, args, kwargs, **{**pipeline_kwargs, **ctor})
            pipe = Pipeline(**{**pipeline_kwargs, **ctor})
            with pipe:
                outputs = func(*args, **kwargs)
            pipe.set_outputs(*_as_tuple(outputs))
            return pipe

        create.__signature__ = sig  # type: ignore[attr-defined]
        return create

    return decorate(fn) if fn is not None else decorate
