"""GPU video decoding with NVIDIA's hardware decoder (NVDEC) through PyNvVideoCodec.

The frame selection and padding are the CPU path's (:func:`select_frames`,
:func:`pad_sources` over the same packet index), so the GPU decoders return
the same frames. PyNvVideoCodec's ``SimpleDecoder`` decodes the wanted frames
of one video in one ``get_batch_frames_by_index`` call (it seeks to
keyframes itself) and converts them to interleaved RGB on the GPU; each
frame's timestamp is checked against the packet index (see
:func:`_check_stamp`), so a decoder that lands elsewhere is caught. Whatever NVDEC cannot
decode (codecs outside :data:`NVDEC_CODECS`, a GPU without that engine, a
stream it rejects) falls back to the CPU decoder for that video, and the
result is uploaded: :data:`NVDEC_STATS` counts both outcomes.

Nothing here imports CuPy or PyNvVideoCodec at module load.
"""

from __future__ import annotations

import functools
import logging
import threading
import warnings
from collections import Counter
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np

from chute.ops.video.frames import decode_frames, pad_sources
from chute.ops.video.index import INDEX_CACHE, PacketIndex, VideoSource

__all__ = [
    "NVDEC_CODECS",
    "NVDEC_STATS",
    "VIDEO_GPU_HINT",
    "NvdecDecoder",
    "require_nvdec",
]

logger = logging.getLogger("chute")

VIDEO_GPU_HINT = (
    "pip install 'chute[video-gpu]' (PyNvVideoCodec and PyAV) together with 'chute[cuda13]' "
    "or 'chute[cuda12]' (CuPy)"
)
# Codecs tried on NVDEC; MPEG-4 Part 2, MJPEG, MPEG-2, VC-1 and the rest, which recent GPUs
# decode partly or not at all, go straight to the CPU decoder.
NVDEC_CODECS = frozenset({"h264", "hevc", "av1", "vp9", "vp8"})
# GRAY from RGB with the BT.601 luma weights
_LUMA = (0.299, 0.587, 0.114)
# frames asked of the decoder at once: bounds the decoder's output surfaces held
_CHUNK = 32


class DecodeStats:
    """Thread-safe counts: videos decoded on the GPU, CPU fallbacks by reason, decoder events.

    Events: "session" (a new PyNvVideoCodec decoder), "reused" (the thread's
    decoder was already on that video), "reconfigured", "span" (frames read
    sequentially after one seek), "by_index" (PyNvVideoCodec's own batch access).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.gpu = 0
        self.fallbacks: Counter[str] = Counter()
        self.events: Counter[str] = Counter()

    def add_gpu(self) -> None:
        with self._lock:
            self.gpu += 1

    def add_event(self, name: str) -> None:
        with self._lock:
            self.events[name] += 1

    def add_fallback(self, reason: str) -> bool:
        """Count a fallback; True the first time this reason is seen."""
        with self._lock:
            first = reason not in self.fallbacks
            self.fallbacks[reason] += 1
            return first

    def snapshot(self, events: bool = False) -> dict[str, Any]:
        with self._lock:
            out: dict[str, Any] = {"gpu": self.gpu, "fallbacks": dict(self.fallbacks)}
            if events:
                out["events"] = dict(self.events)
            return out

    def reset(self) -> None:
        with self._lock:
            self.gpu = 0
            self.fallbacks.clear()
            self.events.clear()


NVDEC_STATS = DecodeStats()


@functools.cache
def _import_nvc() -> ModuleType | None:
    try:
        import PyNvVideoCodec as nvc
    except Exception:  # missing, or present without a driver / video engine: both mean "absent"
        return None
    # decoders.video hands whole encoded videos over as bytes, by design
    warnings.filterwarnings("ignore", message="SimpleDecoder: in-memory buffer")
    return nvc


def require_nvdec(what: str, device_id: int | None) -> tuple[ModuleType, ModuleType]:
    """Return (cupy, PyNvVideoCodec), or raise a RuntimeError naming everything missing."""
    from chute.gpu.runtime import require_gpu

    missing = []
    cp = None
    try:
        cp = require_gpu(what, device_id=device_id)
    except RuntimeError as exc:
        missing.append(str(exc))
    nvc = _import_nvc()
    if nvc is None:
        missing.append(
            f"{what} needs PyNvVideoCodec (NVIDIA's hardware video decoder bindings), which is "
            "not installed or failed to load (it also needs a driver with NVDEC support)"
        )
    if missing:
        raise RuntimeError("; ".join(missing) + f". Install with: {VIDEO_GPU_HINT}")
    return cp, nvc


class _Mismatch(RuntimeError):
    """The hardware decoder's answer disagrees with the packet index."""


