"""How chute's nvImageCodec decoders are made: their options string and (opt-in) allocators.

``codec_options`` writes the options a BatchDecoder asks of nvImageCodec's decoders.

Allocators: by default nvImageCodec's nvJPEG decoders allocate with cudaMalloc / cudaFree, and a
cudaFree waits for the whole device. DALI hands nvImageCodec stream-ordered pools
instead, with 16 MiB of device and 8 MiB of host padding per allocation; on an H100 host
DALI with every JPEG on the hardware decoder decoded 10-18% more images per second than
chute did (bench/README.md, session 16). ``allocators(device_id)`` gives the structures
for ``nvimgcodecExecutionParams_t``: device memory from the device's default memory pool
(``cuMemAllocAsync`` / ``cuMemFreeAsync``, its release threshold raised so freed memory stays
in the pool) and page-locked host memory (``cuMemHostAlloc`` / ``cuMemFreeHost``). The
functions themselves are compiled (codec_calls.c, ``codec_allocators``): nvImageCodec calls
them from its own threads, without the GIL.
"""

from __future__ import annotations

import ctypes
import functools
from ctypes import byref, c_int, c_uint64, c_void_p

from chute.gpu import codec_layout as L
from chute.runtime import native

__all__ = [
    "DEVICE_PADDING",
    "PINNED_PADDING",
    "allocators",
    "attach_allocators",
    "codec_options",
]


# the decoder settings codec_options writes, in the order it writes them, with the
# nvImageCodec plugin each is for
_PLUGIN_OPTIONS = {
    "preallocate_batch_size": "nvjpeg_hw_decoder",
    "preallocate_width_hint": "nvjpeg_hw_decoder",
    "preallocate_height_hint": "nvjpeg_hw_decoder",
    "hybrid_huffman_threshold": "nvjpeg_cuda_decoder",
}


def codec_options(fancy_upsampling: bool, options: str = "", **settings: int | None) -> str:
    """nvImageCodec's options string for a BatchDecoder's decoders: chroma upsampling, the
    hardware decoder's pre-allocation (``preallocate_batch_size``, ``preallocate_width_hint``,
    ``preallocate_height_hint``; 0 leaves one out), the CUDA decoder's
    ``hybrid_huffman_threshold`` (None: nvImageCodec's) and the caller's ``options`` last."""
    unknown = settings.keys() - _PLUGIN_OPTIONS.keys()
    if unknown:
        raise TypeError(f"unknown decoder option {sorted(unknown)[0]!r}")
    parts = [":fancy_upsampling=1"] if fancy_upsampling else []
    for name, plugin in _PLUGIN_OPTIONS.items():
        value = settings.get(name)
        if value is None:
            continue
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ValueError(f"{name} must be an int >= 0; got {value!r}")
        if value or name == "hybrid_huffman_threshold":  # a threshold of 0 means something
            parts.append(f"{plugin}:{name}={value}")
    return " ".join([*parts, options] if options else parts)


DEVICE_PADDING = 16 << 20  # DALI's device_memory_padding default
PINNED_PADDING = 8 << 20  # DALI's host_memory_padding default
_RELEASE_THRESHOLD = 4  # CU_MEMPOOL_ATTR_RELEASE_THRESHOLD


@functools.cache
def _driver() -> ctypes.CDLL:
    return ctypes.CDLL("libcuda.so.1")


@functools.cache
def _functions() -> tuple[int, int, int, int]:
    """The compiled allocator functions, bound to this process's libcuda."""
    if native.codec_calls is None or not hasattr(native.codec_calls, "codec_allocators"):
        raise RuntimeError("the 'async' nvImageCodec allocator needs chute's compiled module")
    cuda = _driver()
    names = ("cuMemAllocAsync", "cuMemFreeAsync", "cuMemHostAlloc", "cuMemFreeHost")
    addresses = [ctypes.cast(getattr(cuda, name), c_void_p).value or 0 for name in names]
    return native.codec_calls.codec_allocators(*addresses)


@functools.cache
def _keep_pool(device_id: int) -> None:
    """Raise the device's default pool's release threshold: what nvJPEG frees stays there."""
    cuda = _driver()
    device, pool = c_int(), c_void_p()
    for call, args in (
        ("cuDeviceGet", (byref(device), c_int(device_id))),
        ("cuDeviceGetDefaultMemPool", (byref(pool), device)),
        ("cuMemPoolSetAttribute", (pool, c_int(_RELEASE_THRESHOLD), byref(c_uint64(2**64 - 1)))),
    ):
        status = getattr(cuda, call)(*args)
        if status != 0:
            raise RuntimeError(f"{call} failed with CUDA driver status {status}")


def allocators(
    device_id: int, device_padding: int = DEVICE_PADDING, pinned_padding: int = PINNED_PADDING
) -> tuple[L.DeviceAllocator, L.PinnedAllocator]:
    """The allocator structures for a decoder on ``device_id`` (keep them alive with it)."""
    if device_padding < 0 or pinned_padding < 0:
        raise ValueError("allocator paddings must be >= 0 bytes")
    device_malloc, device_free, pinned_malloc, pinned_free = _functions()
    _keep_pool(device_id)
    dev = L.header(L.DeviceAllocator(), L.DEVICE_ALLOCATOR)
    dev.device_malloc, dev.device_free = device_malloc, device_free
    dev.device_mem_padding = device_padding
    pinned = L.header(L.PinnedAllocator(), L.PINNED_ALLOCATOR)
    pinned.pinned_malloc, pinned.pinned_free = pinned_malloc, pinned_free
    pinned.pinned_mem_padding = pinned_padding
    return dev, pinned


def attach_allocators(params: L.ExecutionParams, allocator: str, device_id: int) -> tuple:
    """Give a GPU decoder's ``params`` the ``allocator``'s structures ("async":
    :func:`allocators`; anything else: none, nvJPEG's own cudaMalloc / cudaFree); the decoder
    keeps what this returns."""
    if allocator != "async":
        return ()
    kept = allocators(device_id)
    params.device_allocator = ctypes.addressof(kept[0])
    params.pinned_allocator = ctypes.addressof(kept[1])
    return kept
