"""Arithmetic, comparison, bitwise and math operators on DataNodes.

Promotion follows NumPy (Python scalars are "weak": ``uint8 * 2`` stays
uint8) with two exceptions taken from DALI: an integer mixed with a float
gives that float type (``int32 + float32 -> float32``, not float64), and true
division or a float function (sqrt, exp, ...) of integers gives float32.
Broadcasting is NumPy's, per sample.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from chute.graph.node import DataNode, OpNode, bind_node_operator
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.runtime.operator import ArgView, Operator
from chute.types import ScalarConstant

_F32 = np.dtype(np.float32)
_BOOL = np.dtype(np.bool_)


def _rsqrt(x):
    return 1.0 / np.sqrt(x)


def _pow(base, exponent):
    """np.power, with integer powers of negative exponents as integer division gives them
    (1 for base 1, +-1 for base -1, else 0) where NumPy refuses."""
    b, e = np.asarray(base), np.asarray(exponent)
    if b.dtype.kind not in "iu" or e.dtype.kind not in "iu" or not np.any(e < 0):
        return np.power(base, exponent)
    out = np.power(b, np.where(e < 0, 0, e))
    neg = np.where(b == -1, np.where(e % 2 == 0, 1, -1), np.where(b == 1, 1, 0))
    return np.where(e < 0, neg.astype(out.dtype), out)


# name -> (numpy function, result kind): "promote", "bool", "float", "same", "int"
OPERATIONS: dict[str, tuple[Callable, str]] = {
    "add": (np.add, "promote"),
    "sub": (np.subtract, "promote"),
    "mul": (np.multiply, "promote"),
    "truediv": (np.true_divide, "float"),
    "floordiv": (np.floor_divide, "promote"),
    "mod": (np.mod, "promote"),
    "pow": (_pow, "promote"),
    "min": (np.minimum, "promote"),
    "max": (np.maximum, "promote"),
    "eq": (np.equal, "bool"),
    "ne": (np.not_equal, "bool"),
    "lt": (np.less, "bool"),
    "le": (np.less_equal, "bool"),
    "gt": (np.greater, "bool"),
    "ge": (np.greater_equal, "bool"),
    "bitand": (np.bitwise_and, "int"),
    "bitor": (np.bitwise_or, "int"),
    "bitxor": (np.bitwise_xor, "int"),
    "neg": (np.negative, "same"),
    "invert": (np.invert, "int"),
    "abs": (np.abs, "same"),
    "floor": (np.floor, "same"),
    "ceil": (np.ceil, "same"),
    "sqrt": (np.sqrt, "float"),
    "rsqrt": (_rsqrt, "float"),
    "exp": (np.exp, "float"),
    "log": (np.log, "float"),
    "sin": (np.sin, "float"),
    "cos": (np.cos, "float"),
    "tan": (np.tan, "float"),
    "cbrt": (np.cbrt, "float"),
    "log2": (np.log2, "float"),
    "log10": (np.log10, "float"),
    "asin": (np.arcsin, "float"),
    "acos": (np.arccos, "float"),
    "atan": (np.arctan, "float"),
    "sinh": (np.sinh, "float"),
    "cosh": (np.cosh, "float"),
    "tanh": (np.tanh, "float"),
    "asinh": (np.arcsinh, "float"),
    "acosh": (np.arccosh, "float"),
    "atanh": (np.arctanh, "float"),
    "fabs": (np.fabs, "float"),
    "atan2": (np.arctan2, "float"),
    "fpow": (np.power, "float"),
    "clamp": (np.clip, "first"),
}


def result_dtype(op: str, operands: list[np.dtype | Any]) -> np.dtype:
    """The output dtype of ``op`` for operand dtypes (np.dtype) and Python scalar constants."""
    kind = OPERATIONS[op][1]
    dtypes = [d for d in operands if isinstance(d, np.dtype)]
    scalars = [d for d in operands if not isinstance(d, np.dtype)]
    if kind == "bool":
        return _BOOL
    if kind == "first":
        return dtypes[0]
    if kind == "int":
        for d in dtypes:
            if d.kind not in "biu":
                raise TypeError(f"bitwise operator '{op}' needs integer or bool operands, got {d}")
        return np.result_type(*dtypes, *scalars)
    if kind == "same":
        return dtypes[0]
    floats = [d for d in dtypes if d.kind == "f"]
    if floats and len(floats) < len(dtypes):
        promoted = np.result_type(*floats, *scalars)
    else:
        promoted = np.result_type(*dtypes, *scalars)
    if kind == "float" and promoted.kind != "f":
        return _F32
    return promoted


class Arithmetic(Operator):
    """An element-wise operation on the inputs (and constants) of each sample."""

    schema = Schema(
        name="math",
        devices=("cpu", "gpu"),
        inputs=("operands",),
        min_inputs=1,
        variadic=True,
        args=(
            Arg("op", "str", "add", "The operation.", per_sample=False, choices=tuple(OPERATIONS)),
            Arg(
                "template",
                "any",
                (),
                "Operand order: input index or ('const', value).",
                per_sample=False,
            ),
        ),
    )

    def base_name(self, args: dict[str, Any]) -> str:
        return args["op"]

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        operands = _operands(node.arg("template"), [s.dtype for s in inputs])
        if any(d is None for d in operands):
            dtype = None
        else:
            dtype = result_dtype(node.arg("op"), operands)
        ndims = [s.ndim for s in inputs]
        ndim = None if any(d is None for d in ndims) else max(ndims)
        layout = next((s.layout for s in inputs if s.ndim == ndim and s.layout), None)
        return [Spec(dtype, ndim, layout)]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        op = args["op"]
        func = OPERATIONS[op][0]
        values = _operands(args["template"], list(inputs))
        dtype = result_dtype(op, [v.dtype if isinstance(v, np.ndarray) else v for v in values])
        if OPERATIONS[op][1] == "float":
            values = [
                v.astype(dtype, copy=False) if isinstance(v, np.ndarray) else v for v in values
            ]
        try:
            with np.errstate(all="ignore"):
                out = func(*values)
        except ValueError as exc:
            shapes = [tuple(v.shape) if isinstance(v, np.ndarray) else "scalar" for v in values]
            raise ValueError(f"operands of '{op}' do not broadcast: shapes {shapes}") from exc
        return np.asarray(out).astype(dtype, copy=False)

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops import arithmetic_gpu

        return arithmetic_gpu.arithmetic(self, inputs, args, ctx)


def _operands(template: tuple, inputs: list) -> list:
    return [inputs[t] if isinstance(t, int) else t[1] for t in template]


def _constant(x: Any) -> Any:
    if isinstance(x, ScalarConstant):  # types.Constant(2, types.UINT8): typed
        return x.value if x.dtype is None else x.as_array()
    if isinstance(x, (bool, int, float)):
        return x
    if isinstance(x, (np.generic, np.ndarray, list, tuple)):
        return np.asarray(x)
    raise TypeError(f"cannot use a {type(x).__name__} in pipeline arithmetic")


def arithmetic(op: str, *operands: Any) -> DataNode:
    """Trace ``op`` over DataNodes and constants."""
    nodes: list[DataNode] = []
    template: list[Any] = []
    for x in operands:
        if isinstance(x, DataNode):
            template.append(len(nodes))
            nodes.append(x)
        else:
            template.append(("const", _constant(x)))
    if not nodes:
        raise TypeError(f"'{op}' needs at least one DataNode operand")
    device = "gpu" if any(n.device == "gpu" for n in nodes) else "cpu"
    nodes = [n.gpu() if device == "gpu" and n.device != "gpu" else n for n in nodes]
    return Arithmetic(device=device)(*nodes, op=op, template=tuple(template), name=None)


bind_node_operator("arithmetic", arithmetic)