def _frame_pts(frame: Any) -> int | None:
    get = getattr(frame, "getPTS", None)
    value = get() if callable(get) else getattr(frame, "timestamp", None)
    return None if value is None else int(value)


def _check_stamp(frame: Any, number: int, index: PacketIndex) -> None:
    """Raise unless the decoded frame's timestamp fits frame ``number``.

    PyNvVideoCodec 2.2 does not report pts: on an H200 it reported the i-th
    decode timestamp for the i-th frame in presentation order (H.264), and for
    HEVC sometimes a value between that and the pts. So the stamp must lie
    between frame ``number``'s decode-order stamp and its pts: a decoder that
    returned a frame from elsewhere (a seek landing on an earlier keyframe)
    fails this, a reordering delay's worth of slack passes.
    """
    stamp = _frame_pts(frame)
    if stamp is None:
        return
    pts = int(index.pts[number])
    low = pts if index.decode_stamps is None else min(pts, int(index.decode_stamps[number]))
    if not low <= stamp <= pts:
        raise _Mismatch(
            f"frame {number}: the decoder's timestamp {stamp} is outside [{low}, {pts}] "
            "(its decode-order stamp and its pts)"
        )


def _as_cupy(cp: ModuleType, frame: Any) -> Any:
    """A decoded frame as a CuPy view (DLPack, else the CUDA array interface)."""
    try:
        return cp.from_dlpack(frame)
    except Exception:
        return cp.asarray(frame)


