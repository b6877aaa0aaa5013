"""fn.external_source: batches from Python — a callable, an iterable, or feed_input."""

from __future__ import annotations

import collections
import inspect
import threading
from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import NO_HINTS, NodeHints
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.runtime.errors import SampleError
from chute.runtime.operator import Operator
from chute.runtime.registry import register
from chute.types import BatchInfo, SampleInfo, to_dtype


@register
class ExternalSource(Operator):
    """Feeds data from Python into the pipeline.

    ``source`` may be a callable (called per batch, or per sample with a
    :class:`~chute.types.SampleInfo` when ``batch=False``), an iterable, or a
    generator function; without ``source``, feed batches with
    ``Pipeline.feed_input(name, data)``. ``StopIteration`` from the source ends
    the epoch cleanly; ``Pipeline.reset()`` starts the next one (iterables are
    iterated anew, generator functions called again). With ``num_outputs``,
    each batch (or sample) is a tuple with one entry per output.
    """

    kind = "source"
    feedable = True
    schema = Schema(
        name="external_source",
        args=(
            Arg(
                "source", "any", None, "Callable, iterable or generator function.", per_sample=False
            ),
            Arg(
                "num_outputs",
                "int",
                None,
                "Number of outputs (the source yields tuples).",
                per_sample=False,
            ),
            Arg(
                "batch",
                "bool",
                True,
                "The source gives whole batches (True) or samples (False).",
                per_sample=False,
            ),
            Arg(
                "batch_info",
                "bool",
                False,
                "Pass a BatchInfo instead of the iteration number.",
                per_sample=False,
            ),
            Arg(
                "cycle",
                "any",
                "no",
                "At the end: 'no' (end the epoch), 'quiet' (restart silently), 'raise' (end the epoch, restart on reset).",
                per_sample=False,
            ),
            Arg(
                "layout",
                "any",
                None,
                "Layout of the data (one per output with num_outputs).",
                per_sample=False,
            ),
            Arg(
                "dtype",
                "any",
                None,
                "Expected data type; other types are an error.",
                per_sample=False,
            ),
            Arg("ndim", "int", None, "Expected number of dimensions per sample.", per_sample=False),
            Arg(
                "no_copy",
                "bool",
                False,
                "Use the source's memory without copying (the source must not reuse it).",
                per_sample=False,
            ),
            Arg(
                "parallel",
                "bool",
                False,
                "Run a callable source in the pipeline's py_num_workers processes "
                "(py_start_method), a batch ahead, results through shared memory.",
                per_sample=False,
            ),
            Arg(
                "prefetch_queue_depth",
                "int",
                1,
                "Accepted for DALI compatibility.",
                per_sample=False,
            ),
            Arg("blocking", "bool", True, "Accepted for DALI compatibility.", per_sample=False),
            Arg("cuda_stream", "any", None, "Accepted for DALI compatibility.", per_sample=False),
            Arg(
                "use_copy_kernel",
                "bool",
                False,
                "Accepted for DALI compatibility.",
                per_sample=False,
            ),
        ),
        devices=("cpu", "gpu"),
    )

    def num_outputs(self, args: dict[str, Any], num_inputs: int = 0) -> int:
        return args.get("num_outputs") or 1

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        cycle = args.get("cycle", "no")
        if cycle is True:
            args["cycle"] = "quiet"
        elif cycle is False or cycle is None:
            args["cycle"] = "no"
        elif cycle not in ("no", "quiet", "raise"):
            raise ValueError(
                f"fn.external_source: argument 'cycle' got {cycle!r}; accepted values: 'no', 'quiet', 'raise'"
            )
        source = args.get("source")
        if source is not None and not (callable(source) or hasattr(source, "__iter__")):
            raise TypeError(
                "fn.external_source: argument 'source' must be a callable, an iterable or a "
                f"generator function, got {type(source).__name__}"
            )
        if args.get("dtype") is not None:
            dtypes = args["dtype"] if isinstance(args["dtype"], (list, tuple)) else [args["dtype"]]
            args["dtype"] = [to_dtype(d) for d in dtypes]

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        n = len(node.outputs)
        layouts = _per_output(node.arg("layout"), n)
        dtypes = _per_output(node.arg("dtype"), n)
        ndim = node.arg("ndim")
        specs = []
        for lay, dt in zip(layouts, dtypes):
            nd = ndim if ndim is not None else (len(lay) if lay else None)
            specs.append(Spec(dt, nd, lay))
        return specs

    def open(
        self, node: OpNode, pipeline: Any, hints: NodeHints = NO_HINTS
    ) -> ExternalSourceReader:
        if node.arg("parallel"):
            from chute.ops.parallel import ParallelExternalSourceReader

            return ParallelExternalSourceReader(node, pipeline)
        return ExternalSourceReader(node)


