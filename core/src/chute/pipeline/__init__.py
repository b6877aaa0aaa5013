"""Pipeline and @pipeline_def: define a graph of operators, build it, run it batch by batch."""

from __future__ import annotations

import os
import warnings
import weakref
from typing import Any

from chute.executor import Executor, build_plan
from chute.graph import trace
from chute.graph.node import DataNode, OpNode
from chute.graph.trace import Graph
from chute.graph.undefined import fail_if_undefined
from chute.pipeline.checks import check_outputs, decode_checkpoint, per_output
from chute.pipeline.inputs import PipelineInputs
from chute.pipeline.options import DEFAULTS, check_options
from chute.pipeline.serialize import SerializedForm
from chute.pipeline.state import PipelineState, check_state
from chute.pipeline.views import PipelineViews
from chute.types import bind_constant_node

__all__ = ["Pipeline", "do_not_convert", "pipeline_def"]

# Constructor arguments that @pipeline_def functions accept at call time.
PIPELINE_ARGS = tuple(DEFAULTS)


class Pipeline(PipelineState, PipelineInputs, PipelineViews, SerializedForm):
    """A graph of operators that produces one batch per output on each ``run()``.

    Define the graph with ``@pipeline_def``, inside ``with pipe:`` followed by
    ``pipe.set_outputs(...)``, or (legacy) by overriding ``define_graph()``.
    Every argument of DALI 2.4's ``Pipeline`` is accepted; ``None`` for any of
    them means its default. What each does in chute:

    - ``batch_size`` (required, >= 1), ``num_threads`` (-1: one per CPU),
      ``seed`` (-1 or None: random): as in DALI.
    - ``device_id``: the GPU; None or negative runs on the CPU only.
    - ``exec_pipelined`` and ``exec_async``: with both True (the default) reader and
      compute threads work ahead of the user; with either False ``run()`` computes
      the batch in the calling thread (no background threads).
    - ``prefetch_queue_depth``: int or ``{"cpu_size": x, "gpu_size": y}``; the depth of
      the queues between the stages (chute has one compute stage: the larger size).
    - ``set_affinity``: the CPU worker threads pin themselves to the CPUs this
      process may use (``os.sched_getaffinity``, or ``DALI_AFFINITY_MASK``), round
      robin (Linux).
    - ``default_cuda_stream_priority``: the priority of the CUDA streams the
      pipeline creates (lower is more urgent, as in CUDA).
    - ``enable_memory_stats``: ``executor_statistics()`` adds DALI's memory keys
      (``real_memory_size``, ``max_real_memory_size``, ``reserved_memory_size``,
      ``max_reserved_memory_size``).
    - ``enable_checkpointing`` / ``checkpoint``: ``checkpoint()`` returns a string;
      ``Pipeline(checkpoint=...)`` continues after the batch it was taken at.
    - ``output_dtype`` / ``output_ndim``: a value (for every output) or a list with
      None as a wildcard; checked at build (and after a run where the type is
      known only then), the error naming the output.
    - ``py_num_workers``, ``py_start_method``, ``py_callback_pickler``: the worker
      processes of ``external_source(parallel=True)`` / ``python_function``.
    - Accepted and checked, without effect in chute: ``bytes_per_sample`` (memory
      comes from a pool sized by use), ``max_streams`` (one stream per compute
      lane), ``exec_dynamic`` / ``experimental_exec_dynamic`` (chute's executor
      always sizes batches as they come).
    - chute's own: ``on_error``, ``max_error_ratio``, ``max_error_entries`` (how many
      skip reports ``errors()`` keeps, the latest; see docs/errors.md) and
      ``device_fallback``: on a machine without a usable GPU, operators asked to run
      on ``"gpu"`` / ``"mixed"`` and ``.gpu()`` copies run on the CPU, with one
      warning naming them (default on; ``False`` or env ``CHUTE_DEVICE_FALLBACK=0``
      turns it off).
    """

    def __init__(
        self,
        batch_size: int = -1,
        num_threads: int = -1,
        device_id: int | None = None,
        seed: int | None = None,
        exec_pipelined: bool = True,
        prefetch_queue_depth: int | dict[str, int] = 2,
        exec_async: bool = True,
        bytes_per_sample: int = 0,
        set_affinity: bool = False,
        max_streams: int = -1,
        default_cuda_stream_priority: int = 0,
        *,
        enable_memory_stats: bool = False,
        enable_checkpointing: bool = False,
        checkpoint: str | None = None,
        py_num_workers: int = 1,
        py_start_method: str = "fork",
        py_callback_pickler: Any = None,
        output_dtype: Any = None,
        output_ndim: int | list[int | None] | None = None,
        exec_dynamic: bool = False,
        experimental_exec_dynamic: bool = False,
        on_error: str = "raise",
        max_error_ratio: float = 1.0,
        max_error_entries: int = 1000,
        device_fallback: bool | None = None,
        **unknown: Any,
    ):
        given = {k: v for k, v in locals().items() if k in DEFAULTS}
        given.update(unknown)  # check_options names a misspelled one and its closest match
        opts = check_options(given)
        self._options = opts
        self._batch_size = opts["batch_size"]
        threads = opts["num_threads"]
        self._num_threads = threads if threads > 0 else (os.cpu_count() or 1)
        self._device_id = opts["device_id"]
        seed = opts["seed"]
        self._seed = seed if seed is not None and seed >= 0 else _random_seed()
        self._exec_pipelined = opts["exec_pipelined"]
        self._exec_async = opts["exec_async"]
        queues = opts["prefetch_queue_depth"]
        self._prefetch_queue_depth = max(queues["cpu_size"], queues["gpu_size"])
        self._queue_sizes = dict(queues)
        self.enable_memory_stats = opts["enable_memory_stats"]
        self.enable_checkpointing = opts["enable_checkpointing"]
        self.py_num_workers = opts["py_num_workers"]
        self.py_start_method = opts["py_start_method"]
        self.py_callback_pickler = opts["py_callback_pickler"]
        self.on_error = opts["on_error"]
        self.max_error_ratio = opts["max_error_ratio"]
        self.max_error_entries = opts["max_error_entries"]
        self._checkpoint_text = opts["checkpoint"]
        self._restored = False
        self._iterator_data: Any = None
        self._graph = Graph()
        self._outputs: list[DataNode] | None = None
        self._executor: Executor | None = None
        self._built = False
        self._closed = False
        self._epoch = 0
        self._iteration = 0
        self._scheduled = 0
        self._late_checks: list[int] = []
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

    @property
    def set_affinity(self) -> bool:
        return self._options["set_affinity"]

    @property
    def default_cuda_stream_priority(self) -> int:
        return self._options["default_cuda_stream_priority"]

    @property
    def exec_dynamic(self) -> bool:
        return self._options["exec_dynamic"] or self._options["experimental_exec_dynamic"]

    @property
    def max_streams(self) -> int:
        return self._options["max_streams"]

    @property
    def cpu_queue_size(self) -> int:
        return self._queue_sizes["cpu_size"]

    @property
    def gpu_queue_size(self) -> int:
        return self._queue_sizes["gpu_size"]

    @property
    def exec_separated(self) -> bool:
        """True when the CPU and GPU queue sizes differ (DALI's separated queues)."""
        return self._queue_sizes["cpu_size"] != self._queue_sizes["gpu_size"]

    @property
    def device_fallback(self) -> bool:
        return self._options["device_fallback"]

    @property
    def is_restored_from_checkpoint(self) -> bool:
        """True when the pipeline was built from ``Pipeline(checkpoint=...)``."""
        return self._restored

    @property
    def iterator_data(self) -> Any:
        """What ``checkpoint(iterator_data=...)`` stored, after a restore (else None)."""
        return self._iterator_data

    @staticmethod
    def current() -> Pipeline | None:
        """The pipeline being defined in this thread (``with pipe:``, a @pipeline_def call), or None."""
        try:
            return trace.current_pipeline()
        except RuntimeError:
            return None

    @staticmethod
    def push_current(pipeline: Pipeline) -> None:
        """Make ``pipeline`` the current one (DALI's low-level form of ``with pipe:``)."""
        trace.push(pipeline)

    @staticmethod
    def pop_current() -> None:
        """Undo :meth:`push_current`."""
        trace.pop()

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
            fail_if_undefined(out)  # a variable that a conditional left undefined
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
        """Check, type and plan the graph and start the executor (idempotent; run() calls it)."""
        if self._built:
            return
        if self._closed:
            raise RuntimeError("the pipeline is closed")
        if self._outputs is None:
            with self:
                outputs = self.define_graph()
            self.set_outputs(*_as_tuple(outputs))
        preserved = [n for n in self._graph.nodes if n.args.get("preserve")]
        outputs = list(self._outputs)
        if self.device_fallback and any(n.device != "cpu" for n in self._graph.nodes):
            outputs, preserved = self._fall_back_to_cpu(outputs, preserved)
        plan = build_plan(outputs, preserved)
        if plan.uses_gpu and self._device_id is None:
            gpu_ops = sorted({n.schema.display_name for n in plan.nodes if n.device != "cpu"})
            raise ValueError(
                f"the pipeline uses GPU operators ({', '.join(gpu_ops)}) but device_id is None; "
                "pass device_id=0 (or another GPU) to the pipeline"
            )
        self._check_declared_outputs(plan)
        self._plan = plan
        state = None
        if self._checkpoint_text is not None:
            state, self._iterator_data = decode_checkpoint(self._checkpoint_text)
            check_state(state, self._batch_size)
            # the random streams continue as they were (DALI restores its generators)
            self._seed = state.get("seed", self._seed)
        self._executor = Executor(plan, self)
        self._finalizer = weakref.finalize(self, Executor.close, self._executor)
        self._built = True
        if state is not None:
            self.load_state_dict(state)
            self._restored = True

    def _fall_back_to_cpu(
        self, outputs: list[DataNode], preserved: list[OpNode]
    ) -> tuple[list[DataNode], list[OpNode]]:
        """The graph on the CPU backends when no GPU is usable (see chute.pipeline.fallback)."""
        from chute.gpu.runtime import gpu_available

        if gpu_available():
            return outputs, preserved
        from chute.pipeline.fallback import cpu_graph

        outputs, nodes, moved = cpu_graph(self._graph.nodes, outputs)
        if moved:
            warnings.warn(
                f"no GPU is available: running on the CPU instead {', '.join(moved)} "
                "(Pipeline(device_fallback=False) or CHUTE_DEVICE_FALLBACK=0 turns this off)",
                RuntimeWarning,
                stacklevel=3,
            )
        return outputs, [nodes.get(n.id, n) for n in preserved]

    def _check_declared_outputs(self, plan: Any) -> None:
        """output_dtype / output_ndim against the build-time specs; the rest after each run."""
        n = len(plan.outputs)
        self._want_dtype = per_output(self._options["output_dtype"], n, "output_dtype")
        self._want_ndim = per_output(self._options["output_ndim"], n, "output_ndim")
        specs = [plan.spec(o) for o in plan.outputs]
        names = [o.name for o in plan.outputs]
        check_outputs(
            names,
            [s.dtype for s in specs],
            [s.ndim for s in specs],
            self._want_dtype,
            self._want_ndim,
            "at build",
        )
        self._late_checks = [
            k
            for k, s in enumerate(specs)
            if (self._want_dtype[k] is not None and s.dtype is None)
            or (self._want_ndim[k] is not None and s.ndim is None)
        ]

    def run(self, cuda_stream: Any = None, /, **pipeline_inputs: Any) -> tuple[Any, ...]:
        """Run one iteration: one batch per output. Raises StopIteration at an epoch's end.

        Builds the pipeline first if needed. Equal to ``schedule_run()`` then ``outputs()``.
        ``pipeline_inputs`` feed external sources by name, as in DALI 2.x:
        ``pipe.run(my_inp=batch)`` is ``pipe.feed_input("my_inp", batch)`` and a run (every
        name is checked before anything is fed). Unlike DALI, chute needs neither
        ``prefetch_queue_depth=1`` nor ``exec_pipelined=False`` for it: the batch of each
        run is the one fed before it. ``cuda_stream`` is accepted for DALI; the batches
        returned are ready to use (GPU batches order their consumers through DLPack).
        """
        if pipeline_inputs:
            self._feed_named_inputs(pipeline_inputs)
        self.schedule_run()
        return self.outputs()

    def schedule_run(self) -> None:
        """Ask for the next iteration (calls ``iter_setup()``); ``outputs()`` returns it."""
        if not self._built:
            self.build()
        if self._closed:
            raise RuntimeError("the pipeline is closed")
        self.iter_setup()
        self._scheduled += 1

    def outputs(self, cuda_stream: Any = None) -> tuple[Any, ...]:
        """The batches of the iteration scheduled first by ``schedule_run()`` (one per output)."""
        if self._closed:
            raise RuntimeError("the pipeline is closed")
        if self._scheduled == 0:
            raise RuntimeError(
                "Pipeline.outputs(): no iteration is scheduled; call schedule_run() first "
                "(or run(), which does both)"
            )
        self._scheduled -= 1
        outputs = tuple(self._executor.run())
        self._iteration += 1
        if self._late_checks:
            k_list = self._late_checks
            check_outputs(
                [self._plan.outputs[k].name for k in k_list],
                [outputs[k].dtype for k in k_list],
                [_sample_ndim(outputs[k]) for k in k_list],
                [self._want_dtype[k] for k in k_list],
                [self._want_ndim[k] for k in k_list],
                "after run()",
            )
        return outputs

    def share_outputs(self, cuda_stream: Any = None) -> tuple[Any, ...]:
        """As ``outputs()``: chute's batches are never written again, so sharing costs no copy."""
        return self.outputs()

    def empty(self) -> bool:
        """True when no iteration is scheduled and not yet taken by ``outputs()`` (DALI)."""
        return self._scheduled == 0

    def start_py_workers(self) -> None:
        """Accepted for DALI: chute starts the Python worker processes when it builds."""

    def release_outputs(self) -> None:
        """Accepted for DALI compatibility: a batch returns to the pool when it is dropped."""

    def reset(self) -> None:
        """Start the next epoch of the sources (after StopIteration, or to cut one short)."""
        if self._built:
            self._executor.reset()
        self._epoch += 1
        self._iteration = 0
        self._scheduled = 0

    def close(self) -> None:
        """Stop worker threads and close files; the pipeline cannot run afterwards."""
        if self._finalizer is not None:
            self._finalizer()
        from chute.ops.parallel import close_worker_processes

        close_worker_processes(self)  # python_function(parallel=True) processes
        self._closed = True


