"""GPU runtime helpers: lazy CuPy / nvImageCodec imports, device selection, CUDA streams.

Nothing here imports CuPy or nvImageCodec at module load, so ``import chute`` works on a
machine without a GPU; the first GPU operation calls :func:`require_gpu`, which raises a
``RuntimeError`` that names the missing piece and the pip extra that brings it.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from types import ModuleType
from typing import Any

__all__ = [
    "INSTALL_HINT",
    "cupy_module",
    "device_count",
    "device_empty",
    "device_size",
    "gpu_available",
    "nvimgcodec_module",
    "quick_gil_handoff",
    "release_streams",
    "require_gpu",
    "stream_for",
    "use_device",
]

INSTALL_HINT = "pip install chute[cuda13] (CUDA 13 driver) or chute[cuda12] (CUDA 12 driver)"


@functools.cache
def _import_cupy() -> ModuleType | None:
    try:
        import cupy
    except Exception:  # an installed but broken CuPy (no libcuda) counts as missing
        return None
    return cupy


@functools.cache
def _import_nvimgcodec() -> ModuleType | None:
    try:
        from nvidia import nvimgcodec
    except Exception:
        return None
    return nvimgcodec


def device_count() -> int:
    """Return how many CUDA devices CuPy sees (0 without CuPy or a driver)."""
    cupy = _import_cupy()
    if cupy is None:
        return 0
    try:
        return int(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def gpu_available() -> bool:
    """Return True when CuPy imports and at least one CUDA device is visible."""
    return device_count() > 0


def require_gpu(what: str, *, codec: bool = False, device_id: int | None = None) -> ModuleType:
    """Return the cupy module, or raise RuntimeError saying what ``what`` is missing."""
    cupy = _import_cupy()
    if cupy is None:
        raise RuntimeError(
            f"{what} needs CuPy, which is not installed or failed to load: {INSTALL_HINT}"
        )
    n = device_count()
    if n == 0:
        raise RuntimeError(
            f"{what} needs an NVIDIA GPU, but CuPy sees no CUDA device (driver missing or "
            "CUDA_VISIBLE_DEVICES empty)"
        )
    if device_id is not None and not 0 <= device_id < n:
        raise RuntimeError(
            f"{what}: device_id={device_id} is out of range; {n} CUDA device(s) visible"
        )
    if codec and _import_nvimgcodec() is None:
        raise RuntimeError(
            f"{what} needs NVIDIA nvImageCodec (package nvidia-nvimgcodec-cu13 / -cu12), which is "
            f"not installed or failed to load: {INSTALL_HINT}"
        )
    return cupy


def cupy_module() -> ModuleType:
    """Return cupy, raising the install hint when it is missing."""
    return require_gpu("chute's GPU path")


def nvimgcodec_module() -> ModuleType:
    """Return nvidia.nvimgcodec, raising the install hint when it is missing."""
    require_gpu("GPU image decoding", codec=True)
    module = _import_nvimgcodec()
    assert module is not None
    return module


def _size_steps() -> int:
    text = os.environ.get("CHUTE_GPU_SIZE_STEPS", "8")
    try:
        steps = int(text)
    except ValueError:
        steps = -1
    if steps < 0:
        raise ValueError(f"CHUTE_GPU_SIZE_STEPS must be an int >= 0 (0: exact sizes), got {text!r}")
    return steps


# Steps per doubling of the sizes chute's variable-sized GPU buffers take from CuPy's pool
# (a batch's decoded images, ragged kernel outputs, CPU-decoded uploads); 0 allocates exact
# sizes (CHUTE_GPU_SIZE_STEPS, for A/B runs). The pool hands a freed block out again only for
# a request no larger than it, and keeps freed blocks per stream: a buffer a little larger
# than the last batch's took new device memory while the old block stayed in the pool. On a
# grid of 8 steps per doubling (at most 1/8 more than asked, 1 MiB steps at least) the next
# batches' buffers mostly fit the block the previous one freed.
SIZE_STEPS = _size_steps()
_MIN_STEP = 1 << 20


def device_size(nbytes: int, steps: int | None = None) -> int:
    """``nbytes`` rounded up to the allocation grid (:data:`SIZE_STEPS` per doubling)."""
    steps = SIZE_STEPS if steps is None else steps
    if steps <= 0 or nbytes <= _MIN_STEP:
        return nbytes
    step = max((1 << (nbytes.bit_length() - 1)) // steps, _MIN_STEP)
    return -(-nbytes // step) * step


def device_empty(cupy: ModuleType, count: int, dtype: Any, exact: bool = False) -> Any:
    """A 1-D CuPy array of ``count`` elements in a block of :func:`device_size` bytes (on the
    current device and stream), for buffers whose size changes from batch to batch;
    ``exact`` (a batch of one shape, the same size every batch) takes just ``count``."""
    itemsize = cupy.dtype(dtype).itemsize
    whole = count if exact else -(-device_size(count * itemsize) // itemsize)
    return cupy.empty(whole, dtype)[:count]


def use_device(device_id: int) -> Any:
    """Return a context manager that makes ``device_id`` current in this thread."""
    cupy = require_gpu("chute's GPU path", device_id=device_id)
    return cupy.cuda.Device(device_id)


_streams: dict[tuple[int, object], Any] = {}
_streams_lock = threading.Lock()


def stream_for(owner: object, device_id: int = 0) -> Any:
    """Return the non-blocking CUDA stream of ``owner`` (a pipeline) on ``device_id``.

    One stream per (owner, device), created on first use, so that two pipelines never
    serialize on each other's work and none of them uses the legacy default stream.
    """
    cupy = require_gpu("chute's GPU path", device_id=device_id)
    key = (device_id, owner)
    with _streams_lock:
        stream = _streams.get(key)
        if stream is None:
            with cupy.cuda.Device(device_id):
                stream = cupy.cuda.Stream(non_blocking=True)
            _streams[key] = stream
        return stream


def release_streams(owner: object) -> None:
    """Forget the streams of ``owner`` (call when a pipeline is torn down)."""
    with _streams_lock:
        for key in [k for k in _streams if k[1] is owner]:
            del _streams[key]


def quick_gil_handoff(interval: float | None) -> None:
    """Lower the interpreter's switch interval to ``interval`` seconds (never raise it).

    GPU decoders call it with Tuning.switch_interval (chute.runtime.tuning says why);
    None leaves the interval alone.
    """
    if interval is not None and sys.getswitchinterval() > interval:
        sys.setswitchinterval(interval)
