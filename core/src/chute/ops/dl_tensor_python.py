"""fn.dl_tensor_python_function: a Python callable that takes and gives DLPack tensors.

DALI 2.4's operator: the function gets each input as a DLPack capsule (a list of capsules
per input with ``batch_processing``) and returns capsules, or any object with
``__dlpack__`` (a torch tensor, a NumPy or CuPy array), so it can hand the data to any
framework without a copy: ``torch.utils.dlpack.from_dlpack(capsule)``. On the GPU the
capsules point to device memory; with ``synchronize_stream`` (the default) the pipeline's
stream is synchronized before the call, so work the function queues on another stream
sees finished inputs. Everything else (threads, ``num_outputs``, ``output_layouts``)
is fn.python_function's machinery (chute.ops.python).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import NO_HINTS, NodeHints
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.python import PythonFunction
from chute.runtime.registry import register

_K_DLCPU, _K_DLCUDA = 1, 2


class _Capsule:
    """A bare DLPack capsule made consumable by ``np.from_dlpack`` / ``cupy.from_dlpack``."""

    __slots__ = ("_capsule", "_device")

    def __init__(self, capsule: Any, device: tuple[int, int]):
        self._capsule = capsule
        self._device = device

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device


def _is_capsule(obj: Any) -> bool:
    return type(obj).__name__ == "PyCapsule"


def to_capsule(x: Any) -> Any:
    """A DLPack capsule of a NumPy or CuPy array (a copy where the array is read-only:
    legacy DLPack cannot mark memory read-only, and NumPy refuses to export it)."""
    to_dlpack = getattr(x, "toDlpack", None)  # CuPy: a legacy capsule, no stream handshake
    if to_dlpack is not None:
        return to_dlpack()
    try:
        return x.__dlpack__()
    except BufferError:
        return np.array(x).__dlpack__()


def from_dlpack(obj: Any, gpu: bool, device_id: int) -> Any:
    """What the function returned, as a NumPy (CPU) or CuPy (GPU) array."""
    if gpu:
        from chute.gpu.runtime import cupy_module

        cp = cupy_module()
        if _is_capsule(obj):
            obj = _Capsule(obj, (_K_DLCUDA, device_id))
        return cp.from_dlpack(obj) if hasattr(obj, "__dlpack__") else cp.asarray(obj)
    if _is_capsule(obj):
        obj = _Capsule(obj, (_K_DLCPU, 0))
    return np.from_dlpack(obj) if hasattr(obj, "__dlpack__") else np.asarray(obj)


@register(ops_name="DLTensorPythonFunction")
class DLTensorPythonFunction(PythonFunction):
    """Calls ``function`` on DLPack capsules of each sample's inputs (or lists of them per input
    with ``batch_processing``); it returns DLPack capsules or objects with ``__dlpack__``."""

    schema = Schema(
        name="dl_tensor_python_function",
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
                "Call once per batch with a list of capsules per input.",
                per_sample=False,
            ),
            Arg("output_layouts", "any", None, "Layout of each output.", per_sample=False),
            Arg(
                "synchronize_stream",
                "bool",
                True,
                "GPU: synchronize the pipeline's stream before the call.",
                per_sample=False,
            ),
        ),
        devices=("cpu", "gpu"),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        if not callable(args.get("function")):
            raise TypeError("fn.dl_tensor_python_function: argument 'function' must be callable")
        if args.get("num_outputs", 1) < 0:
            raise ValueError("fn.dl_tensor_python_function: argument 'num_outputs' must be >= 0")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        n = len(node.outputs)
        layouts = node.arg("output_layouts")
        layouts = list(layouts) if isinstance(layouts, (list, tuple)) else [layouts] * n
        return [Spec(None, len(lay) if lay else None, lay) for lay in layouts]

    def setup(self, node: OpNode, hints: NodeHints = NO_HINTS, pipeline: Any = None) -> Any:
        return None  # no process pool: DLPack capsules do not cross processes

    def call(self, function: Any, inputs: Any, args: Any, gpu: bool) -> Any:
        device_id = 0
        if gpu:
            from chute.gpu.runtime import cupy_module

            cp = cupy_module()
            device_id = cp.cuda.Device().id
            if args["synchronize_stream"]:
                cp.cuda.get_current_stream().synchronize()
        batch = bool(args["batch_processing"])
        capsules = [[to_capsule(x) for x in b] if batch else to_capsule(b) for b in inputs]
        result = function(*capsules)
        n = int(args["num_outputs"])
        outs = [result] if n == 1 else list(result) if isinstance(result, (tuple, list)) else None
        if outs is None or len(outs) != n:
            raise ValueError(
                f"fn.dl_tensor_python_function: the function must return {n} outputs "
                f"(num_outputs={n}), got {type(result).__name__}"
            )
        if batch:
            outs = [[from_dlpack(s, gpu, device_id) for s in out] for out in outs]
        else:
            outs = [from_dlpack(out, gpu, device_id) for out in outs]
        return outs[0] if n == 1 else tuple(outs)
