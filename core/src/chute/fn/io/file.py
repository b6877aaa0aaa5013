"""``fn.io.file.read``: file paths in, encoded bytes out."""

from __future__ import annotations

from chute.ops._base import make_fn
from chute.ops.io import FileRead

__all__ = ["read"]

read = make_fn(FileRead)
