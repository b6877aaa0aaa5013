"""``fn.io.file.read``: file paths in, encoded bytes out."""

from __future__ import annotations

from chute.ops.io import FileRead
from chute.runtime.operator import make_fn

__all__ = ["read"]

read = make_fn(FileRead)
