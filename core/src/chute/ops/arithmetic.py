"""Arithmetic, comparison, bitwise and math operators on DataNodes.

Type promotion is DALI's (its "Type Promotion Rules", checked against DALI 2.4): a
Python ``int`` is an int32 constant, a ``float`` a float32 one and a ``bool`` a bool
one, so ``uint8 * 2`` is int32 (no wrap-around) and ``uint8 + 0.5`` float32; with a
float operand the result is the widest float operand (``int32 + float32 -> float32``);
integers promote as NumPy's table says except int64 with uint64, which stays int64;
true division and the float functions (sqrt, exp, ...) of integers give float32.
Operands are converted to the result type before the operation. Broadcasting is
NumPy's, per sample.
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


def constant_dtype(value: Any) -> np.dtype:
    """The type DALI gives a constant operand: int32 for a Python int (int64 / uint64 when
    it does not fit), float32 for a float, bool for a bool, an array's own type."""
    if isinstance(value, np.dtype):
        return value
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype
    if isinstance(value, bool):
        return _BOOL
    if isinstance(value, int):
        if -(2**31) <= value < 2**31:
            return np.dtype(np.int32)
        return np.dtype(np.int64) if value < 2**63 else np.dtype(np.uint64)
    if isinstance(value, float):
        return _F32
    raise TypeError(f"cannot use a {type(value).__name__} in pipeline arithmetic")


def _promote(dtypes: list[np.dtype]) -> np.dtype:
    floats = [d for d in dtypes if d.kind == "f"]
    if floats:  # the widest float operand; integers do not widen it
        return np.result_type(*floats)
    promoted = np.result_type(*dtypes)
    return np.dtype(np.int64) if promoted.kind == "f" else promoted  # int64 with uint64


def result_dtype(op: str, operands: list[np.dtype | Any]) -> np.dtype:
    """The output dtype of ``op`` for operand dtypes (np.dtype) and constants."""
    kind = OPERATIONS[op][1]
    dtypes = [constant_dtype(d) for d in operands]
    if kind == "bool":
        return _BOOL
    if kind in ("first", "same"):
        return dtypes[0]
    if kind == "int":
        for d in dtypes:
            if d.kind not in "biu":
                raise TypeError(f"bitwise operator '{op}' needs integer or bool operands, got {d}")
    promoted = _promote(dtypes)
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
        values = [
            v if isinstance(v, np.ndarray) else np.asarray(v, constant_dtype(v)) for v in values
        ]
        dtype = result_dtype(op, [v.dtype for v in values])
        if OPERATIONS[op][1] in ("float", "promote", "int"):
            values = [v.astype(dtype, copy=False) for v in values]
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
        return _constant(x.value) if x.dtype is None else x.as_array()
    if isinstance(x, (bool, int, float)):  # DALI's constant types (constant_dtype)
        return np.asarray(x, constant_dtype(x))
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
