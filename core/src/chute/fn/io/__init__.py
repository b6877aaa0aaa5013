"""I/O operators: ``fn.io.file.read``."""

from chute.fn.io import file

__all__ = ["file"]
