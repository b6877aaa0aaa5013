"""The opt-in nvImageCodec allocators (chute.gpu.codec_setup, codec_calls.c's
codec_allocators), against stand-ins for the CUDA driver's entry points (no GPU needed)."""

import ctypes
import subprocess
import sys
import textwrap

import pytest

from chute.gpu import codec_layout as L
from chute.gpu import codec_setup
from chute.runtime import native

needs_native = pytest.mark.skipif(
    native.codec_calls is None or not hasattr(native.codec_calls, "codec_allocators"),
    reason="chute.runtime._native is not built",
)

# run apart: the compiled functions keep the addresses they are bound to for the process
_STAND_INS = textwrap.dedent(
    """
    import ctypes
    from ctypes import CFUNCTYPE, POINTER, c_int, c_size_t, c_uint, c_uint64, c_void_p
    from chute.runtime import native

    calls = []
    next_address = [0x1000]

    @CFUNCTYPE(c_int, POINTER(c_uint64), c_size_t, c_void_p)
    def alloc_async(ptr, size, stream):
        calls.append(("alloc", size, stream))
        if size > 1 << 40:
            return 2  # CUDA_ERROR_OUT_OF_MEMORY
        ptr[0] = next_address[0]
        next_address[0] += 0x1000
        return 0

    @CFUNCTYPE(c_int, c_uint64, c_void_p)
    def free_async(ptr, stream):
        calls.append(("free", ptr, stream))
        return 0

    @CFUNCTYPE(c_int, POINTER(c_void_p), c_size_t, c_uint)
    def host_alloc(ptr, size, flags):
        calls.append(("host_alloc", size, flags))
        ptr[0] = 0x9000
        return 0

    @CFUNCTYPE(c_int, c_void_p)
    def host_free(ptr):
        calls.append(("host_free", ptr))
        return 0

    address = lambda f: ctypes.cast(f, c_void_p).value
    fns = native.codec_calls.codec_allocators(*map(address, (alloc_async, free_async, host_alloc, host_free)))
    kind = CFUNCTYPE(c_int, c_void_p, POINTER(c_void_p), c_size_t, c_void_p)
    free_kind = CFUNCTYPE(c_int, c_void_p, c_void_p, c_size_t, c_void_p)
    d_malloc, p_malloc = kind(fns[0]), kind(fns[2])
    d_free, p_free = free_kind(fns[1]), free_kind(fns[3])
    out = c_void_p()
    assert d_malloc(None, ctypes.byref(out), 4096, 0x77) == 0 and out.value == 0x1000
    assert d_malloc(None, ctypes.byref(out), 0, None) == 0 and out.value == 0x2000  # 0 bytes: 1
    out.value = 5
    assert d_malloc(None, ctypes.byref(out), 1 << 41, 0x77) == 2 and out.value is None
    assert d_free(None, 0x1000, 4096, 0x77) == 0
    assert d_free(None, None, 0, 0x77) == 0  # nothing to free: the driver is not called
    assert p_malloc(None, ctypes.byref(out), 100, 0x77) == 0 and out.value == 0x9000
    assert p_free(None, 0x9000, 100, 0x77) == 0
    assert calls == [
        ("alloc", 4096, 0x77), ("alloc", 1, None), ("alloc", 1 << 41, 0x77),
        ("free", 0x1000, 0x77), ("host_alloc", 100, 0), ("host_free", 0x9000),
    ], calls
    print("ok")
    """
)


@needs_native
def test_the_compiled_allocators_call_the_drivers_entry_points():
    done = subprocess.run(
        [sys.executable, "-c", _STAND_INS], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


@needs_native
def test_a_null_entry_point_is_refused():
    with pytest.raises(ValueError, match="a driver entry point is null"):
        native.codec_calls.codec_allocators(1, 2, 0, 4)


def test_allocator_structures_carry_the_functions_and_paddings(monkeypatch):
    monkeypatch.setattr(codec_setup, "_functions", lambda: (11, 12, 13, 14))
    kept = []
    monkeypatch.setattr(codec_setup, "_keep_pool", kept.append)
    dev, pinned = codec_setup.allocators(1, device_padding=1 << 20)
    assert kept == [1]
    assert (dev.struct_type, dev.struct_size) == (L.DEVICE_ALLOCATOR, ctypes.sizeof(dev))
    assert (dev.device_malloc, dev.device_free, dev.device_mem_padding) == (11, 12, 1 << 20)
    assert (pinned.struct_type, pinned.pinned_malloc, pinned.pinned_free) == (
        L.PINNED_ALLOCATOR,
        13,
        14,
    )
    assert pinned.pinned_mem_padding == codec_setup.PINNED_PADDING == 8 << 20
    # nvimgcodec.h's layouts: three header fields, two functions, a context, a padding
    assert ctypes.sizeof(L.DeviceAllocator) == ctypes.sizeof(L.PinnedAllocator) == 56
    with pytest.raises(ValueError, match="paddings must be >= 0"):
        codec_setup.allocators(0, pinned_padding=-1)


def test_an_unknown_allocator_is_named():
    from chute.gpu.codec_api import CodecDecoder

    with pytest.raises(ValueError, match="allocator must be 'default' or 'async'; got 'pool'"):
        CodecDecoder(0, [("hw", 1.0)], allocator="pool")
