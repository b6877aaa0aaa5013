"""The Operator base class and ArgView, the arguments of one sample.

An operator is a class with a :class:`~chute.graph.Schema`. Its instances are
the legacy ``ops.X(...)`` objects: the constructor takes arguments, calling
the instance on DataNodes traces one node into the pipeline being defined.
``fn.x`` is generated from the class (chute.surface.make_fn): a function with
the real signature. ``@register`` (chute.runtime.registry) makes a class public.

Run-time hooks, by ``kind``:

- ``"sample"``: :meth:`Operator.run_sample` processes one sample; the CPU
  stage calls it from worker threads, sample-major.
- ``"batch"``: :meth:`Operator.run_batch` gets the whole batch at once.
- ``"source"``: :meth:`Operator.open` returns a source that yields batches
  (readers, external_source) in the reader stage.

GPU backends implement :meth:`Operator.run_gpu` (whole batch, one stream).

The executor decides by traits, class attributes every operator may set, never by
operator names: ``kind`` (above), ``lane_safe``, ``cpu_batch_wise``, ``decodes``, and
the methods :meth:`Operator.fusion_hints` (what the fusion pass gives a node, see
chute.graph.passes) and :meth:`Operator.draws_batch` / :meth:`Operator.draw_batch`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from chute.graph.node import DataNode, OpNode
from chute.graph.passes.hints import NO_HINTS, FusionPlan, Hint, NodeHints
from chute.graph.schema import COMMON_ARGS, REQUIRED, Schema
from chute.graph.spec import Spec
from chute.graph.trace import current_pipeline
from chute.graph.undefined import fail_if_undefined
from chute.types import Constant, ScalarConstant

__all__ = ["ArgView", "Operator", "Spec"]


class Operator:
    """Base class of every operator (see the module docstring)."""

    schema: ClassVar[Schema]
    kind: ClassVar[str] = "sample"
    # May run for two batches at once (executor/lanes.py): no state between batches,
    # every GPU launch on the context's stream. A per-sample CPU operator is safe by
    # its contract wherever it runs batch-wise (cpu_batch_wise).
    lane_safe: ClassVar[bool] = False
    # A per-sample operator whose CPU backend runs a batch at a time (run_batch, chunks
    # of samples on the worker threads): the plan gives it a batch step of its own.
    cpu_batch_wise: ClassVar[bool] = False
    # Turns encoded bytes into samples: a "mixed" decoder makes a GPU plan worth
    # several compute lanes (its decoding waits on engines outside the GIL).
    decodes: ClassVar[bool] = False

    def __init__(self, *, device: str | None = None, **kwargs: Any) -> None:
        # None means "not given" (DALI); a ScalarConstant stands for its value
        kwargs = {k: _unwrap(v) for k, v in kwargs.items() if v is not None}
        self.schema.check_arg_names(list(kwargs))
        self.device = device
        self.init_args = kwargs

    # ---- tracing -------------------------------------------------------------------------
    def __call__(self, *inputs: Any, **kwargs: Any) -> DataNode | list[DataNode]:
        schema = self.schema
        try:
            pipe = current_pipeline()
        except RuntimeError:
            raise RuntimeError(
                f"{schema.display_name} was called outside a pipeline: operators can be used "
                "only while a Pipeline is being defined (inside a @pipeline_def function, "
                "a `with pipe:` block or a Pipeline's define_graph())"
            ) from None
        kwargs = {k: _unwrap(v) for k, v in kwargs.items() if v is not None}
        twice = sorted(
            k for k in set(kwargs) & set(self.init_args) if kwargs[k] is not self.init_args[k]
        )
        if twice:  # ops API: an argument belongs to __init__ or __call__, not both (DALI)
            raise ValueError(
                f"{schema.display_name}: the argument `{twice[0]}` was already specified in "
                "__init__"
            )
        given = {**self.init_args, **kwargs}
        schema.check_arg_names(list(given))
        inputs = tuple(self.convert_input(i, x) for i, x in enumerate(inputs))
        schema.check_num_inputs(len(inputs))
        device = given.pop("device", None) or self.device or self.default_device(inputs)
        if device not in schema.devices:
            raise ValueError(
                f"{schema.display_name} has no {device!r} backend; available: "
                f"{', '.join(schema.devices)}"
            )
        for i, x in enumerate(inputs):
            if x.device == "gpu" and device == "cpu":
                raise ValueError(
                    f"{schema.display_name}: input {i} is on the GPU but the operator runs on "
                    f"the CPU; call .cpu() on the input or use device='gpu'"
                )
        name = given.pop("name", None)
        args: dict[str, Any] = {}
        arg_inputs: dict[str, DataNode] = {}
        for key, value in given.items():
            fail_if_undefined(value)
            if key in COMMON_ARGS and key not in schema.arg_index:
                if key == "seed" and value is not None:
                    args[key] = int(value)
                elif key == "on_error" and value is not None:
                    args[key] = str(getattr(value, "value", value))
                continue
            spec = schema.arg(key)
            if isinstance(value, DataNode):
                if not spec.per_sample:
                    raise TypeError(
                        f"{schema.display_name}: argument '{key}' must be a constant, "
                        "not a per-sample DataNode"
                    )
                if value.device != "cpu":
                    value = value.cpu()
                arg_inputs[key] = value
            else:
                args[key] = spec.convert(schema.display_name, value)
        for spec in schema.args:
            if spec.default is REQUIRED and spec.name not in args and spec.name not in arg_inputs:
                raise TypeError(f"{schema.display_name}: argument '{spec.name}' is required")
        self.check_args(args, arg_inputs)
        out_device = self.output_device(device)
        node = pipe._graph.add(
            self,
            device,
            list(inputs),
            args,
            arg_inputs,
            name,
            self.num_outputs(args, len(inputs)),
            out_device,
        )
        return node.outputs[0] if len(node.outputs) == 1 else list(node.outputs)

    def convert_input(self, index: int, x: Any) -> DataNode:
        """Input ``index`` as a DataNode: a constant (a number, a list, a NumPy array, a
        ``types.Constant``) becomes a constant node, as in DALI (``fn.filter(x, kernel)``)."""
        if isinstance(x, DataNode):
            return x
        fail_if_undefined(x)  # a variable that a conditional left undefined
        try:
            if isinstance(x, ScalarConstant):
                return Constant(x.value, x.dtype, device="cpu")
            return Constant(x, device="cpu")
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"{self.schema.display_name}: input {index} must be a DataNode (an operator's "
                f"output) or a constant (a number, a list or a NumPy array of numbers), got "
                f"{type(x).__name__} ({exc})"
            ) from None

    def default_device(self, inputs: Sequence[DataNode]) -> str:
        if any(x.device == "gpu" for x in inputs) and "gpu" in self.schema.devices:
            return "gpu"
        return "cpu" if "cpu" in self.schema.devices else self.schema.devices[0]

    def output_device(self, device: str) -> str:
        """Where the outputs live when the operator runs on ``device``."""
        return "cpu" if device == "cpu" else "gpu"

    def base_name(self, args: Mapping[str, Any]) -> str:
        """The stem of the node's default name."""
        return self.schema.name.rsplit(".", 1)[-1]

    def num_outputs(self, args: Mapping[str, Any], num_inputs: int = 0) -> int:
        """How many outputs a node with these constant ``args`` and ``num_inputs`` inputs has.

        The schema's ``num_outputs`` unless an operator's outputs depend on its arguments
        (readers' optional outputs) or on its optional inputs (random_bbox_crop's labels).
        """
        return self.schema.num_outputs

    def check_args(self, args: dict[str, Any], arg_inputs: dict[str, DataNode]) -> None:
        """Cross-argument checks at trace time; raise naming the operator and argument."""

    # ---- build time ----------------------------------------------------------------------
    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        """Output specs from input specs; the default passes input 0 through."""
        first = inputs[0] if inputs else Spec()
        return [first] * len(node.outputs)

    def setup(self, node: OpNode, hints: NodeHints = NO_HINTS, pipeline: Any = None) -> Any:
        """Per-node state prepared at build time, handed back as ``ctx.state``.

        ``hints`` are what the fusion pass gave the node (see :meth:`fusion_hints`);
        ``pipeline`` is the pipeline being built (None in debug mode).
        """
        return None

    def fusion_hints(
        self, node: OpNode, consumers: list[list[OpNode] | None], decided: FusionPlan
    ) -> tuple[Hint, ...]:
        """The fusion hints of ``node``, from who reads its outputs: ``consumers[k]`` for
        output k, None where the pipeline returns it (the user sees it as it is).

        ``decided`` holds the hints of the readers (the pass asks readers first). The
        hints come back to the operator in :meth:`setup` (or :meth:`open`): the CPU image
        decoders decode at a reduced DCT scale when their only reader is a resize to a
        fixed size (ScaledDecode); readers.file reads in helper processes when only GPU
        decoders use the bytes (ReadInProcesses). See chute.graph.passes.hints.
        """
        return ()

    def draws_batch(self, node: OpNode) -> bool:
        """True when :meth:`draw_batch` computes this node for a whole batch at once
        (random sources with constant arguments: one stream call instead of a generator
        per sample), inside a CPU segment."""
        return False

    def draw_batch(
        self, node: OpNode, seed: int, epoch: int, iteration: int, meta: list
    ) -> list[Any]:
        """Output 0 of every sample at once, equal to what :meth:`run_sample` gives."""
        raise NotImplementedError(f"{self.schema.display_name} draws no whole batch")

    # ---- run time ------------------------------------------------------------------------
    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> Any:
        raise NotImplementedError(f"{self.schema.display_name} has no per-sample CPU backend")

    def run_batch(self, inputs: list[list[Any]], args: Any, ctx: Any) -> Any:
        raise NotImplementedError(f"{self.schema.display_name} has no batch CPU backend")

    def run_gpu(self, inputs: list[Any], args: Any, ctx: Any) -> Any:
        raise NotImplementedError(f"{self.schema.display_name} has no GPU backend")

    def open(self, node: OpNode, pipeline: Any, hints: NodeHints = NO_HINTS) -> Any:
        """The running source of a ``"source"`` node (``hints``: see :meth:`setup`)."""
        raise NotImplementedError(f"{self.schema.display_name} is not a source")


def _unwrap(value: Any) -> Any:
    """types.ScalarConstant -> its value (typed where it has a dtype); anything else as is."""
    if isinstance(value, ScalarConstant):
        return value.value if value.dtype is None else value.dtype.type(value.value)
    return value


class ArgView(Mapping):
    """The arguments of one sample: per-sample values over constants over defaults."""

    __slots__ = ("_const", "_sample", "_schema")

    def __init__(self, schema: Schema, const: Mapping[str, Any], sample: Mapping[str, Any]):
        self._schema = schema
        self._const = const
        self._sample = sample

    def __getitem__(self, name: str) -> Any:
        if name in self._sample:
            return self._schema.arg(name).convert(self._schema.display_name, self._sample[name])
        if name in self._const:
            return self._const[name]
        arg = self._schema.arg_index.get(name)
        if arg is None:
            raise KeyError(name)
        return arg.default

    def raw(self, name: str) -> Any:
        """A per-sample value as the producer gave it (an array), without conversion."""
        return self._sample[name] if name in self._sample else self[name]

    def given(self, name: str) -> bool:
        return name in self._sample or name in self._const

    def __iter__(self):
        yield from self._schema.arg_index

    def __len__(self) -> int:
        return len(self._schema.arg_index)
