"""Keep nvImageCodec on the libnvjpeg it was built for when another library brings its own.

nvImageCodec's JPEG extension opens ``libnvjpeg.so.<major>`` by name. A process that has
already loaded a library of that name gets it again, whatever its file: torchvision's
wheels vendor their own copy (``torchvision.libs/libnvjpeg.<hash>.so.13``), and after
``import torchvision`` every GPU JPEG decode of nvImageCodec fails with "encoding
unsupported" (measured on an H200: all samples of a batch, the hardware and the CUDA
backends alike), so chute would decode them on the CPU, ten times slower.

``import chute`` therefore loads the nvidia-nvjpeg wheel's library first (:func:`preload`;
``CHUTE_NVJPEG_PRELOAD=0`` turns it off); the other library keeps its own copy, which it
reaches through its own file name. When chute comes too late, :func:`foreign_nvjpeg` names
the copy that came first so that the GPU decoders can say so once (:func:`warn_once`).
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
import threading
import warnings
from pathlib import Path

__all__ = ["foreign_nvjpeg", "loaded_nvjpeg", "preload", "wheel_nvjpeg", "warn_once"]

# where the nvidia-nvjpeg wheels put the library, by CUDA major version
_WHEEL_PATHS = (
    "cu13/lib/libnvjpeg.so.13",
    "nvjpeg/lib/libnvjpeg.so.12",
    "cu12/lib/libnvjpeg.so.12",
)

_lock = threading.Lock()
_preloaded: list[str] = []
_warned: list[bool] = []


def wheel_nvjpeg() -> list[str]:
    """The libnvjpeg files of the installed nvidia-nvjpeg wheels (none on other platforms)."""
    if not sys.platform.startswith("linux"):
        return []
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    found = []
    for root in (spec.submodule_search_locations or []) if spec else []:
        for rel in _WHEEL_PATHS:
            path = Path(root) / rel
            if path.is_file():
                found.append(str(path))
    return found


def preload() -> list[str]:
    """Load the wheels' libnvjpeg before any other copy can take its name; the files loaded."""
    if os.environ.get("CHUTE_NVJPEG_PRELOAD", "1") == "0":
        return []
    with _lock:
        if _preloaded:
            return list(_preloaded)
        if foreign_nvjpeg() is not None:
            return []  # another copy came first: loading ours now would not help
        for path in wheel_nvjpeg():
            if any(Path(p).name == Path(path).name for p in _preloaded):
                continue  # one file per soname (two nvidia folders on the path: the first)
            try:
                ctypes.CDLL(path)  # its soname now belongs to this file for nvImageCodec
            except OSError:  # its CUDA runtime is missing: nothing to protect then
                continue
            _preloaded.append(path)
        return list(_preloaded)


def loaded_nvjpeg(maps: str = "/proc/self/maps") -> list[str]:
    """The libnvjpeg files mapped into this process, in the order of the map."""
    try:
        with open(maps, encoding="utf-8", errors="replace") as f:
            paths = [line.split()[-1] for line in f if "libnvjpeg" in line and "/" in line]
    except OSError:
        return []
    return list(dict.fromkeys(p for p in paths if Path(p).name.startswith("libnvjpeg")))


def foreign_nvjpeg(maps: str = "/proc/self/maps") -> str | None:
    """A libnvjpeg that is not the wheels' and that nvImageCodec would get, else None."""
    ours = set(wheel_nvjpeg())
    loaded = loaded_nvjpeg(maps)
    if not ours or any(p in ours for p in loaded):
        return None
    return next(iter(loaded), None)


def warn_once() -> None:
    """Warn (once per process) that another library's libnvjpeg keeps JPEGs off the GPU."""
    other = foreign_nvjpeg()
    if other is None or _warned:
        return
    _warned.append(True)
    warnings.warn(
        f"chute: another library loaded its own libnvjpeg ({other}) before chute; "
        "nvImageCodec then cannot decode JPEGs on the GPU and chute decodes them on the CPU, "
        "much slower. Import chute (or chute.torch) before torchvision.",
        RuntimeWarning,
        stacklevel=3,
    )
