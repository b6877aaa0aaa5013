"""Element-wise math on DataNodes: ``fn.math.sqrt(x)``, ``fn.math.clamp(x, 0, 1)``, ...

The functions of DALI's ``nvidia.dali.math`` (also importable as ``chute.math``). Type
promotion is the arithmetic operators' (chute.ops.arithmetic): integer inputs of the
float functions (sqrt, exp, sin, fabs, fpow, ...) give float32, an integer mixed with a
float gives that float type; abs, floor, ceil and clamp keep the input type; pow and
min/max promote as ``+`` does.
"""

from __future__ import annotations

from typing import Any

from chute.graph.node import DataNode
from chute.ops.arithmetic import arithmetic
from chute.runtime.registry import register_function

__all__ = [
    "abs",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atan2",
    "atanh",
    "cbrt",
    "ceil",
    "clamp",
    "cos",
    "cosh",
    "exp",
    "fabs",
    "floor",
    "fpow",
    "log",
    "log10",
    "log2",
    "max",
    "min",
    "pow",
    "rsqrt",
    "sin",
    "sinh",
    "sqrt",
    "tan",
    "tanh",
]


def abs(x: DataNode) -> DataNode:
    """Absolute value (integers keep their type)."""
    return arithmetic("abs", x)


def fabs(x: DataNode) -> DataNode:
    """Absolute value in floating point (integers give float32)."""
    return arithmetic("fabs", x)


def floor(x: DataNode) -> DataNode:
    """Largest integer not above x (integers pass through)."""
    return arithmetic("floor", x)


def ceil(x: DataNode) -> DataNode:
    """Smallest integer not below x (integers pass through)."""
    return arithmetic("ceil", x)


def sqrt(x: DataNode) -> DataNode:
    """Square root."""
    return arithmetic("sqrt", x)


def rsqrt(x: DataNode) -> DataNode:
    """Reciprocal square root, 1 / sqrt(x)."""
    return arithmetic("rsqrt", x)


def cbrt(x: DataNode) -> DataNode:
    """Cube root."""
    return arithmetic("cbrt", x)


def exp(x: DataNode) -> DataNode:
    """e to the power x."""
    return arithmetic("exp", x)


def log(x: DataNode) -> DataNode:
    """Natural logarithm."""
    return arithmetic("log", x)


def log2(x: DataNode) -> DataNode:
    """Base-2 logarithm."""
    return arithmetic("log2", x)


def log10(x: DataNode) -> DataNode:
    """Base-10 logarithm."""
    return arithmetic("log10", x)


def sin(x: DataNode) -> DataNode:
    """Sine (radians)."""
    return arithmetic("sin", x)


def cos(x: DataNode) -> DataNode:
    """Cosine (radians)."""
    return arithmetic("cos", x)


def tan(x: DataNode) -> DataNode:
    """Tangent (radians)."""
    return arithmetic("tan", x)


def asin(x: DataNode) -> DataNode:
    """Arcsine, in radians."""
    return arithmetic("asin", x)


def acos(x: DataNode) -> DataNode:
    """Arccosine, in radians."""
    return arithmetic("acos", x)


def atan(x: DataNode) -> DataNode:
    """Arctangent, in radians."""
    return arithmetic("atan", x)


def sinh(x: DataNode) -> DataNode:
    """Hyperbolic sine."""
    return arithmetic("sinh", x)


def cosh(x: DataNode) -> DataNode:
    """Hyperbolic cosine."""
    return arithmetic("cosh", x)


def tanh(x: DataNode) -> DataNode:
    """Hyperbolic tangent."""
    return arithmetic("tanh", x)


def asinh(x: DataNode) -> DataNode:
    """Inverse hyperbolic sine."""
    return arithmetic("asinh", x)


def acosh(x: DataNode) -> DataNode:
    """Inverse hyperbolic cosine."""
    return arithmetic("acosh", x)


def atanh(x: DataNode) -> DataNode:
    """Inverse hyperbolic tangent."""
    return arithmetic("atanh", x)


def atan2(y: Any, x: Any) -> DataNode:
    """Angle of (x, y) in radians, in (-pi, pi]."""
    return arithmetic("atan2", y, x)


def pow(base: Any, exponent: Any) -> DataNode:
    """base ** exponent, with the operands' promoted type (integers stay integers)."""
    return arithmetic("pow", base, exponent)


def fpow(base: Any, exponent: Any) -> DataNode:
    """base ** exponent in floating point (integers give float32)."""
    return arithmetic("fpow", base, exponent)


def min(a: Any, b: Any) -> DataNode:
    """Element-wise minimum."""
    return arithmetic("min", a, b)


def max(a: Any, b: Any) -> DataNode:
    """Element-wise maximum."""
    return arithmetic("max", a, b)


def clamp(x: DataNode, lo: Any, hi: Any) -> DataNode:
    """x limited to [lo, hi]; keeps x's data type."""
    return arithmetic("clamp", x, lo, hi)


# fn.math's functions are public fn names: listed by the registry with the operators
for _name in __all__:
    register_function(f"math.{_name}", globals()[_name])