def _per_output(value: Any, n: int) -> list[Any]:
    """One value per output: a list of n, or one value (alone or in a list) for all of them."""
    if isinstance(value, (list, tuple)) and len(value) == 1:
        return [value[0]] * n
    if isinstance(value, (list, tuple)) and n > 1:
        if len(value) != n:
            raise ValueError(f"expected {n} values (one per output), got {len(value)}")
        return list(value)
    return [value] * n


class Interrupted(Exception):
    """The pipeline is stopping while the reader waits for feed_input."""


class ExternalSourceReader:
    """The running state of one external_source node."""

    def __init__(self, node: OpNode):
        self.node = node
        self.label = node.label
        self.num_outputs = len(node.outputs)
        self.source = node.arg("source")
        self.batch = node.arg("batch")
        self.batch_info = node.arg("batch_info")
        self.cycle = node.arg("cycle")
        self.copy = not node.arg("no_copy")
        self.dtypes = _per_output(node.arg("dtype"), self.num_outputs)
        self.ndim = node.arg("ndim")
        self.device = node.device
        # A layout fixes the dimensions as ndim does ("HWC": 3), as infer() told the graph.
        self._seen_ndim: list[int | None] = [
            self.ndim if self.ndim is not None else (len(lay) if lay else None)
            for lay in _per_output(node.arg("layout"), self.num_outputs)
        ]
        self._seen_dtype: list[Any] = list(self.dtypes)
        self._feed: collections.deque = collections.deque()
        self._fed = threading.Condition()
        self._interrupted = False
        self.epoch = 0
        self.iteration = 0
        self.idx_in_epoch = 0
        self._iterator: Any = None
        self._mode = self._classify()

    def _classify(self) -> str:
        src = self.source
        if src is None:
            return "feed"
        if inspect.isgeneratorfunction(src):
            return "genfunc"
        if callable(src) and not hasattr(src, "__iter__"):
            return "callable"
        return "iterable"

    # ---- feed_input --------------------------------------------------------------------------
    def feed(self, data: Any, layout: str | None) -> None:
        if self._mode != "feed":
            raise TypeError(f"feed_input: {self.label} already has a source")
        with self._fed:
            self._feed.append(data)
            self._fed.notify_all()

    def pending(self) -> int:
        """Batches fed and not consumed yet."""
        with self._fed:
            return len(self._feed)

    # ---- source protocol -----------------------------------------------------------------------
    def next_batch(self, batch_size: int, epoch: int, iteration: int):
        raw = self._next_raw(batch_size)
        outputs = self._split_outputs(raw)
        outputs = [self._check(i, o) for i, o in enumerate(outputs)]
        n = len(outputs[0])
        for o in outputs[1:]:
            if len(o) != n:
                raise ValueError(
                    f"{self.label}: outputs have different batch sizes ({n} and {len(o)})"
                )
        if n > batch_size:
            raise ValueError(
                f"{self.label}: the source gave {n} samples, more than batch_size={batch_size}"
            )
        meta = [{"idx_in_epoch": self.idx_in_epoch + i} for i in range(n)]
        self.idx_in_epoch += n
        self.iteration += 1
        return outputs, meta

    def _next_raw(self, batch_size: int) -> Any:
        if self._mode == "feed":
            with self._fed:
                while not self._feed:
                    if self._interrupted:
                        raise Interrupted
                    self._fed.wait(0.05)
                return self._feed.popleft()
        if self._mode == "callable":
            if self.batch:
                if self._accepts_argument():
                    arg = (
                        BatchInfo(self.iteration, self.epoch) if self.batch_info else self.iteration
                    )
                    return self._call_cycling(lambda: self.source(arg))
                return self._call_cycling(self.source)
            samples = []
            for i in range(batch_size):
                info = SampleInfo(self.idx_in_epoch + i, i, self.iteration, self.epoch)
                try:
                    samples.append(self.source(info))
                except StopIteration:
                    if i == 0:
                        raise
                    break
                except Exception as exc:  # name the sample, as the parallel source does
                    raise SampleError(i, exc, f"idx_in_epoch {info.idx_in_epoch}") from exc
            return samples
        # iterables and generator functions
        if self._iterator is None:
            self._iterator = iter(self.source() if self._mode == "genfunc" else self.source)
        if self.batch:
            return self._next_item()
        samples = []
        for i in range(batch_size):
            try:
                samples.append(self._next_item(restart=False))
            except StopIteration:
                if i == 0:
                    return self._next_item()
                break
        return samples

    def _accepts_argument(self) -> bool:
        try:
            params = inspect.signature(self.source).parameters.values()
        except (TypeError, ValueError):
            return False
        positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
        return any(p.kind in positional and p.default is p.empty for p in params)

    def _call_cycling(self, call: Any) -> Any:
        try:
            return call()
        except StopIteration:
            if self.cycle == "quiet":
                self.iteration = 0
                return call()
            raise

    def _next_item(self, restart: bool = True) -> Any:
        try:
            return next(self._iterator)
        except StopIteration:
            if self.cycle != "quiet" or not restart:
                raise
            self._iterator = iter(self.source() if self._mode == "genfunc" else self.source)
            return next(self._iterator)

    def _split_outputs(self, raw: Any) -> list[Any]:
        if self.num_outputs == 1:
            return [raw]
        if self.batch:
            if not isinstance(raw, (tuple, list)) or len(raw) != self.num_outputs:
                raise ValueError(
                    f"{self.label}: with num_outputs={self.num_outputs} the source must return a "
                    f"tuple of {self.num_outputs} batches, got {type(raw).__name__}"
                )
            return list(raw)
        for i, sample in enumerate(raw):
            if not isinstance(sample, (tuple, list)) or len(sample) != self.num_outputs:
                raise ValueError(
                    f"{self.label}: with num_outputs={self.num_outputs} each sample must be a tuple "
                    f"of {self.num_outputs} arrays; sample {i} is {type(sample).__name__}"
                )
        return [[s[k] for s in raw] for k in range(self.num_outputs)]

    def _check(self, out: int, batch: Any) -> list[Any]:
        samples = _to_samples(batch, self.copy, self.device)
        for i, s in enumerate(samples):
            want = self._seen_dtype[out]
            if want is not None and s.dtype != want:
                raise TypeError(
                    f"{self.label}: output {out}, sample {i} has dtype {s.dtype}, expected {want}"
                    + (
                        " (the dtype argument)"
                        if self.dtypes[out] is not None
                        else " (as earlier batches)"
                    )
                )
            self._seen_dtype[out] = s.dtype
            nd = self._seen_ndim[out]
            if nd is not None and s.ndim != nd:
                raise ValueError(
                    f"{self.label}: output {out}, sample {i} has {s.ndim} dimensions "
                    f"(shape {tuple(s.shape)}), expected {nd} (the ndim or layout argument, "
                    "or earlier batches)"
                )
            self._seen_ndim[out] = s.ndim
        return samples

    def interrupt(self, on: bool) -> None:
        """Make a reader thread waiting for feed_input give up (on) or wait again (off)."""
        with self._fed:
            self._interrupted = on
            self._fed.notify_all()

    def reset(self) -> None:
        self.epoch += 1
        self.iteration = 0
        self.idx_in_epoch = 0
        self._iterator = None

    def state(self) -> dict[str, Any]:
        return {"epoch": self.epoch, "iteration": self.iteration, "idx_in_epoch": self.idx_in_epoch}

    def restore(self, state: dict[str, Any]) -> None:
        if self._mode not in ("callable", "feed"):
            raise ValueError(
                f"{self.label}: an iterable source cannot be restored to a position; "
                "use a callable source (per-sample callables are indexed by SampleInfo)"
            )
        self.epoch = state["epoch"]
        self.iteration = state["iteration"]
        self.idx_in_epoch = state["idx_in_epoch"]


