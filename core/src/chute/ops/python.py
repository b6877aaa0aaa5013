"""fn.python_function: run a Python callable on each sample or on the whole batch."""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import NO_HINTS, NodeHints
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.runtime.errors import OperatorError
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register


@register
class PythonFunction(Operator):
    """Calls ``function`` on the inputs of each sample (or, with ``batch_processing``, of the batch).

    Per-sample calls run on the pipeline's worker threads, so the function
    must be thread-safe; NumPy and OpenCV code releases the GIL and runs in
    parallel. Pure-Python code that holds the GIL runs in parallel with
    ``parallel=True``: in the pipeline's ``py_num_workers`` processes
    (``py_start_method``; under "spawn" the function must be picklable, e.g.
    defined at module level). With ``device="gpu"`` the function gets and
    returns CuPy arrays, called on the pipeline's CUDA stream. With
    ``num_outputs`` > 1 the function returns a tuple. The function must not
    modify its inputs in place: they may be shared with other operators.
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
                "parallel",
                "bool",
                False,
                "Run in the pipeline's py_num_workers processes instead of threads "
                "(for code that holds the GIL).",
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
        devices=("cpu", "gpu"),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        if not callable(args.get("function")):
            raise TypeError("fn.python_function: argument 'function' must be callable")
        if args.get("num_outputs", 1) < 0:
            raise ValueError("fn.python_function: argument 'num_outputs' must be >= 0")

        if args.get("parallel") and arg_inputs:
            raise TypeError("fn.python_function: parallel=True takes no per-sample arguments")

    @property
    def kind(self) -> str:  # type: ignore[override]
        default = self.schema.arg("batch_processing").default
        batch = self.init_args.get("batch_processing", default) or self.init_args.get("parallel")
        return "batch" if batch else "sample"

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        for key in ("batch_processing", "parallel"):
            if key in kwargs:
                self.init_args = {**self.init_args, key: kwargs[key]}
        return super().__call__(*inputs, **kwargs)

    def setup(self, node: OpNode, hints: NodeHints = NO_HINTS, pipeline: Any = None) -> Any:
        if node.arg("parallel") and node.device == "cpu":
            from chute.ops.parallel import pool_for_node

            return pool_for_node(node, node.arg("function"), pipeline)
        return None

    def num_outputs(self, args: dict[str, Any], num_inputs: int = 0) -> int:
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

    def call(self, function: Any, inputs: Any, args: Any, gpu: bool) -> Any:
        """Call the user's function on ``inputs`` (samples, or lists of them per input).

        dl_tensor_python_function overrides it to hand over and take back DLPack capsules.
        """
        return function(*inputs)

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> Any:
        result = self.call(args["function"], inputs, args, gpu=False)
        return self._check_outputs(ctx.node, result, f"sample {ctx.idx_in_batch}")

    def run_batch(self, inputs: list[list[Any]], args: Any, ctx: Any) -> Any:
        batches = [x if isinstance(x, list) else [x.at(i) for i in range(len(x))] for x in inputs]
        n = len(ctx.node.outputs)
        if ctx.state is not None:  # parallel=True: the process pool
            return self._run_in_processes(batches, args, ctx)
        result = self.call(args["function"], batches, args, gpu=False)
        return self._check_batch(result, batches, n)

    def _run_in_processes(self, batches: list[list[Any]], args: Any, ctx: Any) -> Any:
        from chute.ops.parallel import WorkerError

        n = len(ctx.node.outputs)
        try:
            if args["batch_processing"]:
                outs = ctx.state.call_batch(batches, n)
                return self._check_batch(outs[0] if n == 1 else outs, batches, n)
            size = len(batches[0]) if batches else len(ctx.meta)
            per_sample = ctx.state.map_samples(
                [tuple(b[i] for b in batches) for i in range(size)], n
            )
        except WorkerError as exc:
            info = ctx.meta[exc.index].get("source_info") if exc.index is not None else None
            raise OperatorError(ctx.node, exc.index, ctx.iteration, exc, info) from exc
        if n == 1:
            return [s[0] for s in per_sample]
        return tuple([s[k] for s in per_sample] for k in range(n))

    def run_gpu(self, inputs: list[Any], args: Any, ctx: Any) -> Any:
        """device="gpu": the function gets CuPy arrays on the pipeline's stream."""
        from chute.gpu.runtime import cupy_module
        from chute.tensors.gpu import TensorListGPU

        cp = cupy_module()
        batches = [x.samples() if hasattr(x, "samples") else list(x) for x in inputs]
        n = len(ctx.node.outputs)
        size = len(batches[0]) if batches else len(ctx.meta)
        function = args["function"]
        if args["batch_processing"]:
            result = self.call(function, batches, args, gpu=True)
            outs = [result] if n == 1 else list(result)
        else:
            results = [
                self.call(function, tuple(b[i] for b in batches), args, gpu=True)
                for i in range(size)
            ]
            if n != 1:
                for i, r in enumerate(results):
                    if not isinstance(r, (tuple, list)) or len(r) != n:
                        raise ValueError(
                            f"the function must return {n} outputs (num_outputs={n}) for "
                            f"sample {i}, got {type(r).__name__}"
                        )
            outs = [results] if n == 1 else [[r[k] for r in results] for k in range(n)]
        layouts = ctx.node.arg("output_layouts")
        layouts = list(layouts) if isinstance(layouts, (list, tuple)) else [layouts] * n
        lists = []
        for k, out in enumerate(outs):
            samples = [cp.asarray(s) for s in out]
            if len(samples) != size:
                raise ValueError(f"output {k} has {len(samples)} samples for a batch of {size}")
            lists.append(TensorListGPU(samples, layouts[k] or "", ctx.stream, ctx.device_id))
        return lists[0] if n == 1 else tuple(lists)

    def _check_batch(self, result: Any, batches: list[list[Any]], n: int) -> Any:
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
