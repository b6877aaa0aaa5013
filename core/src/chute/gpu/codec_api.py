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
sample costs a few foreign calls and no Python objects besides its output view.
"""

from __future__ import annotations

import atexit
import ctypes
import functools
import os
import threading
from collections.abc import Sequence
from ctypes import POINTER, byref, c_char, c_int, c_size_t, c_uint8, c_uint32, c_void_p
from typing import Any

import numpy as np

__all__ = ["CodecDecoder", "DeviceImage", "StreamBatch", "api", "parse_batch"]

# nvimgcodecStructureType_t values (nvimgcodec.h)
_INSTANCE_CREATE_INFO, _DECODE_PARAMS, _ORIENTATION, _REGION, _CODE_STREAM_VIEW = 2, 5, 7, 8, 9
_IMAGE_INFO, _IMAGE_PLANE_INFO, _BACKEND, _BACKEND_PARAMS, _EXECUTION_PARAMS = 11, 12, 17, 29, 30
_UINT8 = 0x0802  # NVIMGCODEC_SAMPLE_DATA_TYPE_UINT8
_DEVICE_BUFFER, _HOST_BUFFER = 1, 2
_SUCCESS = 1  # NVIMGCODEC_PROCESSING_STATUS_SUCCESS
SAMPLE_FORMATS = {"RGB": (8, 1, 3), "BGR": (10, 1, 3), "GRAY": (4, 2, 1)}  # format, color, channels
BACKENDS = {"cpu": 1, "gpu": 2, "hybrid": 3, "hw": 4}
CPU_ONLY_DEVICE = -99999


class _Orientation(ctypes.Structure):
    _fields_ = [
        ("struct_type", c_int),
        ("struct_size", c_size_t),
        ("struct_next", c_void_p),
        ("rotated", c_int),
        ("flip_x", c_int),
        ("flip_y", c_int),
    ]


class _PlaneInfo(ctypes.Structure):
    _fields_ = [
        ("struct_type", c_int),
        ("struct_size", c_size_t),
        ("struct_next", c_void_p),
        ("width", c_uint32),
        ("height", c_uint32),
        ("row_stride", c_size_t),
        ("num_channels", c_uint32),
        ("sample_type", c_int),
        ("precision", c_uint8),
    ]


class _OutOfBoundsSample(ctypes.Structure):
    _fields_ = [("value", c_uint32), ("type", c_int)]


class _Region(ctypes.Structure):
    _fields_ = [
        ("struct_type", c_int),
        ("struct_size", c_size_t),
        ("struct_next", c_void_p),
        ("ndim", c_int),
        ("start", c_int * 5),
        ("end", c_int * 5),
        ("out_of_bounds_policy", c_int),
        ("out_of_bounds_samples", _OutOfBoundsSample * 5),
    ]


class _ImageInfo(ctypes.Structure):
    _fields_ = [
        ("struct_type", c_int),
        ("struct_size", c_size_t),
        ("struct_next", c_void_p),
        ("codec_name", c_char * 256),
        ("color_spec", c_int),
        ("chroma_subsampling", c_int),
        ("sample_format", c_int),
        ("orientation", _Orientation),
        ("num_planes", c_uint32),
        ("plane_info", _PlaneInfo * 32),
        ("buffer", c_void_p),
        ("buffer_kind", c_int),
        ("cuda_stream", c_void_p),
    ]


class _CodeStreamView(ctypes.Structure):
    _fields_ = [
        ("struct_type", c_int),
        ("struct_size", c_size_t),
        ("struct_next", c_void_p),
        ("image_idx", c_size_t),
        ("region", _Region),
        ("bitstream_offset", c_size_t),
    ]


class _BackendParams(ctypes.Structure):
    _fields_ = [
        ("struct_type", c_int),
        ("struct_size", c_size_t),
        ("struct_next", c_void_p),
        ("load_hint", ctypes.c_float),
        ("load_hint_policy", c_int),
    ]


class _Backend(ctypes.Structure):
    _fields_ = [
        ("struct_type", c_int),
        ("struct_size", c_size_t),
        ("struct_next", c_void_p),
        ("kind", c_int),
        ("params", _BackendParams),
    ]


class _ExecutionParams(ctypes.Structure):
    _fields_ = [
        ("struct_type", c_int),
        ("struct_size", c_size_t),
        ("struct_next", c_void_p),
        ("device_allocator", c_void_p),
        ("pinned_allocator", c_void_p),
        ("max_num_cpu_threads", c_int),
        ("executor", c_void_p),
        ("device_id", c_int),
        ("pre_init", c_int),
        ("skip_pre_sync", c_int),
        ("num_backends", c_int),
        ("backends", POINTER(_Backend)),
    ]


class _InstanceCreateInfo(ctypes.Structure):
    _fields_ = [
        ("struct_type", c_int),
        ("struct_size", c_size_t),
        ("struct_next", c_void_p),
        ("load_builtin_modules", c_int),
        ("load_extension_modules", c_int),
        ("extension_modules_path", ctypes.c_char_p),
        ("create_debug_messenger", c_int),
        ("debug_messenger_desc", c_void_p),
        ("message_severity", c_uint32),
        ("message_category", c_uint32),
    ]


class _DecodeParams(ctypes.Structure):
    _fields_ = [
        ("struct_type", c_int),
        ("struct_size", c_size_t),
        ("struct_next", c_void_p),
        ("apply_exif_orientation", c_int),
    ]


def _header(struct: Any, kind: int) -> Any:
    struct.struct_type = kind
    struct.struct_size = ctypes.sizeof(struct)
    return struct


def _offset(struct: type, *path: str) -> int:
    """Byte offset of a (nested) field: _offset(_ImageInfo, "plane_info", "width")."""
    total = 0
    for name in path:
        field = getattr(struct, name)
        total += field.offset
        struct = dict(struct._fields_)[name]
        if hasattr(struct, "_type_") and issubclass(struct, ctypes.Array):
            struct = struct._type_  # first element of an array field
    return total


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
        for name, (lib, args) in sigs.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, c_int
            setattr(self, name[len("nvimgcodec") :], fn)
        info = _header(_InstanceCreateInfo(), _INSTANCE_CREATE_INFO)
        info.load_builtin_modules = 1
        info.load_extension_modules = 1
        info.extension_modules_path = extensions.encode()
        self.instance = c_void_p()
        self.check(self.InstanceCreate(byref(self.instance), byref(info)), "InstanceCreate")
        self.lock = threading.Lock()

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


_INFO_SIZE = ctypes.sizeof(_ImageInfo)
_INFO_WIDTH = _offset(_ImageInfo, "plane_info", "width")
_INFO_HEIGHT = _offset(_ImageInfo, "plane_info", "height")
_INFO_CHANNELS = _offset(_ImageInfo, "plane_info", "num_channels")
_INFO_ROTATED = _offset(_ImageInfo, "orientation", "rotated")
_INFO_STRIDE = _offset(_ImageInfo, "plane_info", "row_stride")
_INFO_BUFFER = _offset(_ImageInfo, "buffer")
_INFO_STREAM = _offset(_ImageInfo, "cuda_stream")
_VIEW_SIZE = ctypes.sizeof(_CodeStreamView)
_VIEW_START = _offset(_CodeStreamView, "region", "start")
_VIEW_END = _offset(_CodeStreamView, "region", "end")


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
        self.keep: list[Any] = []  # the encoded bytes: code streams point into them

    def sub_streams(self, regions: Sequence[Any]) -> StreamBatch:
        """Code streams of the regions ``(y0, x0, y1, x1)`` (None: the whole image)."""
        lib = api()
        n = len(regions)
        out = StreamBatch(n)
        out.keep = [self]
        out.shapes[:] = self.shapes
        out.rotated[:] = self.rotated
        views = np.zeros(n * _VIEW_SIZE, np.uint8)
        template = _header(_CodeStreamView(), _CODE_STREAM_VIEW)
        _header(template.region, _REGION)
        template.region.ndim = 2
        views.reshape(n, _VIEW_SIZE)[:] = np.frombuffer(bytes(template), np.uint8)
        boxes = np.array([r if r is not None else (0, 0, 0, 0) for r in regions], np.int32)
        starts, ends = (
            _i32(views, _VIEW_START, _VIEW_SIZE, 2),
            _i32(views, _VIEW_END, _VIEW_SIZE, 2),
        )
        starts[:] = boxes[:, :2]
        ends[:] = boxes[:, 2:]
        base = views.ctypes.data
        handle = c_void_p()
        for i, region in enumerate(regions):
            if not self.handles[i]:
                continue
            if region is None:
                out.handles[i] = self.handles[i]
                continue
            handle.value = None  # a non-null handle would be re-initialised, not a new one
            status = lib.CodeStreamGetSubCodeStream(
                int(self.handles[i]), byref(handle), base + i * _VIEW_SIZE
            )
            if status == 0:
                out.handles[i] = handle.value
                out.shapes[i] = (region[2] - region[0], region[3] - region[1])
        out._owned = [i for i, r in enumerate(regions) if r is not None and out.handles[i]]
        return out

    _owned: list[int] | None = None  # indices whose handles this batch frees (None: all)

    def __del__(self) -> None:
        if _exiting:  # the library may be gone already
            return
        try:
            destroy = api().CodeStreamDestroy
        except Exception:
            return
        owned = range(len(self.handles)) if self._owned is None else self._owned
        for i in owned:
            if self.handles[i]:
                destroy(int(self.handles[i]))


def parse_batch(encoded: Sequence[Any]) -> StreamBatch:
    """Parse every sample's header; a sample that does not parse keeps handle 0 and shape 0."""
    lib = api()
    n = len(encoded)
    batch = StreamBatch(n)
    infos = np.zeros(n * _INFO_SIZE, np.uint8)
    template = np.frombuffer(bytes(_header(_ImageInfo(), _IMAGE_INFO)), np.uint8)
    infos.reshape(n, _INFO_SIZE)[:] = template
    base = infos.ctypes.data
    handle = c_void_p()
    instance = lib.instance
    for i, data in enumerate(encoded):
        arr = data if isinstance(data, np.ndarray) else np.frombuffer(memoryview(data), np.uint8)
        if arr.size == 0:
            continue
        batch.keep.append(arr)
        handle.value = None  # a non-null handle would be re-initialised, not a new one
        if lib.CodeStreamCreateFromHostMem(
            instance, byref(handle), arr.ctypes.data, arr.size, None
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
    into host memory (what CPU backends write).
    """

    def __init__(
        self,
        device_id: int,
        backends: Sequence[tuple[str, float]],
        max_threads: int = 0,
        options: str = "",
        host: bool = False,
    ):
        lib = self._lib = api()
        chosen = (_Backend * len(backends))()
        for b, (kind, load) in zip(chosen, backends):
            _header(b, _BACKEND).kind = BACKENDS[kind]
            _header(b.params, _BACKEND_PARAMS).load_hint = load
            b.params.load_hint_policy = 2  # FIXED
        params = _header(_ExecutionParams(), _EXECUTION_PARAMS)
        params.device_id = device_id
        params.max_num_cpu_threads = max_threads
        params.num_backends = len(backends)
        params.backends = chosen
        self._handle = c_void_p()
        lib.check(
            lib.DecoderCreate(lib.instance, byref(self._handle), byref(params), options.encode()),
            "DecoderCreate",
        )
        self._decode_params = _header(_DecodeParams(), _DECODE_PARAMS)
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
        decode stream, or NumPy for host decoding) — one allocation per batch.
        """
        lib = self._lib
        n = len(index)
        if n == 0:
            return [], None
        sample_format, color_spec, c = SAMPLE_FORMATS[output_type]
        idx = np.asarray(index, np.int64)
        hw = streams.shapes[idx].copy()
        turned = np.isin(streams.rotated[idx], (90, 270, -90))
        hw[turned] = hw[turned][:, ::-1]
        sizes = hw[:, 0] * hw[:, 1] * c
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum((sizes + 255) // 256 * 256, out=offsets[1:])  # 256-byte aligned rows
        buffer = allocate(int(offsets[-1]))
        base_ptr = buffer.data.ptr if hasattr(buffer.data, "ptr") else buffer.ctypes.data
        template = _header(_ImageInfo(), _IMAGE_INFO)
        template.color_spec, template.sample_format, template.num_planes = (
            color_spec,
            sample_format,
            1,
        )
        _header(template.orientation, _ORIENTATION)
        plane = _header(template.plane_info[0], _IMAGE_PLANE_INFO)
        plane.num_channels, plane.sample_type, plane.precision = c, _UINT8, 8
        template.buffer_kind = _HOST_BUFFER if self.host else _DEVICE_BUFFER
        infos = np.zeros(n * _INFO_SIZE, np.uint8)
        infos.reshape(n, _INFO_SIZE)[:] = np.frombuffer(bytes(template), np.uint8)
        _u32(infos, _INFO_HEIGHT, _INFO_SIZE)[:] = hw[:, 0]
        _u32(infos, _INFO_WIDTH, _INFO_SIZE)[:] = hw[:, 1]
        _u64(infos, _INFO_STRIDE, _INFO_SIZE)[:] = hw[:, 1] * c
        _u64(infos, _INFO_BUFFER, _INFO_SIZE)[:] = base_ptr + offsets[:-1]
        _u64(infos, _INFO_STREAM, _INFO_SIZE)[:] = cuda_stream
        images = (c_void_p * n)()
        srcs = (c_void_p * n)(*streams.handles[idx].tolist())
        info_base = infos.ctypes.data
        made = 0
        try:
            for k in range(n):
                handle = c_void_p()
                lib.check(
                    lib.ImageCreate(lib.instance, byref(handle), info_base + k * _INFO_SIZE),
                    "ImageCreate",
                )
                images[k] = handle.value
                made += 1
            future = c_void_p()
            lib.check(
                lib.DecoderDecode(
                    self._handle, srcs, images, n, byref(self._decode_params), byref(future)
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
        finally:
            for k in range(made):
                lib.ImageDestroy(images[k])
        ok = (statuses == _SUCCESS).tolist()
        ptrs = (base_ptr + offsets[:-1]).tolist()
        shapes = [(h, w, c) for h, w in hw.tolist()]
        out = [DeviceImage(buffer, p, s) if good else None for p, s, good in zip(ptrs, shapes, ok)]
        return out, buffer