class NvdecDecoder:
    """Decodes chosen frames of videos on one GPU into CuPy FHWC uint8 arrays.

    Every thread that calls :meth:`read_sequence` keeps its own PyNvVideoCodec
    decoder (reconfigured from file to file) and its own CUDA stream, which it
    waits for before the decoder may reuse its surfaces, so threads decode in
    parallel on the GPU's NVDEC engines. The finished sequences are then
    copied on ``stream`` (the pipeline's), into memory that belongs to it.
    """

    def __init__(self, device_id: int, stream: Any = None, where: str = "GPU video decoding"):
        self.cp, self.nvc = require_nvdec(where, device_id)
        self.device_id = device_id
        with self.cp.cuda.Device(device_id):
            self.stream = stream if stream is not None else self.cp.cuda.Stream(non_blocking=True)
        self._local = threading.local()
        self._bytes_reconfigure: bool | None = None  # may decoders switch to in-memory videos?
        self._spans: bool | None = None  # do seek_to_index + get_batch_frames line up?

    # ---- decoders ----------------------------------------------------------------------------
    def _thread_stream(self) -> Any:
        stream = getattr(self._local, "stream", None)
        if stream is None:
            stream = self._local.stream = self.cp.cuda.Stream(non_blocking=True)
        return stream

    def _decoder(self, source: VideoSource, index: PacketIndex) -> Any:
        """A decoder on ``source`` whose frame count agrees with the index.

        The thread keeps its decoder: on the same video it is used as it is, for
        another it is reconfigured (far cheaper than a new decoder session); for
        in-memory videos only while PyNvVideoCodec accepts that, which the first
        attempt tells.
        """
        local = self._local
        # the cached index stands for the video's content: no second hash of the bytes
        decoder = getattr(local, "decoder", None)
        if decoder is not None and getattr(local, "key", None) is index:
            NVDEC_STATS.add_event("reused")
            return decoder
        in_memory = not isinstance(source, str)
        src: str | bytes = source
        if in_memory:
            src = source.tobytes() if isinstance(source, np.ndarray) else bytes(source)
        local.decoder = local.key = None
        if decoder is not None and not (in_memory and self._bytes_reconfigure is False):
            try:
                decoder.reconfigure_decoder(src)
                len(decoder)  # a source it did not take may only show here
                if in_memory:
                    self._bytes_reconfigure = True
                NVDEC_STATS.add_event("reconfigured")
            except Exception:
                if in_memory and self._bytes_reconfigure is None:
                    self._bytes_reconfigure = False
                decoder = None
        else:
            decoder = None
        if decoder is None:
            try:
                decoder = self._new_decoder(src, scanned=False)
            except Exception:
                decoder = None
        if decoder is None or len(decoder) != index.num_frames:
            # containers without a frame count in their header (Matroska, WebM) need a scan
            decoder = self._new_decoder(src, scanned=True)
        if len(decoder) != index.num_frames:
            raise _Mismatch(f"decoder counts {len(decoder)} frames, index {index.num_frames}")
        local.decoder, local.key = decoder, index
        return decoder

    def _new_decoder(self, source: str | bytes, scanned: bool) -> Any:
        nvc = self.nvc
        NVDEC_STATS.add_event("session")
        return nvc.SimpleDecoder(
            source,
            gpu_id=self.device_id,
            cuda_stream=self._thread_stream().ptr,
            use_device_memory=True,
            need_scanned_stream_metadata=scanned,
            output_color_type=nvc.OutputColorType.RGB,
        )

    def _put(self, out: Any, row: int, frame: Any, number: int, index: PacketIndex) -> None:
        """Check ``frame`` is frame ``number`` and copy its pixels into ``out[row]``."""
        _check_stamp(frame, number, index)
        view = _as_cupy(self.cp, frame)
        if view.ndim == 3 and view.shape[0] == 3 and view.shape[2] != 3:
            view = view.transpose(1, 2, 0)  # planar output: make it interleaved
        if view.dtype != np.uint8 or view.ndim != 3 or view.shape[2] != 3:
            raise _Mismatch(f"unexpected frame {view.dtype} {tuple(view.shape)}")
        if view.shape[0] < index.height or view.shape[1] < index.width:
            raise _Mismatch(f"frame {tuple(view.shape)} smaller than {index.width}x{index.height}")
        out[row] = view[: index.height, : index.width]

    def _read_spans(self, decoder: Any, frames: list[int], index: PacketIndex, out: Any) -> None:
        """One seek per run of frames, then sequential decoding (the CPU path's plan)."""
        stream = self._thread_stream()
        row = {f: k for k, f in enumerate(frames)}
        for first, last in _spans(frames, index):
            decoder.seek_to_index(first)
            number = first
            while number <= last:
                chunk = decoder.get_batch_frames(min(_CHUNK, last - number + 1))
                if not chunk:
                    raise _Mismatch(f"the decoder stopped before frame {number}")
                for frame in chunk:
                    if number in row:
                        self._put(out, row[number], frame, number, index)
                    else:
                        _check_stamp(frame, number, index)
                    number += 1
                stream.synchronize()  # before the decoder reuses those surfaces
            NVDEC_STATS.add_event("span")

    def _read_by_index(self, decoder: Any, frames: list[int], index: PacketIndex, out: Any) -> None:
        stream = self._thread_stream()
        for start in range(0, len(frames), _CHUNK):
            chunk = frames[start : start + _CHUNK]
            raw = decoder.get_batch_frames_by_index(chunk)
            if len(raw) != len(chunk):
                raise _Mismatch(f"asked for {len(chunk)} frames, got {len(raw)}")
            for k, (number, frame) in enumerate(zip(chunk, raw)):
                self._put(out, start + k, frame, number, index)
            stream.synchronize()
        NVDEC_STATS.add_event("by_index")

    def _decode_gpu(self, source: VideoSource, frames: list[int], index: PacketIndex) -> Any:
        """Frames (sorted, distinct) as one (len(frames), H, W, 3) RGB CuPy array, or raise.

        Sequential reading after a seek is tried first; a decoder whose seeks or
        timestamps do not line up with the index is asked frame by frame instead.
        """
        decoder = self._decoder(source, index)
        out = self.cp.empty((len(frames), index.height, index.width, 3), self.cp.uint8)
        if self._spans is not False:
            try:
                self._read_spans(decoder, frames, index, out)
                self._spans = True
                return out
            except Exception as exc:
                if self._spans is None:  # never worked: do not try again
                    self._spans = False
                    logger.info("PyNvVideoCodec: reading after seeks disagrees (%s)", exc)
        self._read_by_index(decoder, frames, index, out)
        return out

    def _decode(
        self,
        source: VideoSource,
        frames: list[int],
        index: PacketIndex,
        image_type: str,
        where: str,
    ) -> Any:
        """Frames (sorted, distinct) as one (N, H, W, C) CuPy array in ``image_type``.

        On the GPU when NVDEC can, else through the CPU decoder and one upload.
        """
        cp = self.cp
        stream = self._thread_stream()
        reason = None
        if index.codec not in NVDEC_CODECS:
            reason = f"codec {index.codec}"
        else:
            try:
                with stream:
                    out = _convert_colour(cp, self._decode_gpu(source, frames, index), image_type)
                # the decoder may reuse (or free) the surfaces it decoded into from now on
                stream.synchronize()
            except Exception as exc:
                self._local.decoder = None  # it may be in any state now
                reason = f"{index.codec}: {type(exc).__name__}: {exc}"
        if reason is None:
            NVDEC_STATS.add_gpu()
            return out
        if NVDEC_STATS.add_fallback(reason):
            logger.info("%s: decoding on the CPU (%s)", where, reason)
        host = decode_frames(source, frames, index, image_type, where)
        stacked = np.stack([host[f].reshape(*host[f].shape[:2], -1) for f in frames])
        with stream:
            out = cp.asarray(stacked)
        stream.synchronize()
        return out

    # ---- the public entry ----------------------------------------------------------------------
    def read_sequence(
        self,
        source: VideoSource,
        wanted: Sequence[int],
        pad_mode: str = "constant",
        fill_value: Sequence[int] = (0,),
        image_type: str = "RGB",
        where: str = "video",
        index: PacketIndex | None = None,
    ) -> tuple[Any, list[int]]:
        """Frames ``wanted`` of ``source`` as one FHWC uint8 CuPy array, padded past the end.

        The GPU twin of :func:`chute.ops.video.frames.read_sequence`: the same
        frames, the same padding; returns the array and, per output frame, the
        video frame it shows (-1 for fill frames). ``index`` saves a lookup.
        """
        cp = self.cp
        index = index or INDEX_CACHE.get(source, where)
        sources = pad_sources(wanted, index.num_frames, pad_mode)
        needed = sorted({s for s in sources if s >= 0})
        channels = 1 if image_type == "GRAY" else 3
        with cp.cuda.Device(self.device_id):
            if not needed:
                frames = cp.empty((0, index.height, index.width, channels), cp.uint8)
            else:
                frames = self._decode(source, needed, index, image_type, where)
            with self.stream:
                return self._assemble(frames, needed, sources, fill_value, channels), sources

    def _assemble(
        self, frames: Any, needed: list[int], sources: list[int], fill_value: Any, channels: int
    ) -> Any:
        """The output sequence, in fresh memory on the output stream: frames in order, fills."""
        cp = self.cp
        if sources == needed:  # a plain run of distinct frames
            return frames.copy()
        shape = frames.shape[1:]
        row = {f: k for k, f in enumerate(needed)}
        fill = None
        if any(s < 0 for s in sources):
            value = np.broadcast_to(np.asarray(fill_value, np.uint8)[:channels], (channels,))
            fill = cp.broadcast_to(cp.asarray(np.ascontiguousarray(value)), shape)
        parts = [frames[row[s]] if s >= 0 else fill for s in sources]
        return cp.stack(parts) if parts else cp.empty((0, *shape), cp.uint8)


def _spans(frames: list[int], index: PacketIndex) -> list[tuple[int, int]]:
    """Runs (first, last) of sorted frames to decode after one seek each.

    A run goes on while the next frame is not past a keyframe that lies after
    the current one: decoding forward is then no dearer than seeking.
    """
    spans = []
    first = last = frames[0]
    for f in frames[1:]:
        if index.keyframe_before(f) > last + 1:
            spans.append((first, last))
            first = f
        last = f
    spans.append((first, last))
    return spans


def _convert_colour(cp: ModuleType, rgb: Any, image_type: str) -> Any:
    """(N, H, W, 3) RGB frames as ``image_type``: RGB, BGR or GRAY (N, H, W, 1)."""
    if image_type == "RGB":
        return rgb
    if image_type == "BGR":
        return cp.ascontiguousarray(rgb[..., ::-1])
    weights = cp.asarray(np.asarray(_LUMA, np.float32))
    gray = cp.rint(rgb.astype(cp.float32) @ weights)
    return cp.clip(gray, 0, 255).astype(cp.uint8)[..., None]
