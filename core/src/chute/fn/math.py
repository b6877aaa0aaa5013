"""Element-wise math on DataNodes: ``fn.math.sqrt(x)``, ``fn.math.clamp(x, 0, 1)``, ...

Integer inputs of the float functions (sqrt, exp, sin, ...) give float32.
"""

from __future__ import annotations

from typing import Any

from chute.graph.node import DataNode
from chute.ops.arithmetic import arithmetic
from chute.runtime.registry import register_function

__all__ = [
    "abs",
    "atan2",
    "ceil",
    "clamp",
    "cos",
    "exp",
    "floor",
    "log",
    "max",
    "min",
    "pow",
    "rsqrt",
    "sin",
    "sqrt",
    "tan",
]


def abs(x: DataNode) -> DataNode:
    """Absolute value."""
    return arithmetic("abs", x)


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


def exp(x: DataNode) -> DataNode:
    """e to the power x."""
    return arithmetic("exp", x)


def log(x: DataNode) -> DataNode:
    """Natural logarithm."""
    return arithmetic("log", x)


def sin(x: DataNode) -> DataNode:
    """Sine (radians)."""
    return arithmetic("sin", x)


def cos(x: DataNode) -> DataNode:
    """Cosine (radians)."""
    return arithmetic("cos", x)


def tan(x: DataNode) -> DataNode:
    """Tangent (radians)."""
    return arithmetic("tan", x)


def atan2(y: Any, x: Any) -> DataNode:
    """Angle of (x, y) in radians, in (-pi, pi]."""
    return arithmetic("atan2", y, x)


def pow(base: Any, exponent: Any) -> DataNode:
    """base ** exponent, in floating point."""
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
