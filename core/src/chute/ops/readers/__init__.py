"""Readers: sources of encoded samples with exact, sharded epochs (``ops.readers.File``)."""

from chute.ops.readers.file import FileReader

File = FileReader

__all__ = ["File", "FileReader"]
