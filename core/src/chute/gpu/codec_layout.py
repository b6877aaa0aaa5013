"""The structures of nvImageCodec's C API (``nvimgcodec.h``, 0.9) as ctypes layouts.

Only what :mod:`chute.gpu.codec_api` fills or reads; every structure starts with
(struct_type, struct_size, struct_next), set by :func:`header`.
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char, c_int, c_size_t, c_uint8, c_uint32, c_void_p
from typing import Any

# nvimgcodecStructureType_t values (nvimgcodec.h)
INSTANCE_CREATE_INFO, DECODE_PARAMS, ORIENTATION, REGION, CODE_STREAM_VIEW = 2, 5, 7, 8, 9
DEVICE_ALLOCATOR, PINNED_ALLOCATOR = 3, 4
IMAGE_INFO, IMAGE_PLANE_INFO, BACKEND, BACKEND_PARAMS, EXECUTION_PARAMS = 11, 12, 17, 29, 30
UINT8 = 0x0802  # NVIMGCODEC_SAMPLE_DATA_TYPE_UINT8
DEVICE_BUFFER, HOST_BUFFER = 1, 2
SUCCESS = 1  # NVIMGCODEC_PROCESSING_STATUS_SUCCESS
SAMPLE_FORMATS = {"RGB": (8, 1, 3), "BGR": (10, 1, 3), "GRAY": (4, 2, 1)}  # format, color, channels
BACKENDS = {"cpu": 1, "gpu": 2, "hybrid": 3, "hw": 4}
CPU_ONLY_DEVICE = -99999


class Orientation(ctypes.Structure):
    _fields_ = [
        ("struct_type", c_int),
        ("struct_size", c_size_t),
        ("struct_next", c_void_p),
        ("rotated", c_int),
        ("flip_x", c_int),
        ("flip_y", c_int),
    ]


class PlaneInfo(ctypes.Structure):
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


class OutOfBoundsSample(ctypes.Structure):
    _fields_ = [("value", c_uint32), ("type", c_int)]


class Region(ctypes.Structure):
    _fields_ = [
        ("struct_type", c_int),
        ("struct_size", c_size_t),
        ("struct_next", c_void_p),
        ("ndim", c_int),
        ("start", c_int * 5),
        ("end", c_int * 5),
        ("out_of_bounds_policy", c_int),
        ("out_of_bounds_samples", OutOfBoundsSample * 5),
    ]


class ImageInfo(ctypes.Structure):
    _fields_ = [
        ("struct_type", c_int),
        ("struct_size", c_size_t),
        ("struct_next", c_void_p),
        ("codec_name", c_char * 256),
        ("color_spec", c_int),
        ("chroma_subsampling", c_int),
        ("sample_format", c_int),
        ("orientation", Orientation),
        ("num_planes", c_uint32),
        ("plane_info", PlaneInfo * 32),
        ("buffer", c_void_p),
        ("buffer_kind", c_int),
        ("cuda_stream", c_void_p),
    ]


class CodeStreamView(ctypes.Structure):
    _fields_ = [
        ("struct_type", c_int),
        ("struct_size", c_size_t),
        ("struct_next", c_void_p),
        ("image_idx", c_size_t),
        ("region", Region),
        ("bitstream_offset", c_size_t),
    ]


class BackendParams(ctypes.Structure):
    _fields_ = [
        ("struct_type", c_int),
        ("struct_size", c_size_t),
        ("struct_next", c_void_p),
        ("load_hint", ctypes.c_float),
        ("load_hint_policy", c_int),
    ]


class Backend(ctypes.Structure):
    _fields_ = [
        ("struct_type", c_int),
        ("struct_size", c_size_t),
        ("struct_next", c_void_p),
        ("kind", c_int),
        ("params", BackendParams),
    ]


class DeviceAllocator(ctypes.Structure):
    _fields_ = [
        ("struct_type", c_int),
        ("struct_size", c_size_t),
        ("struct_next", c_void_p),
        ("device_malloc", c_void_p),
        ("device_free", c_void_p),
        ("device_ctx", c_void_p),
        ("device_mem_padding", c_size_t),
    ]


class PinnedAllocator(ctypes.Structure):
    _fields_ = [
        ("struct_type", c_int),
        ("struct_size", c_size_t),
        ("struct_next", c_void_p),
        ("pinned_malloc", c_void_p),
        ("pinned_free", c_void_p),
        ("pinned_ctx", c_void_p),
        ("pinned_mem_padding", c_size_t),
    ]


class ExecutionParams(ctypes.Structure):
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
        ("backends", POINTER(Backend)),
    ]


class InstanceCreateInfo(ctypes.Structure):
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


class DecodeParams(ctypes.Structure):
    _fields_ = [
        ("struct_type", c_int),
        ("struct_size", c_size_t),
        ("struct_next", c_void_p),
        ("apply_exif_orientation", c_int),
    ]


def header(struct: Any, kind: int) -> Any:
    struct.struct_type = kind
    struct.struct_size = ctypes.sizeof(struct)
    return struct


def offset(struct: type, *path: str) -> int:
    """Byte offset of a (nested) field: offset(ImageInfo, "plane_info", "width")."""
    total = 0
    for name in path:
        field = getattr(struct, name)
        total += field.offset
        struct = dict(struct._fields_)[name]
        if hasattr(struct, "_type_") and issubclass(struct, ctypes.Array):
            struct = struct._type_  # first element of an array field
    return total
