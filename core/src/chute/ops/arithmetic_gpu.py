"""GPU backend of the arithmetic operators, on CuPy.

The operands of a dense batch are stacked with the batch axis in front (per-sample
values as (N, 1, ..., 1)), constants as (1, ...) arrays of the dtype NumPy would
compute them in, and the operation is one CuPy ufunc call over the batch; ragged
batches run it per sample. The result is converted to ``result_dtype``, as on the CPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.gpu.batches import gpu_batch
from chute.gpu.runtime import require_gpu
from chute.ops.arithmetic import OPERATIONS, constant_dtype, result_dtype

__all__ = ["arithmetic", "operand_dtypes"]


def _rsqrt(cp: Any, x: Any, dtype: Any = None) -> Any:
    return cp.reciprocal(cp.sqrt(x, dtype=dtype))


_UFUNCS = {
    "add": "add",
    "sub": "subtract",
    "mul": "multiply",
    "truediv": "true_divide",
    "floordiv": "floor_divide",
    "mod": "remainder",
    "pow": "power",
    "min": "minimum",
    "max": "maximum",
    "eq": "equal",
    "ne": "not_equal",
    "lt": "less",
    "le": "less_equal",
    "gt": "greater",
    "ge": "greater_equal",
    "bitand": "bitwise_and",
    "bitor": "bitwise_or",
    "bitxor": "bitwise_xor",
    "neg": "negative",
    "invert": "invert",
    "abs": "absolute",
    "floor": "floor",
    "ceil": "ceil",
    "sqrt": "sqrt",
    "exp": "exp",
    "log": "log",
    "sin": "sin",
    "cos": "cos",
    "tan": "tan",
    "cbrt": "cbrt",
    "log2": "log2",
    "log10": "log10",
    "asin": "arcsin",
    "acos": "arccos",
    "atan": "arctan",
    "sinh": "sinh",
    "cosh": "cosh",
    "tanh": "tanh",
    "asinh": "arcsinh",
    "acosh": "arccosh",
    "atanh": "arctanh",
    "fabs": "fabs",
    "atan2": "arctan2",
    "fpow": "power",
}


def operand_dtypes(op: str, operands: list) -> tuple[np.dtype, list]:
    """(result dtype, the dtype each constant operand is given on the GPU) of ``op``.

    ``operands`` holds np.dtype for data and the constants themselves. Constants take
    DALI's types (arithmetic.constant_dtype: a Python int is int32, a float float32),
    converted to the result for float operations, as on the CPU.
    """
    kind = OPERATIONS[op][1]
    consts = [c for c in operands if not isinstance(c, np.dtype)]
    result = result_dtype(op, operands)
    return result, [result if kind == "float" else constant_dtype(c) for c in consts]


def arithmetic(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """The arithmetic operators on the GPU: one CuPy call per dense batch."""
    cp = require_gpu("GPU operators", device_id=ctx.device_id)
    name, template = args["op"], args["template"]
    dense = all(b.is_dense_tensor() for b in inputs)
    operands = [inputs[t].dtype if isinstance(t, int) else t[1] for t in template]
    result, const_dtypes = operand_dtypes(name, operands)
    float_kind = OPERATIONS[name][1] == "float"
    convert = OPERATIONS[name][1] in ("float", "promote", "int")  # operands to the result
    n = len(inputs[0])
    with ctx.stream:
        consts = iter(const_dtypes)
        host = [t if isinstance(t, int) else np.asarray(t[1], next(consts)) for t in template]
        if dense:
            data = [b.as_array() for b in inputs]
            out = _compute(cp, name, host, data, result, float_kind, convert)
        else:
            data = [b.samples() for b in inputs]  # ragged: one call per sample
            out = [
                _compute(cp, name, host, [d[i][None] for d in data], result, float_kind, convert)[0]
                for i in range(n)
            ]
    # the layout of an operand with the most dims, as Arithmetic.infer says
    rank = max(len(b.shape()[0]) if len(b) else 0 for b in inputs)
    layouts = [b.layout() for b in inputs if b.layout() and len(b) and len(b.shape()[0]) == rank]
    return gpu_batch(out, layouts[0] if layouts else "", ctx)


def _compute(
    cp: Any,
    name: str,
    host: list,
    data: list,
    result: np.dtype,
    float_kind: bool,
    convert: bool = False,
) -> Any:
    """One ufunc call over stacked operands (batch axis first); returns (N, ...) ``result``."""
    ndims = [d.ndim - 1 for d in data] + [h.ndim for h in host if isinstance(h, np.ndarray)]
    rank = max(ndims)
    values = []
    for h in host:
        if isinstance(h, int):
            x = data[h]
            values.append(x.reshape(x.shape[:1] + (1,) * (rank + 1 - x.ndim) + x.shape[1:]))
        else:
            values.append(cp.asarray(h.reshape((1,) * (rank + 1 - h.ndim) + h.shape)))
    if convert:
        values = [v.astype(result, copy=False) for v in values]
    dtype = {"dtype": result} if float_kind else {}
    try:
        if name == "clamp":
            out = cp.clip(*values)
        elif name == "rsqrt":
            out = _rsqrt(cp, *values, **dtype)
        else:
            out = getattr(cp, _UFUNCS[name])(*values, **dtype)
    except ValueError as exc:
        shapes = [tuple(v.shape[1:]) for v in values]
        raise ValueError(f"operands of '{name}' do not broadcast: shapes {shapes}") from exc
    return out.astype(result, copy=False)
