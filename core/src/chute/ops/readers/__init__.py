"""Readers: sources of encoded samples with exact, sharded epochs (``ops.readers.File``, ``Video``)."""

from chute.ops.readers.file import FileReader

File = FileReader

__all__ = ["File", "FileReader", "Video", "VideoReader"]


def __getattr__(name: str):
    # the video reader builds on this package; import it on first use
    if name in ("Video", "VideoReader"):
        from chute.ops.video.reader import VideoReader

        return VideoReader
    raise AttributeError(name)