def _random_seed() -> int:
    return int.from_bytes(os.urandom(6), "little")


def _sample_ndim(batch: Any) -> int | None:
    ndim = getattr(batch, "ndim", None)
    if isinstance(ndim, int):
        return ndim
    shapes = batch.shape() if callable(getattr(batch, "shape", None)) else None
    return len(shapes[0]) if shapes else None


def _as_tuple(outputs: Any) -> tuple:
    if isinstance(outputs, (list, tuple)):
        return tuple(outputs)
    return (outputs,)


def _constant_node(array: Any, layout: str | None, device: str | None) -> DataNode:
    """types.Constant of an array: every sample is ``array`` (an ``fn.constant`` node, as in
    DALI, so that a serialized pipeline holds the values)."""
    from chute.ops.tensors.constant_ops import Constant

    if Pipeline.current() is None:
        raise RuntimeError(
            "types.Constant of an array (or with shape, layout or device) makes a pipeline "
            "node: call it inside a @pipeline_def function or a `with pipe:` block"
        )
    if array.dtype.kind not in "biuf":
        raise TypeError(f"types.Constant: a constant of {array.dtype} data cannot be a node")
    values = array.reshape(-1).tolist()
    data = {"fdata": values} if array.dtype.kind == "f" else {"idata": values}
    return Constant(device="gpu" if device == "gpu" else "cpu")(
        **data, shape=list(array.shape), dtype=array.dtype, layout=layout or None
    )


bind_constant_node(_constant_node)

from chute.pipeline.autograph import do_not_convert  # noqa: E402
from chute.pipeline.decorator import pipeline_def  # noqa: E402  (it creates Pipelines)
