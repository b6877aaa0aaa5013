"""chute.runtime._native.codec_*: nvImageCodec's per-sample calls as one GIL-free loop a batch.

The loops are checked against stand-in C functions (ctypes callbacks that record what they
were given), so they run without nvImageCodec; where nvImageCodec is installed (its CPU
backend needs no GPU), parse, sub-streams and decode agree with the ctypes path.
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_int, c_size_t, c_void_p

import numpy as np
import pytest

from chute.runtime import native

calls = native.codec_calls
pytestmark = pytest.mark.skipif(calls is None, reason="chute.runtime._native is not built")

CREATE = ctypes.CFUNCTYPE(c_int, c_void_p, POINTER(c_void_p), c_void_p, c_size_t, c_void_p)
INFO = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p)
SUB = ctypes.CFUNCTYPE(c_int, c_void_p, POINTER(c_void_p), c_void_p)
IMAGE = ctypes.CFUNCTYPE(c_int, c_void_p, POINTER(c_void_p), c_void_p)
DESTROY = ctypes.CFUNCTYPE(c_int, c_void_p)


def address(fn) -> int:
    return ctypes.cast(fn, c_void_p).value


def test_parse_keeps_the_streams_whose_header_reads_and_frees_the_others():
    made, destroyed, seen = [], [], []

    @CREATE
    def create(instance, out, data, length, view):
        seen.append((instance, length))
        if length == 7:  # not an image: no stream
            return 3
        out[0] = 1000 + len(made)
        made.append(data)
        return 0

    @INFO
    def info(stream, record):
        if stream == 1001:  # the second stream's header is refused
            return 5
        ctypes.c_uint32.from_address(record).value = stream - 1000 + 40
        return 0

    @DESTROY
    def destroy(stream):
        destroyed.append(stream)
        return 0

    buffers = [np.full(5, 1, np.uint8), b"7bytes!", bytearray(6), b"", memoryview(b"8 bytes!")]
    ptrs = [
        np.frombuffer(b, np.uint8).__array_interface__["data"][0] if len(b) else 0 for b in buffers
    ]
    infos = np.zeros(5 * 16, np.uint8)
    handles = np.full(5, 99, np.uint64)  # overwritten, zero where nothing was kept
    calls.codec_parse(
        address(create), address(info), address(destroy), 77, buffers, infos, 16, handles
    )
    assert seen == [(77, 5), (77, 7), (77, 6), (77, 8)]  # the empty buffer is never parsed
    assert made == [ptrs[0], ptrs[2], ptrs[4]]  # each buffer's own memory, not a copy
    assert handles.tolist() == [1000, 0, 0, 0, 1002]
    assert destroyed == [1001]
    assert infos.view(np.uint32).reshape(5, 4)[:, 0].tolist() == [40, 0, 0, 0, 42]


def test_sub_streams_fill_the_unset_entries_of_the_streams_that_exist():
    given = []

    @SUB
    def sub(stream, out, view):
        given.append((stream, ctypes.c_int32.from_address(view).value))
        if stream == 3:
            return 1
        out[0] = stream * 10
        return 0

    handles = np.array([1, 2, 0, 3, 4], np.uint64)
    views = np.arange(5, dtype=np.int32).repeat(2).view(np.uint8)  # 8-byte records
    out = np.array([0, 2, 0, 0, 0], np.uint64)  # sample 1 has no region: its stream is set
    calls.codec_sub_streams(address(sub), handles, views, 8, out)
    assert given == [(1, 0), (3, 3), (4, 4)]
    assert out.tolist() == [10, 2, 0, 0, 40]


def test_images_stop_at_the_first_failure_and_say_how_many_exist():
    @IMAGE
    def create(instance, out, record):
        k = ctypes.c_int32.from_address(record).value
        if k == 3:
            return 8
        out[0] = 500 + k
        return 0

    infos = np.arange(6, dtype=np.int32).repeat(2).view(np.uint8)
    images = np.zeros(6, np.uint64)
    assert calls.codec_images(address(create), 1, infos, 8, images) == (3, 8)
    assert images.tolist() == [500, 501, 502, 0, 0, 0]
    images = np.zeros(3, np.uint64)
    assert calls.codec_images(address(create), 1, infos, 8, images) == (3, 0)


def test_destroy_frees_each_non_zero_handle_once():
    freed = []

    @DESTROY
    def destroy(handle):
        freed.append(handle)
        return 0

    calls.codec_destroy(address(destroy), np.array([5, 0, 6, 0], np.uint64))
    assert freed == [5, 6]


DECODE = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, c_void_p, c_int, c_void_p, POINTER(c_void_p))
STATUSES = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, POINTER(c_size_t))


def _decode_stand_ins(decode_status=0, wait_status=0, future=0x51):
    """DecoderDecode / FutureWaitForAll / GetProcessingStatus / FutureDestroy that record calls."""
    log = []

    @DECODE
    def decode(decoder, streams, images, n, params, out):
        got = np.ctypeslib.as_array(ctypes.cast(streams, POINTER(ctypes.c_uint64)), (n,))
        log.append(("decode", decoder, got.tolist(), n, ctypes.c_int32.from_address(params).value))
        out[0] = future
        return decode_status

    @DESTROY
    def wait(f):
        log.append(("wait", f))
        return wait_status

    @STATUSES
    def statuses(f, out, size):
        log.append(("statuses", f, size[0]))
        for k in range(size[0]):
            ctypes.c_uint32.from_address(out + 4 * k).value = 10 + k
        return 0

    @DESTROY
    def destroy(f):
        log.append(("destroy", f))
        return 0

    fns = (decode, wait, statuses, destroy)  # kept alive by the caller
    return fns, [address(f) for f in fns], log


def test_decode_waits_reads_every_status_and_frees_the_future():
    fns, addrs, log = _decode_stand_ins()
    params = ctypes.c_int32(33)
    out = np.zeros(3, np.uint32)
    sources, images = np.array([7, 8, 9], np.uint64), np.array([1, 2, 3], np.uint64)
    stage_status = calls.codec_decode(*addrs, 0xD0, sources, images, ctypes.addressof(params), out)
    assert stage_status == (2, 0)
    assert log == [
        ("decode", 0xD0, [7, 8, 9], 3, 33),
        ("wait", 0x51),
        ("statuses", 0x51, 3),
        ("destroy", 0x51),
    ]
    assert out.tolist() == [10, 11, 12]


@pytest.mark.parametrize(
    ("decode_status", "wait_status", "future", "expected", "steps"),
    [
        (4, 0, 0, (0, 4), ["decode"]),  # no future made: nothing to free
        (4, 0, 0x51, (0, 4), ["decode", "destroy"]),  # a future made before the failure is freed
        (0, 6, 0x51, (1, 6), ["decode", "wait", "destroy"]),  # no statuses read after a failed wait
    ],
)
def test_decode_names_the_failed_step_and_still_frees_the_future(
    decode_status, wait_status, future, expected, steps
):
    fns, addrs, log = _decode_stand_ins(decode_status, wait_status, future)
    params = ctypes.c_int32(0)
    out = np.full(2, 99, np.uint32)
    ones = np.ones(2, np.uint64)
    got = calls.codec_decode(*addrs, 1, ones, ones, ctypes.addressof(params), out)
    assert got == expected
    assert [entry[0] for entry in log] == steps
    assert out.tolist() == [99, 99]


def test_mismatched_arrays_are_refused_before_any_call():
    @DESTROY
    def never(handle):  # pragma: no cover - must not be called
        raise AssertionError

    with pytest.raises(ValueError, match="8-byte"):
        calls.codec_destroy(address(never), np.zeros(3, np.uint32))
    with pytest.raises(ValueError, match="disagree"):
        calls.codec_images(address(never), 0, np.zeros(8, np.uint8), 8, np.zeros(2, np.uint64))
    with pytest.raises(ValueError, match="disagree"):
        calls.codec_parse(
            *(address(never),) * 3,
            0,
            [b"ab", b"cd"],
            np.zeros(32, np.uint8),
            16,
            np.zeros(3, np.uint64),
        )
    decode = (address(never),) * 4
    ones = np.ones(2, np.uint64)
    with pytest.raises(ValueError, match="disagree"):  # statuses must be 4 bytes an image
        calls.codec_decode(*decode, 1, ones, ones, 8, np.zeros(2, np.uint64))
    with pytest.raises(ValueError, match="disagree"):
        calls.codec_decode(*decode, 1, ones, np.ones(3, np.uint64), 8, np.zeros(2, np.uint32))
    with pytest.raises(ValueError, match="8-byte"):
        calls.codec_decode(*decode, 1, np.ones(2, np.uint32), ones, 8, np.zeros(2, np.uint32))
    strided = np.zeros(8, np.uint8)[::2]
    with pytest.raises((BufferError, ValueError), match="contiguous"):
        calls.codec_parse(
            *(address(never),) * 3, 0, [strided], np.zeros(16, np.uint8), 16, np.zeros(1, np.uint64)
        )


def _jpegs():
    cv2 = pytest.importorskip("cv2")
    rng = np.random.default_rng(0)
    out = []
    for _ in range(12):
        h, w = rng.integers(40, 200, 2)
        image = cv2.GaussianBlur(rng.integers(0, 255, (h, w, 3), np.uint8), (5, 5), 2)
        out.append(cv2.imencode(".jpg", image)[1].ravel())
    out[3] = np.zeros(0, np.uint8)
    out[4] = np.repeat(out[4], 2)[::2]  # a strided sample
    out[5] = np.frombuffer(b"not an image" * 4, np.uint8)
    out[7] = out[7][:40]  # a header cut short
    return out


def _decode_all(codec_api, buffers):
    """Parse, cut 20x24 regions of every other image, decode on nvImageCodec's CPU backend."""
    streams = codec_api.parse_batch(buffers)
    regions = [None if i % 2 else (2, 3, 22, 27) for i in range(len(buffers))]
    sub = streams.sub_streams(regions)
    decoder = codec_api.CodecDecoder(codec_api.CPU_ONLY_DEVICE, [("cpu", 1.0)], 2, host=True)
    index = np.flatnonzero(sub.handles).tolist()
    images, buffer = decoder.decode(sub, index, "RGB", lambda n: np.empty(n, np.uint8))
    base = buffer.ctypes.data
    pixels = {
        i: np.ndarray(img.shape, np.uint8, buffer, img.ptr - base).copy()
        for i, img in zip(index, images)
        if img is not None
    }
    return streams.handles != 0, streams.shapes.copy(), sub.shapes.copy(), pixels


def test_the_compiled_calls_give_what_the_ctypes_calls_give(monkeypatch):
    pytest.importorskip("nvidia.nvimgcodec")
    from chute.gpu import codec_api

    buffers = _jpegs()
    ok, shapes, sub_shapes, pixels = _decode_all(codec_api, buffers)
    assert ok.tolist() == [i not in (3, 5, 7) for i in range(12)]
    assert sorted(pixels) == [i for i in range(12) if ok[i]]
    for i, image in pixels.items():
        assert image.shape == ((20, 24, 3) if i % 2 == 0 else (*shapes[i], 3))
    monkeypatch.setattr(native, "codec_calls", None)
    ok0, shapes0, sub_shapes0, pixels0 = _decode_all(codec_api, buffers)
    assert (ok0 == ok).all() and (shapes0 == shapes).all() and (sub_shapes0 == sub_shapes).all()
    assert pixels0.keys() == pixels.keys()
    for i in pixels:
        np.testing.assert_array_equal(pixels0[i], pixels[i])
