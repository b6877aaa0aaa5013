"""torch_python_function: fn.python_function whose callable gets and returns torch tensors.

    from chute.torch import fn as torch_fn
    out = torch_fn.torch_python_function(images, function=lambda t: t.flip(0))

CPU samples arrive as CPU tensors sharing the batch's memory (zero-copy when
the batch is writable), GPU samples (``device="gpu"``) as CUDA tensors on the
pipeline's stream, through DLPack. As in DALI, ``batch_processing`` is on by
default: the function gets a list of tensors per input. The function must not
modify its inputs in place. Everything else (``num_outputs``, ``parallel``
worker processes, ``output_layouts``) is ``fn.python_function``'s.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

import torch
from chute.graph.schema import Arg, Schema
from chute.ops.python import PythonFunction
from chute.surface import make_fn

__all__ = ["TorchPythonFunction", "torch_python_function"]


def _to_torch(x: Any) -> torch.Tensor:
    if isinstance(x, np.ndarray):
        # torch wants writable memory; batches handed between operators may be read-only views
        return torch.from_numpy(x if x.flags.writeable else x.copy())
    if hasattr(x, "__cuda_array_interface__"):  # CuPy, on the stream set by the pipeline
        import cupy

        with torch.cuda.stream(torch.cuda.ExternalStream(cupy.cuda.get_current_stream().ptr)):
            return torch.from_dlpack(x)
    return torch.as_tensor(np.asarray(x))


def _from_torch(t: Any) -> Any:
    if not isinstance(t, torch.Tensor):
        return t
    t = t.detach()
    if t.is_cuda:
        import cupy

        return cupy.from_dlpack(t)
    return t.numpy()


def _convert_out(result: Any, batch: bool, num_outputs: int) -> Any:
    def one(out: Any) -> Any:
        return [_from_torch(s) for s in out] if batch else _from_torch(out)

    if num_outputs == 1:
        return one(result)
    return tuple(one(r) for r in result)


class TorchCall:
    """The user's function seen through torch: tensors in, arrays out (picklable for spawn)."""

    def __init__(self, function: Any, batch: bool, num_outputs: int):
        self.function = function
        self.batch = batch
        self.num_outputs = num_outputs

    def __call__(self, *inputs: Any) -> Any:
        if self.batch:
            args = [[_to_torch(s) for s in samples] for samples in inputs]
        else:
            args = [_to_torch(x) for x in inputs]
        with torch.no_grad():
            result = self.function(*args)
        return _convert_out(result, self.batch, self.num_outputs)


def _batch_by_default(arg: Arg) -> Arg:
    if arg.name != "batch_processing":
        return arg
    return dataclasses.replace(
        arg, default=True, doc="Call once per batch with lists of tensors (as DALI, the default)."
    )


class TorchPythonFunction(PythonFunction):
    """``fn.python_function`` whose ``function`` takes and returns torch tensors (DALI's).

    ``function`` gets lists of torch tensors for the whole batch (or, with
    ``batch_processing=False``, the tensors of each sample) and returns torch tensors.
    """

    schema = Schema(
        name="torch_python_function",
        inputs=PythonFunction.schema.inputs,
        min_inputs=0,
        variadic=True,
        args=tuple(_batch_by_default(a) for a in PythonFunction.schema.args),
        devices=PythonFunction.schema.devices,
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        super().check_args(args, arg_inputs)
        if not isinstance(args["function"], TorchCall):
            batch = args.get("batch_processing", self.schema.arg("batch_processing").default)
            args["function"] = TorchCall(args["function"], bool(batch), args.get("num_outputs", 1))


# typed in python_function.pyi (python -m chute.tools.plugin_stubs: fn.python_function's keywords)
torch_python_function = make_fn(TorchPythonFunction)
torch_python_function.__module__ = "chute.torch.fn"