def _to_samples(batch: Any, copy: bool, device: str) -> list[Any]:
    """A batch from the user as a list of host arrays (one per sample)."""
    if device == "gpu" or _is_device_array(batch):
        from chute.gpu.batches import to_device_samples

        return to_device_samples(batch)
    if hasattr(batch, "as_cpu") and hasattr(batch, "at"):
        batch = [batch.at(i) for i in range(len(batch))]
    if isinstance(batch, (list, tuple)):
        return [_sample_array(s, copy) for s in batch]
    arr = _sample_array(batch, copy)
    if arr.ndim == 0:
        raise ValueError(
            "a batch must be a list of samples or an array with a leading batch dimension"
        )
    return list(arr)


def _sample_array(x: Any, copy: bool) -> np.ndarray:
    if isinstance(x, np.ndarray):
        return np.array(x) if copy else x
    if isinstance(x, (str, bytes)):
        return np.array(x)
    if hasattr(x, "__dlpack__") and not hasattr(x, "__array__"):
        return np.from_dlpack(x)
    if hasattr(x, "numpy") and callable(x.numpy):  # framework tensors on the CPU
        return np.array(x.numpy(), copy=True)
    return np.array(x)


def _is_device_array(x: Any) -> bool:
    probe = x[0] if isinstance(x, (list, tuple)) and x else x
    return hasattr(probe, "__cuda_array_interface__")
