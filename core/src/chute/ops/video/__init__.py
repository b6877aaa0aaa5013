"""Video: ``ops.decoders.Video``-style decoding of in-memory videos and the video readers.

The packet index (:mod:`chute.ops.video.index`) numbers frames in
presentation order from the container's packets; :mod:`chute.ops.video.frames`
decodes chosen frames through PyAV (the optional ``av`` package) with padding.
"""

from __future__ import annotations

from chute.ops.video.decoder import VideoDecoder
from chute.ops.video.experimental_reader import ExperimentalVideoReader
from chute.ops.video.reader import VideoReader

__all__ = ["ExperimentalVideoReader", "VideoDecoder", "VideoReader"]
