"""nvImageCodec's C API through ctypes: batch decoding that lets go of the GIL once a batch.

Why not nvImageCodec's Python binding: on an H200 its decode of 256 JPEGs took
10 ms alone and ~1 s while one other Python thread ran pure Python; parsing 256
headers took 0.9 ms and ~400 ms. The binding gives up and retakes the GIL many
times per call, and each retake waits out the interpreter's switch interval
(5 ms) behind a busy thread — and a pipeline always has busy threads (its reader,
its CPU workers, the user's training loop). Here the short calls (parse a header,
describe an image, free) keep the GIL (``ctypes.PyDLL``) and the long ones (decode,
wait for it) release it (``ctypes.CDLL``): two hand-offs per batch.

Per-sample structures live in NumPy byte arrays filled for the whole batch at once
(field offsets from the ctypes layouts below, which follow ``nvimgcodec.h``), so a
sample costs a few foreign calls and no Python objects besides its output view. Where
chute's compiled module is built, those per-sample calls run as one loop per batch
without the GIL (``chute.runtime._native.codec_*``, given the functions' addresses): on a
32-core host, made one by one under the GIL they took a fifth of the GIL's time.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import os
from collections.abc import Sequence
from ctypes import POINTER, byref, c_int, c_size_t, c_void_p
from itertools import chain
from typing import Any

import numpy as np

from chute.gpu import codec_layout as L
from chute.gpu.codec_layout import BACKENDS, CPU_ONLY_DEVICE, SAMPLE_FORMATS
from chute.gpu.codec_setup import attach_allocators
from chute.runtime import native

__all__ = [
    "CPU_ONLY_DEVICE",
    "CodecDecoder",
    "DecodeJob",
    "DeviceImage",
    "StreamBatch",
    "api",
    "parse_batch",
]


class CodecError(RuntimeError):
    """A failed nvImageCodec call (not a sample that failed to decode: see the statuses)."""


class _Api:
    """The loaded library: one instance, GIL-keeping and GIL-releasing entry points."""

    def __init__(self, path: str, extensions: str):
        keep = ctypes.PyDLL(path)  # short calls: keep the GIL, no hand-off
        free = ctypes.CDLL(path)  # long calls: release the GIL
        v, p = c_void_p, POINTER(c_void_p)
        sigs = {
            "nvimgcodecInstanceCreate": (keep, [p, c_void_p]),
            "nvimgcodecCodeStreamCreateFromHostMem": (keep, [v, p, v, c_size_t, v]),
            "nvimgcodecCodeStreamGetImageInfo": (keep, [v, v]),
            "nvimgcodecCodeStreamGetSubCodeStream": (keep, [v, p, v]),
            "nvimgcodecCodeStreamDestroy": (keep, [v]),
            "nvimgcodecImageCreate": (keep, [v, p, v]),
            "nvimgcodecImageDestroy": (keep, [v]),
            "nvimgcodecDecoderCreate": (free, [v, p, v, ctypes.c_char_p]),
            "nvimgcodecDecoderDestroy": (free, [v]),
            "nvimgcodecDecoderDecode": (free, [v, v, v, c_int, v, p]),
            "nvimgcodecFutureWaitForAll": (free, [v]),
            "nvimgcodecFutureGetProcessingStatus": (keep, [v, v, POINTER(c_size_t)]),
            "nvimgcodecFutureDestroy": (keep, [v]),
        }
        # the short calls' addresses, for the compiled batch loops (chute.runtime.native)
        self.address: dict[str, int] = {}
        for name, (lib, args) in sigs.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, c_int
            setattr(self, name[len("nvimgcodec") :], fn)
            self.address[name[len("nvimgcodec") :]] = ctypes.cast(fn, c_void_p).value or 0
        info = L.header(L.InstanceCreateInfo(), L.INSTANCE_CREATE_INFO)
        info.load_builtin_modules = 1
        info.load_extension_modules = 1
        info.extension_modules_path = extensions.encode()
        self.instance = c_void_p()
        self.check(self.InstanceCreate(byref(self.instance), byref(info)), "InstanceCreate")

    @staticmethod
    def check(status: int, what: str) -> None:
        if status != 0:
            raise CodecError(f"nvImageCodec {what} failed with status {status}")


_exiting = False


@atexit.register
def _at_exit() -> None:
    global _exiting
    _exiting = True


@functools.cache
def api() -> _Api:
    """Load nvImageCodec's library (from the nvidia-nvimgcodec wheel) once per process."""
    from nvidia import nvimgcodec as module  # its import also makes nvJPEG findable

    folder = os.path.dirname(module.__file__)
    return _Api(os.path.join(folder, "libnvimgcodec.so.0"), os.path.join(folder, "extensions"))


