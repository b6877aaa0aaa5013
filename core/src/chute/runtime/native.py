"""The one place that decides whether chute's compiled kernels are present.

``chute.runtime._native`` (core/csrc, built by setup.py where a C compiler is found) holds
GIL-free CPU kernels. Each is here as a function, or None where the module was not
built or was built without it (random_crop_window needs 128-bit integers, read_files
POSIX); callers keep a Python path for None. ``_native.pyi`` types the module.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Any

try:
    from chute.runtime import _native as _module
except ImportError:  # pragma: no cover - installed where no C compiler was found
    _module = None

__all__ = [
    "available",
    "codec_calls",
    "jpeg_check_batch",
    "jpeg_module",
    "lut_u8",
    "philox_blocks",
    "random_crop_window",
    "random_crop_windows",
    "read_files",
    "resample_u8",
]


_OFF = set(os.environ.get("CHUTE_NATIVE_OFF", "").replace(" ", "").split(","))


def _kernel(name: str) -> Any:
    """The compiled function ``name``, or None (also where ``CHUTE_NATIVE_OFF`` lists it:
    comma-separated names, for A/B measurements of a kernel against its Python path)."""
    return None if name in _OFF else getattr(_module, name, None)


available: bool = _module is not None
resample_u8 = _kernel("resample_u8")
random_crop_window = _kernel("random_crop_window")
random_crop_windows = _kernel("random_crop_windows")
philox_blocks = _kernel("philox_blocks")
lut_u8 = _kernel("lut_u8")
read_files = _kernel("read_files")
jpeg_check_batch = _kernel("jpeg_check_batch")
# nvImageCodec's per-sample calls, a batch per call (chute.gpu.codec_api): all four or none
codec_calls: ModuleType | None = (
    _module if _module is not None and _kernel("codec_parse") is not None else None
)


def jpeg_module(library_path: str) -> ModuleType | None:
    """The module with its JPEG functions bound to the libturbojpeg at ``library_path``.

    None where it is not built, has no JPEG functions, the library does not load, or
    ``CHUTE_NATIVE_JPEG=0`` asks for the ctypes binding instead (A/B measurements).
    """
    if _module is None or os.environ.get("CHUTE_NATIVE_JPEG") == "0":
        return None
    try:
        _module.jpeg_bind(library_path)
    except (AttributeError, OSError):
        return None
    return _module
