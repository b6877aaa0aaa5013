"""The packet index of a video: frame numbers, timestamps and keyframes, without decoding.

Frames are numbered in presentation order (by pts), which makes variable
frame rate and B-frame reordering harmless: frame i is the i-th smallest
pts among the video stream's packets. Building the index only demuxes the
container (reads packet headers), which is far cheaper than decoding.
Indexes are cached per file (path, size, mtime) or per content hash.
"""

from __future__ import annotations

import hashlib
import io
import threading
from collections import OrderedDict
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from chute.ops.readers import storage

VideoSource = str | bytes | np.ndarray


def av_module() -> Any:
    """The PyAV module, or an ImportError naming the extra to install."""
    try:
        import av
    except ImportError as exc:
        raise ImportError(
            "video decoding needs the 'av' package (PyAV, bundles FFmpeg): "
            "pip install 'chute[video]'"
        ) from exc
    return av


@dataclass(frozen=True)
class PacketIndex:
    """Frame i's pts (in ``time_base`` units) and whether its packet is a keyframe.

    ``decode_stamps`` holds the packets' dts in increasing order (None when a
    packet has none): hardware decoders that pass packet timestamps through
    in decode order report ``decode_stamps[i]`` for frame i.
    """

    pts: np.ndarray
    keyframe: np.ndarray
    time_base: Fraction
    codec: str
    width: int
    height: int
    decode_stamps: np.ndarray | None = None

    @property
    def num_frames(self) -> int:
        return len(self.pts)

    def keyframe_before(self, frame: int) -> int:
        """The last keyframe at or before ``frame`` (in presentation order); 0 if none."""
        keys = np.flatnonzero(self.keyframe[: frame + 1])
        return int(keys[-1]) if keys.size else 0

    def frame_of_pts(self, pts: int) -> int:
        """The frame number of a decoded frame's pts (the nearest indexed pts)."""
        i = int(np.searchsorted(self.pts, pts))
        if i < len(self.pts) and self.pts[i] == pts:
            return i
        if i == 0:
            return 0
        if i >= len(self.pts):
            return len(self.pts) - 1
        return i if self.pts[i] - pts < pts - self.pts[i - 1] else i - 1

    def seconds(self, frames: np.ndarray) -> np.ndarray:
        """Presentation times of ``frames`` in seconds, from the first frame's."""
        frames = np.asarray(frames, np.int64)
        return ((self.pts[frames] - self.pts[0]) * float(self.time_base)).astype(np.float32)


def open_container(source: VideoSource) -> Any:
    """Open a path or in-memory encoded video with PyAV."""
    av = av_module()
    if isinstance(source, str):
        # a URL opens as a file object fetched ahead in blocks (chute.ops.readers.storage)
        return av.open(storage.open_binary(source) if storage.is_url(source) else source)
    data = source.tobytes() if isinstance(source, np.ndarray) else bytes(source)
    return av.open(io.BytesIO(data))


def video_stream(container: Any, where: str) -> Any:
    """The first video stream, checked for a decoder in this FFmpeg build."""
    av = av_module()
    if not container.streams.video:
        raise ValueError(f"{where}: no video stream")
    stream = container.streams.video[0]
    name = stream.codec_context.name if stream.codec_context is not None else None
    if name is None or name not in av.codecs_available:
        codec = name or getattr(stream, "codec_tag", "unknown")
        raise ValueError(
            f"{where}: video codec {codec!r} is not supported by the FFmpeg in PyAV "
            f"{av.__version__}"
        )
    return stream


def build_index(source: VideoSource, where: str = "video") -> PacketIndex:
    """Index a video by demuxing its packets (no decoding)."""
    av = av_module()
    try:
        container = open_container(source)
    except (av.error.FFmpegError, OSError) as exc:
        raise ValueError(f"{where}: cannot open video: {exc}") from None
    with container:
        stream = video_stream(container, where)
        stamps, keys, decode = [], [], []
        try:
            for packet in container.demux(stream):
                if packet.size == 0:  # the demuxer's end-of-stream marker
                    continue
                stamp = packet.pts if packet.pts is not None else packet.dts
                if stamp is None:
                    raise ValueError(f"{where}: packets carry no timestamps; cannot index")
                stamps.append(stamp)
                keys.append(packet.is_keyframe)
                decode.append(packet.dts)
        except av.error.FFmpegError as exc:
            raise ValueError(f"{where}: cannot read video packets: {exc}") from None
        if not stamps:
            raise ValueError(f"{where}: the video stream has no frames")
        order = np.argsort(np.asarray(stamps, np.int64), kind="stable")
        return PacketIndex(
            pts=np.asarray(stamps, np.int64)[order],
            keyframe=np.asarray(keys, bool)[order],
            time_base=Fraction(stream.time_base) if stream.time_base else Fraction(1, 1),
            codec=stream.codec_context.name,
            width=stream.codec_context.width,
            height=stream.codec_context.height,
            decode_stamps=None
            if any(d is None for d in decode)
            else np.sort(np.asarray(decode, np.int64)),
        )


class IndexCache:
    """A thread-safe LRU of packet indexes keyed by file identity or content hash."""

    def __init__(self, capacity: int = 4096):
        self.capacity = capacity
        self._entries: OrderedDict[tuple, PacketIndex] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(source: VideoSource) -> tuple:
        if isinstance(source, str):
            return ("path", storage.fingerprint(source))
        data = source if isinstance(source, bytes | bytearray) else memoryview(source)
        return ("bytes", hashlib.blake2b(data, digest_size=16).digest())

    def get(self, source: VideoSource, where: str = "video") -> PacketIndex:
        """The index of ``source``, built on first use."""
        key = self.key(source)
        with self._lock:
            index = self._entries.get(key)
            if index is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return index
        index = build_index(source, where)  # outside the lock: indexing may take a while
        with self._lock:
            self.misses += 1
            self._entries[key] = index
            while len(self._entries) > self.capacity:
                self._entries.popitem(last=False)
        return index

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


INDEX_CACHE = IndexCache()