_INFO_SIZE = ctypes.sizeof(L.ImageInfo)
_INFO_WIDTH = L.offset(L.ImageInfo, "plane_info", "width")
_INFO_HEIGHT = L.offset(L.ImageInfo, "plane_info", "height")
_INFO_ROTATED = L.offset(L.ImageInfo, "orientation", "rotated")
_INFO_FLIP_X = L.offset(L.ImageInfo, "orientation", "flip_x")
_INFO_FLIP_Y = L.offset(L.ImageInfo, "orientation", "flip_y")
_INFO_STRIDE = L.offset(L.ImageInfo, "plane_info", "row_stride")
_INFO_BUFFER = L.offset(L.ImageInfo, "buffer")
_INFO_STREAM = L.offset(L.ImageInfo, "cuda_stream")
_VIEW_SIZE = ctypes.sizeof(L.CodeStreamView)
_VIEW_START = L.offset(L.CodeStreamView, "region", "start")
_VIEW_END = L.offset(L.CodeStreamView, "region", "end")


def _u32(buf: np.ndarray, offset: int, size: int) -> np.ndarray:
    """The uint32 field at ``offset`` of each ``size``-byte record of ``buf``."""
    return np.ndarray((len(buf) // size,), np.uint32, buf, offset, (size,))


def _u64(buf: np.ndarray, offset: int, size: int) -> np.ndarray:
    return np.ndarray((len(buf) // size,), np.uint64, buf, offset, (size,))


def _i32(buf: np.ndarray, offset: int, size: int, count: int) -> np.ndarray:
    return np.ndarray((len(buf) // size, count), np.int32, buf, offset, (size, 4))


class StreamBatch:
    """Parsed code streams of a batch (handles freed with the object) and their shapes."""

    def __init__(self, n: int):
        self.handles = np.zeros(n, np.uint64)  # 0: the header did not parse
        self.shapes = np.zeros((n, 2), np.int64)  # (height, width) before EXIF rotation
        self.rotated = np.zeros(n, np.int32)
        self.flipped = np.zeros(n, bool)  # EXIF orientation mirrors the image
        self.keep: list[Any] = []  # the encoded bytes: code streams point into them
        self._owned: np.ndarray | None = None  # indices whose handles it frees (None: all)

    def sub_streams(self, regions: Sequence[Any]) -> StreamBatch:
        """Code streams of the regions ``(y0, x0, y1, x1)`` (None: the whole image)."""
        lib = api()
        n = len(regions)
        out = StreamBatch(n)
        out.keep = [self]
        out.shapes[:] = self.shapes
        out.rotated[:] = self.rotated
        out.flipped[:] = self.flipped
        views = np.empty(n * _VIEW_SIZE, np.uint8)
        views.reshape(n, _VIEW_SIZE)[:] = _view_template()
        has = np.fromiter((r is not None for r in regions), bool, n)
        boxes = np.zeros((n, 4), np.int32)
        cuts = int(has.sum())
        if cuts:  # the regions' (y0, x0, y1, x1), one conversion
            corners = chain.from_iterable(r for r in regions if r is not None)
            boxes[has] = np.fromiter(corners, np.int32, 4 * cuts).reshape(cuts, 4)
        starts, ends = (
            _i32(views, _VIEW_START, _VIEW_SIZE, 2),
            _i32(views, _VIEW_END, _VIEW_SIZE, 2),
        )
        starts[:] = boxes[:, :2]
        ends[:] = boxes[:, 2:]
        out.handles[~has] = self.handles[~has]  # no region: the stream itself
        calls = native.codec_calls
        if calls is not None:
            calls.codec_sub_streams(
                lib.address["CodeStreamGetSubCodeStream"],
                self.handles,
                views,
                _VIEW_SIZE,
                out.handles,
            )
        else:
            base = views.ctypes.data
            handle = c_void_p()
            for i in np.flatnonzero(has & (self.handles != 0)).tolist():
                handle.value = None  # a non-null handle would be re-initialised, not a new one
                status = lib.CodeStreamGetSubCodeStream(
                    int(self.handles[i]), byref(handle), base + i * _VIEW_SIZE
                )
                if status == 0 and handle.value:
                    out.handles[i] = handle.value
        cut = has & (out.handles != 0)
        out.shapes[cut] = boxes[cut, 2:] - boxes[cut, :2]
        out._owned = np.flatnonzero(cut)
        return out

    def __del__(self) -> None:
        if _exiting:  # the library may be gone already
            return
        try:
            lib = api()
        except Exception:
            return
        owned = self.handles if self._owned is None else self.handles[self._owned]
        if native.codec_calls is not None:
            native.codec_calls.codec_destroy(lib.address["CodeStreamDestroy"], owned)
            return
        for handle in owned[owned != 0].tolist():
            lib.CodeStreamDestroy(handle)


def parse_batch(encoded: Sequence[Any]) -> StreamBatch:
    """Parse every sample's header; a sample that does not parse keeps handle 0 and shape 0."""
    lib = api()
    n = len(encoded)
    batch = StreamBatch(n)
    infos = np.zeros(n * _INFO_SIZE, np.uint8)
    template = np.frombuffer(bytes(L.header(L.ImageInfo(), L.IMAGE_INFO)), np.uint8)
    infos.reshape(n, _INFO_SIZE)[:] = template
    calls = native.codec_calls
    if calls is not None:
        # the samples themselves, kept while their code streams point into them (NumPy
        # arrays never move their memory); the compiled call reads their buffers
        keep = list(encoded)
        addresses = (
            lib.address["CodeStreamCreateFromHostMem"],
            lib.address["CodeStreamGetImageInfo"],
            lib.address["CodeStreamDestroy"],
            lib.instance.value or 0,
        )
        try:
            calls.codec_parse(*addresses, keep, infos, _INFO_SIZE, batch.handles)
        except (BufferError, ValueError):  # rare: a strided sample (no stream made yet), copied
            keep = [k if memoryview(k).c_contiguous else memoryview(k).tobytes() for k in keep]
            calls.codec_parse(*addresses, keep, infos, _INFO_SIZE, batch.handles)
        batch.keep = keep
    else:
        arrays = [
            np.ascontiguousarray(data if isinstance(data, np.ndarray) else memoryview(data))
            .reshape(-1)
            .view(np.uint8)
            for data in encoded
        ]
        batch.keep = [arr for arr in arrays if arr.size]  # the code streams point into them
        base = infos.ctypes.data
        handle = c_void_p()
        for i, arr in enumerate(arrays):
            if arr.size == 0:
                continue
            handle.value = None  # a non-null handle would be re-initialised, not a new one
            if lib.CodeStreamCreateFromHostMem(
                lib.instance, byref(handle), arr.ctypes.data, arr.size, None
            ):
                continue
            if lib.CodeStreamGetImageInfo(handle.value, base + i * _INFO_SIZE):
                lib.CodeStreamDestroy(handle.value)
                continue
            batch.handles[i] = handle.value
    batch.shapes[:, 0] = _u32(infos, _INFO_HEIGHT, _INFO_SIZE)
    batch.shapes[:, 1] = _u32(infos, _INFO_WIDTH, _INFO_SIZE)
    batch.shapes[batch.handles == 0] = 0
    batch.rotated[:] = _u32(infos, _INFO_ROTATED, _INFO_SIZE).view(np.int32)
    batch.flipped[:] = (
        _u32(infos, _INFO_FLIP_X, _INFO_SIZE) | _u32(infos, _INFO_FLIP_Y, _INFO_SIZE)
    ) != 0
    return batch


class DeviceImage:
    """One decoded HWC uint8 image inside a batch's buffer (``__cuda_array_interface__``)."""

    __slots__ = ("owner", "ptr", "shape")

    def __init__(self, owner: Any, ptr: int, shape: tuple[int, int, int]):
        self.owner, self.ptr, self.shape = owner, ptr, shape

    @property
    def __cuda_array_interface__(self) -> dict:
        return {"shape": self.shape, "typestr": "|u1", "data": (self.ptr, False), "version": 3}


class CodecDecoder:
    """One nvImageCodec decoder over the given backends; decodes a StreamBatch into buffers.

    ``backends`` are (kind, load hint) pairs, kind one of BACKENDS; ``host`` decodes
    into host memory (what CPU backends write). ``allocator`` "async" gives nvImageCodec
    the CUDA driver's stream-ordered pool and padded allocations (chute.gpu.codec_setup)
    instead of nvJPEG's cudaMalloc / cudaFree.
    """

    def __init__(
        self,
        device_id: int,
        backends: Sequence[tuple[str, float]],
        max_threads: int = 0,
        options: str = "",
        host: bool = False,
        allocator: str = "default",
    ):
        if allocator not in ("default", "async"):  # before the library loads
            raise ValueError(f"allocator must be 'default' or 'async'; got {allocator!r}")
        lib = self._lib = api()
        chosen = (L.Backend * len(backends))()
        for b, (kind, load) in zip(chosen, backends):
            L.header(b, L.BACKEND).kind = BACKENDS[kind]
            L.header(b.params, L.BACKEND_PARAMS).load_hint = load
            b.params.load_hint_policy = 2  # FIXED
        params = L.header(L.ExecutionParams(), L.EXECUTION_PARAMS)
        params.device_id = device_id
        params.max_num_cpu_threads = max_threads
        params.pre_init = 1  # the backends' resources made now, not in the first decode call
        gpu = not host and device_id != CPU_ONLY_DEVICE
        self._allocators = attach_allocators(params, allocator if gpu else "default", device_id)
        params.num_backends = len(backends)
        params.backends = chosen
        self._handle = c_void_p()
        lib.check(
            lib.DecoderCreate(lib.instance, byref(self._handle), byref(params), options.encode()),
            "DecoderCreate",
        )
        self._decode_params = L.header(L.DecodeParams(), L.DECODE_PARAMS)
        self._decode_params.apply_exif_orientation = 1
        self.host = host or device_id == CPU_ONLY_DEVICE  # decode into host memory

    def __del__(self) -> None:
        handle = getattr(self, "_handle", None)
        if handle and not _exiting:
            self._lib.DecoderDestroy(handle)

    def decode(
        self,
        streams: StreamBatch,
        index: Sequence[int],
        output_type: str,
        allocate: Any,
        cuda_stream: int = 0,
    ) -> tuple[list[DeviceImage | None], Any]:
        """Decode samples ``index`` of ``streams``; returns their images (None: failed) and buffer.

        ``allocate(nbytes)`` returns the buffer all images go into (a CuPy array on the
        decode stream, or NumPy for host decoding) — one allocation per batch. The three
        steps are public so that callers sharing a decoder hold it only for :meth:`run`.
        """
        job = self.prepare(streams, index, output_type, allocate, cuda_stream)
        return self.finish(job, self.run(job))

    def prepare(
        self,
        streams: StreamBatch,
        index: Sequence[int],
        output_type: str,
        allocate: Any,
        cuda_stream: int = 0,
    ) -> DecodeJob:
        """Allocate the batch's buffer and describe its output images (no decoder needed)."""
        lib = self._lib
        n = len(index)
        c = SAMPLE_FORMATS[output_type][2]
        idx = np.asarray(index, np.int64)
        hw = streams.shapes[idx].copy()
        turned = streams.rotated[idx] % 180 != 0  # 90, 270 or -90 degrees
        hw[turned] = hw[turned][:, ::-1]
        sizes = hw[:, 0] * hw[:, 1] * c
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum((sizes + 255) // 256 * 256, out=offsets[1:])  # images 256-byte aligned
        job = DecodeJob(n, hw, c, offsets)
        if n == 0:
            return job
        job.buffer = buffer = allocate(int(offsets[-1]))
        job.base = buffer.data.ptr if hasattr(buffer.data, "ptr") else buffer.ctypes.data
        infos = np.empty(n * _INFO_SIZE, np.uint8)
        infos.reshape(n, _INFO_SIZE)[:] = _image_template(output_type, self.host)
        _u32(infos, _INFO_HEIGHT, _INFO_SIZE)[:] = hw[:, 0]
        _u32(infos, _INFO_WIDTH, _INFO_SIZE)[:] = hw[:, 1]
        _u64(infos, _INFO_STRIDE, _INFO_SIZE)[:] = hw[:, 1] * c
        _u64(infos, _INFO_BUFFER, _INFO_SIZE)[:] = job.base + offsets[:-1]
        _u64(infos, _INFO_STREAM, _INFO_SIZE)[:] = cuda_stream
        job.sources = streams.handles[idx]  # a copy: uint64, contiguous
        job.images = images = np.zeros(n, np.uint64)
        calls = native.codec_calls
        try:
            if calls is not None:
                job.made, status = calls.codec_images(
                    lib.address["ImageCreate"], lib.instance.value or 0, infos, _INFO_SIZE, images
                )
                lib.check(status, "ImageCreate")
            else:
                info_base = infos.ctypes.data
                handle = c_void_p()
                for k in range(n):
                    handle.value = None
                    lib.check(
                        lib.ImageCreate(lib.instance, byref(handle), info_base + k * _INFO_SIZE),
                        "ImageCreate",
                    )
                    images[k] = handle.value
                    job.made += 1
        except BaseException:
            self.finish(job, None)
            raise
        return job

    def run(self, job: DecodeJob) -> np.ndarray | None:
        """Decode a prepared job (the only step that needs this decoder); per-image statuses."""
        lib = self._lib
        n = job.n
        if n == 0:
            return None
        calls = native.codec_calls
        if calls is not None:  # one GIL release for the four calls (codec_calls.c says why)
            statuses = np.zeros(n, np.uint32)
            stage, status = calls.codec_decode(
                *(lib.address[k] for k in _DECODE_CALLS),
                self._handle.value,
                job.sources,
                job.images,
                ctypes.addressof(self._decode_params),
                statuses,
            )
            lib.check(status, _DECODE_CALLS[stage])
            return statuses
        future = c_void_p()
        lib.check(
            lib.DecoderDecode(
                self._handle,
                job.sources.ctypes.data,
                job.images.ctypes.data,
                n,
                byref(self._decode_params),
                byref(future),
            ),
            "DecoderDecode",
        )
        try:
            lib.check(lib.FutureWaitForAll(future), "FutureWaitForAll")
            statuses = np.zeros(n, np.uint32)
            size = c_size_t(n)
            lib.check(
                lib.FutureGetProcessingStatus(future, statuses.ctypes.data, byref(size)),
                "FutureGetProcessingStatus",
            )
        finally:
            lib.FutureDestroy(future)
        return statuses

    def finish(
        self, job: DecodeJob, statuses: np.ndarray | None
    ) -> tuple[list[DeviceImage | None], Any]:
        """Free the job's image descriptions; its images (None where decoding failed) and buffer."""
        lib = self._lib
        made = job.images[: job.made] if job.made else None
        if made is not None and native.codec_calls is not None:
            native.codec_calls.codec_destroy(lib.address["ImageDestroy"], made)
        elif made is not None:
            for image in made.tolist():
                lib.ImageDestroy(image)
        job.made = 0
        if job.n == 0 or statuses is None:
            return [], job.buffer
        ok = (statuses == L.SUCCESS).tolist()
        ptrs = (job.base + job.offsets[:-1]).tolist()
        c, buffer = job.channels, job.buffer
        shapes = [(h, w, c) for h, w in job.hw.tolist()]
        out = [DeviceImage(buffer, p, s) if good else None for p, s, good in zip(ptrs, shapes, ok)]
        return out, buffer


@functools.lru_cache(maxsize=1)
def _view_template() -> np.ndarray:
    """The bytes of a CodeStreamView with a 2-D region (its corners filled per sample)."""
    template = L.header(L.CodeStreamView(), L.CODE_STREAM_VIEW)
    L.header(template.region, L.REGION)
    template.region.ndim = 2
    out = np.frombuffer(bytes(template), np.uint8).copy()
    out.flags.writeable = False
    return out


@functools.lru_cache(maxsize=16)
def _image_template(output_type: str, host: bool) -> np.ndarray:
    """The bytes of an output ImageInfo of ``output_type`` in host or device memory (sizes
    and buffer filled per image): made once, not per batch."""
    sample_format, color_spec, c = SAMPLE_FORMATS[output_type]
    template = L.header(L.ImageInfo(), L.IMAGE_INFO)
    template.color_spec, template.sample_format, template.num_planes = (
        color_spec,
        sample_format,
        1,
    )
    L.header(template.orientation, L.ORIENTATION)
    plane = L.header(template.plane_info[0], L.IMAGE_PLANE_INFO)
    plane.num_channels, plane.sample_type, plane.precision = c, L.UINT8, 8
    template.buffer_kind = L.HOST_BUFFER if host else L.DEVICE_BUFFER
    out = np.frombuffer(bytes(template), np.uint8).copy()
    out.flags.writeable = False
    return out


# what CodecDecoder.run calls, in the order chute.runtime._native.codec_decode takes them
_DECODE_CALLS = ("DecoderDecode", "FutureWaitForAll", "FutureGetProcessingStatus", "FutureDestroy")


class DecodeJob:
    """A batch prepared for :meth:`CodecDecoder.run`: its buffer and image descriptions."""

    def __init__(self, n: int, hw: np.ndarray, channels: int, offsets: np.ndarray):
        self.n, self.hw, self.channels, self.offsets = n, hw, channels, offsets
        self.buffer: Any = None
        self.base = 0
        self.sources: Any = None
        self.images: Any = None
        self.made = 0  # image descriptions created (and still to destroy)
