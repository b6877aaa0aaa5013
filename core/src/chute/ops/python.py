"""fn.python_function: run a Python callable on each sample or on the whole batch."""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops._base import ArgView, Operator


class PythonFunction(Operator):
    """Calls ``function`` on the inputs of each sample (or, with ``batch_processing``, of the batch).

    Per-sample calls run on the pipeline's worker threads, so the function
    must be thread-safe; NumPy and OpenCV code releases the GIL and runs in
    parallel. With ``num_outputs`` > 1 the function returns a tuple.
    """

    schema = Schema(
        name="python_function",
        inputs=("inputs",),
        min_inputs=0,
        variadic=True,
        args=(
            Arg("function", "any", doc="The callable.", per_sample=False),
            Arg("num_outputs", "int", 1, "Number of outputs.", per_sample=False),
            Arg(
                "batch_processing",
                "bool",
                False,
                "Call once per batch with lists of samples.",
                per_sample=False,
            ),
            Arg("output_layouts", "any", None, "Layout of each output.", per_sample=False),
            Arg(
                "output_dtypes",
                "any",
                None,
                "Expected data type of each output (checked).",
                per_sample=False,
            ),
            Arg(
                "synchronize_stream",
                "bool",
                True,
                "Accepted for DALI compatibility.",
                per_sample=False,
            ),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        if not callable(args.get("function")):
            raise TypeError("fn.python_function: argument 'function' must be callable")
        if args.get("num_outputs", 1) < 0:
            raise ValueError("fn.python_function: argument 'num_outputs' must be >= 0")

    @property
    def kind(self) -> str:  # type: ignore[override]
        return "batch" if self.init_args.get("batch_processing") else "sample"

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        if "batch_processing" in kwargs:
            self.init_args = {**self.init_args, "batch_processing": kwargs["batch_processing"]}
        return super().__call__(*inputs, **kwargs)

    def num_outputs(self, args: dict[str, Any]) -> int:
        return args.get("num_outputs", 1)

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        n = len(node.outputs)
        layouts = node.arg("output_layouts")
        layouts = list(layouts) if isinstance(layouts, (list, tuple)) else [layouts] * n
        dtypes = node.arg("output_dtypes")
        dtypes = list(dtypes) if isinstance(dtypes, (list, tuple)) else [dtypes] * n
        return [
            Spec(np.dtype(d) if d is not None else None, len(lay) if lay else None, lay)
            for lay, d in zip(layouts, dtypes)
        ]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> Any:
        result = args["function"](*inputs)
        return self._check_outputs(ctx.node, result, f"sample {ctx.idx_in_batch}")

    def run_batch(self, inputs: list[list[Any]], args: Any, ctx: Any) -> Any:
        batches = [x if isinstance(x, list) else [x.at(i) for i in range(len(x))] for x in inputs]
        result = args["function"](*batches)
        n = len(ctx.node.outputs)
        outs = [result] if n == 1 else list(result)
        checked = []
        for k, out in enumerate(outs):
            samples = [np.asarray(s) for s in out]
            if batches and len(samples) != len(batches[0]):
                raise ValueError(
                    f"output {k} has {len(samples)} samples for a batch of {len(batches[0])}"
                )
            checked.append(samples)
        return checked[0] if n == 1 else checked

    def _check_outputs(self, node: OpNode, result: Any, where: str) -> Any:
        n = len(node.outputs)
        if n == 1:
            return np.asarray(result)
        if not isinstance(result, (tuple, list)) or len(result) != n:
            raise ValueError(
                f"the function must return {n} outputs (num_outputs={n}) for {where}, "
                f"got {type(result).__name__}"
            )
        return tuple(np.asarray(r) for r in result)
