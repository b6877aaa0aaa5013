"""Operators as functions: ``fn.resize(images, size=224)`` traces one operator node.

Each function has its operator's real signature and docstring
(``help(chute.fn.python_function)``). Sub-namespaces follow DALI:
``fn.decoders``, ``fn.readers``, ``fn.random``, ``fn.transforms``, ``fn.io.file``,
``fn.math``.

The names are generated from the operator registry (chute.surface): one
function per registered operator class under its schema name, DALI's legacy
names (``fn.image_decoder``, ``fn.file_reader``) and the element-wise
functions of :mod:`chute.fn.math`.
"""

from __future__ import annotations

import sys

import chute.ops  # noqa: F401  (registers the operator classes)
from chute.fn import math  # noqa: F401  (registers fn.math.*)
from chute.runtime.registry import populate
from chute.surface import fn_entries

__all__ = populate(sys.modules[__name__], fn_entries())
