"""Readers: ``fn.readers.file``."""

from __future__ import annotations

from chute.ops._base import make_fn
from chute.ops.readers.file import FileReader

__all__ = ["file"]

file = make_fn(FileReader)
