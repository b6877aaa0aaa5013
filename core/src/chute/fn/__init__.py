"""Operators as functions: ``fn.resize(images, size=224)`` traces one operator node.

Each function has its operator's real signature and docstring
(``help(chute.fn.python_function)``). Sub-namespaces follow DALI:
``fn.random``, ``fn.math``.
"""

from __future__ import annotations

from chute.fn import math, random
from chute.ops._base import make_fn
from chute.ops.external_source import ExternalSource
from chute.ops.python import PythonFunction
from chute.ops.tensor_ops import Cast, Cat, Copy, Reshape, Shapes, Stack, Transpose

__all__ = [
    "cast",
    "cat",
    "copy",
    "external_source",
    "math",
    "python_function",
    "random",
    "reshape",
    "shapes",
    "stack",
    "transpose",
]

external_source = make_fn(ExternalSource)
python_function = make_fn(PythonFunction)
cast = make_fn(Cast)
cat = make_fn(Cat)
copy = make_fn(Copy)
reshape = make_fn(Reshape)
shapes = make_fn(Shapes)
stack = make_fn(Stack)
transpose = make_fn(Transpose)
