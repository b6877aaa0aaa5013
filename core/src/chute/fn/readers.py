"""Readers: ``fn.readers.file``."""

from __future__ import annotations

from chute.ops.readers.file import FileReader
from chute.ops.video import VideoReader
from chute.runtime.operator import make_fn

__all__ = ["file", "video"]

file = make_fn(FileReader)
video = make_fn(VideoReader)
