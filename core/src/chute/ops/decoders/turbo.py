"""Region-of-interest and DCT-scaled JPEG decoding through libjpeg-turbo's TurboJPEG 3 API.

A random crop decoded this way skips the inverse DCT, upsampling and colour
conversion of everything outside the crop, and the entropy decoding of every
row below it; a DCT-scaled decode (1/2, 1/4, 1/8) makes the inverse DCT itself
produce the smaller image. simplejpeg, chute's other JPEG path, exposes neither.

Where chute's compiled module is built, :meth:`TurboJPEG.decode_region` is one call
into it (csrc/jpeg_region.c) that reads the header, decodes and copies the region out
without the GIL; otherwise, and for :meth:`TurboJPEG.decode`, the binding is a few
ctypes calls (ctypes releases the GIL for the decode, so worker threads decode in
parallel). Both use the same library, looked up in order:

1. the path in the ``CHUTE_LIBTURBOJPEG`` environment variable;
2. the copy of libjpeg-turbo 3 bundled in the ``turbojpeg`` wheel (a dependency
   of chute on x86-64), found without importing that package;
3. ``libturbojpeg`` on the system library path, if it has the version 3 API.

When none is found :func:`load` returns None and chute decodes whole JPEGs
with simplejpeg and crops afterwards (same pixels, more work).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import importlib.util
import math
import os
import threading
from pathlib import Path

import numpy as np

from chute.runtime import native, output_pool

__all__ = ["JpegHeader", "TurboJPEG", "load"]

# TurboJPEG 3 constants (turbojpeg.h).
_INIT_DECOMPRESS = 1
_INIT_TRANSFORM = 2
_XOPT_NOOUTPUT = 16
_PARAM_STOPONWARNING = 0
_PARAM_SUBSAMP = 4
_PARAM_JPEGWIDTH = 5
_PARAM_JPEGHEIGHT = 6
_PARAM_COLORSPACE = 8
PIXEL_FORMATS = {"RGB": 0, "BGR": 1, "GRAY": 6}
_CHANNELS = {"RGB": 3, "BGR": 3, "GRAY": 1}
COLORSPACES = {0: "RGB", 1: "YCbCr", 2: "Gray", 3: "CMYK", 4: "YCCK"}
# Width in pixels of one MCU per chroma subsampling (TJSAMP_444, 422, 420, GRAY,
# 440, 411, 441); a cropping region must start on an MCU boundary.
_MCU_WIDTH = {0: 8, 1: 16, 2: 16, 3: 8, 4: 8, 5: 32, 6: 8}


class _Region(ctypes.Structure):
    _fields_ = [("x", ctypes.c_int), ("y", ctypes.c_int), ("w", ctypes.c_int), ("h", ctypes.c_int)]


class _Transform(ctypes.Structure):
    _fields_ = [
        ("r", _Region),
        ("op", ctypes.c_int),
        ("options", ctypes.c_int),
        ("data", ctypes.c_void_p),
        ("custom_filter", ctypes.c_void_p),
    ]


class _ScalingFactor(ctypes.Structure):
    _fields_ = [("num", ctypes.c_int), ("denom", ctypes.c_int)]


_NO_REGION = _Region(0, 0, 0, 0)


class JpegHeader:
    """Size, chroma subsampling and colour space of a JPEG, from its header."""

    __slots__ = ("colorspace", "height", "subsampling", "width")

    def __init__(self, height: int, width: int, subsampling: int, colorspace: str):
        self.height = height
        self.width = width
        self.subsampling = subsampling  # TJSAMP_*, -1 where unusual
        self.colorspace = colorspace


class _Handle:
    """One decompressor; TurboJPEG handles are not thread-safe, so each thread has its own."""

    def __init__(self, lib: ctypes.CDLL, kind: int = _INIT_DECOMPRESS):
        self.lib = lib
        self.ptr = lib.tj3Init(kind)
        if not self.ptr:
            raise MemoryError("tj3Init failed")
        # Corrupt or truncated data is an error, not a warning with grey rows.
        lib.tj3Set(self.ptr, _PARAM_STOPONWARNING, 1)

        self._scratch = np.empty(0, np.uint8)
        # The header this handle read last, and (address, size) of its JPEG: a decode of
        # the same data right after needs no second read.
        self.header: JpegHeader | None = None
        self.source: tuple[int, int] = (0, 0)

    def scratch(self, shape: tuple[int, int, int]) -> np.ndarray:
        """A reusable uint8 array of `shape` (its pages stay mapped between decodes)."""
        size = shape[0] * shape[1] * shape[2]
        if self._scratch.size < size:
            self._scratch = np.empty(max(size, 1 << 20), np.uint8)
        return self._scratch[:size].reshape(shape)

    def __del__(self) -> None:
        if self.ptr:
            self.lib.tj3Destroy(self.ptr)
            self.ptr = None


class TurboJPEG:
    """Decoder over a loaded libturbojpeg (version 3 API)."""

    def __init__(self, path: str):
        lib = ctypes.CDLL(path)
        vp, sz, i = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int
        lib.tj3Init.restype = vp
        lib.tj3Init.argtypes = [i]
        lib.tj3Destroy.argtypes = [vp]
        lib.tj3Set.argtypes = [vp, i, i]
        lib.tj3Get.argtypes = [vp, i]
        lib.tj3DecompressHeader.argtypes = [vp, vp, sz]
        lib.tj3SetScalingFactor.argtypes = [vp, _ScalingFactor]
        lib.tj3SetCroppingRegion.argtypes = [vp, _Region]
        lib.tj3Decompress8.argtypes = [vp, vp, sz, vp, i, i]
        lib.tj3GetErrorStr.restype = ctypes.c_char_p
        lib.tj3Transform.argtypes = [
            vp,
            vp,
            sz,
            i,
            ctypes.POINTER(vp),
            ctypes.POINTER(sz),
            ctypes.POINTER(_Transform),
        ]
        lib.tj3GetErrorStr.argtypes = [vp]
        # Every call but the decode itself takes well under a microsecond: those keep the
        # GIL (PyDLL). Releasing it for each would let another thread take it, and this
        # one wait for it back, several times per image.
        quick = ctypes.PyDLL(path)
        for name in (
            "tj3Get",
            "tj3Set",
            "tj3DecompressHeader",
            "tj3SetScalingFactor",
            "tj3SetCroppingRegion",
        ):
            function = getattr(quick, name)
            function.argtypes = getattr(lib, name).argtypes
            setattr(lib, name, function)
        self.lib = lib
        self.path = path
        self._local = threading.local()
        # chute.runtime._native bound to the same library, or None (not built)
        self.native = _bind_native(path)

    def _handle(self) -> _Handle:
        handle = getattr(self._local, "handle", None)
        if handle is None:
            handle = self._local.handle = _Handle(self.lib)
        return handle

    def _error(self, handle: _Handle) -> str:
        """The handle's error message; the thread gets a fresh handle for its next image.

        A handle that failed mid-header can fail the next, valid header too ("Bogus
        Huffman table definition" after a damaged one), so it is not used again.
        """
        message = self.lib.tj3GetErrorStr(handle.ptr).decode("utf-8", "replace")
        if getattr(self._local, "handle", None) is handle:
            self._local.handle = None
        return message

    def entropy_errors(
        self, buffers: list, max_pixels: int = 0, threads: int = 1
    ) -> list[str | None]:
        """Per buffer: None where libjpeg-turbo reads all its entropy-coded data without
        an error or warning (or it does not start as a JPEG), else the library's message.

        A lossless transform that writes nothing: the Huffman decoding of a full decode
        without the inverse DCT, upsampling and colour conversion (about 2/3 of a decode's
        time on a detailed photo), with warnings as errors as in :meth:`decode`. Images of
        more than ``max_pixels`` (0: no limit) are refused before their coefficients are
        allocated. With the compiled module all in one call without the GIL on ``threads``
        native threads; else one at a time.
        """
        if self.native is not None:
            return self.native.jpeg_entropy_batch(buffers, max_pixels, threads)
        return [self._entropy_error(np.frombuffer(b, np.uint8), max_pixels) for b in buffers]

    def _entropy_error(self, buf: np.ndarray, max_pixels: int) -> str | None:
        if buf.size < 3 or bytes(buf[:3]) != b"\xff\xd8\xff":
            return None  # not a JPEG: another decoder's business
        handle = getattr(self._local, "transformer", None)
        if handle is None:
            handle = self._local.transformer = _Handle(self.lib, _INIT_TRANSFORM)
        try:
            header = self._read_header(handle, buf, buf.ctypes.data)
        except ValueError as exc:
            self._local.transformer = None
            return str(exc)
        if max_pixels and header.height * header.width > max_pixels:
            return (
                f"the image has {header.height * header.width} pixels, "
                f"over the limit of {max_pixels}"
            )
        nothing = _Transform(_NO_REGION, 0, _XOPT_NOOUTPUT, None, None)
        dst, dst_size = ctypes.c_void_p(), ctypes.c_size_t()
        status = self.lib.tj3Transform(
            handle.ptr,
            buf.ctypes.data,
            buf.size,
            1,
            ctypes.byref(dst),
            ctypes.byref(dst_size),
            ctypes.byref(nothing),
        )
        if status == 0:
            return None
        message = self.lib.tj3GetErrorStr(handle.ptr).decode("utf-8", "replace")
        self._local.transformer = None  # failed mid-stream: the next check starts afresh
        return message

    def _read_header(self, handle: _Handle, buf: np.ndarray, address: int) -> JpegHeader:
        lib = self.lib
        handle.header = None
        if lib.tj3DecompressHeader(handle.ptr, address, buf.size) != 0:
            raise ValueError(self._error(handle))
        ptr, get = handle.ptr, lib.tj3Get
        header = JpegHeader(
            get(ptr, _PARAM_JPEGHEIGHT),
            get(ptr, _PARAM_JPEGWIDTH),
            get(ptr, _PARAM_SUBSAMP),
            COLORSPACES.get(get(ptr, _PARAM_COLORSPACE), "unknown"),
        )
        handle.header, handle.source = header, (address, buf.size)
        return header

    def header(self, buf: np.ndarray) -> JpegHeader:
        """Read the header of the JPEG in `buf` (1-D uint8); ValueError if it is not one.

        Passing the result to :meth:`decode` of the same `buf` on the same thread, with
        no other call in between, saves reading it again.
        """
        if self.native is not None:
            height, width, subsampling, colorspace = self.native.jpeg_header(buf)
            return JpegHeader(height, width, subsampling, COLORSPACES.get(colorspace, "unknown"))
        return self._read_header(self._handle(), buf, buf.ctypes.data)

    def decode_region(
        self,
        buf: np.ndarray,
        pixel_format: str,
        numerator: int,
        rect: tuple[int, int, int, int],
        header: JpegHeader | None = None,
    ) -> np.ndarray:
        """Exactly `rect` (y0, x0, y1, x1 in pixels scaled by `numerator`/8) as a new HWC array.

        The array is C-contiguous, in recycled memory (output_pool), and the decoder's
        only output: nothing is copied after it. `header` is as for :meth:`decode`.
        """
        y0, x0, y1, x1 = rect
        shape = (y1 - y0, x1 - x0, _CHANNELS[pixel_format])
        if self.native is not None:
            out = output_pool.empty(shape, np.uint8)
            self.native.jpeg_decode(buf, out, PIXEL_FORMATS[pixel_format], numerator, y0, x0)
            return out
        if header is None:
            header = self.header(buf)
        whole = rect == (0, 0, *_scaled_size(header, numerator))
        # a whole image is decoded into its own array; a region with margins into the
        # scratch buffer, and copied out
        image, oy, ox = self.decode(buf, pixel_format, numerator, rect, not whole, header)
        if whole:
            return image
        out = output_pool.empty(shape, np.uint8)
        np.copyto(out, image[y0 - oy : y1 - oy, x0 - ox : x1 - ox])
        return out

    def decode_regions(self, regions: list[tuple]) -> list[np.ndarray | str]:
        """:meth:`decode_region` of many (buf, pixel_format, numerator, rect).

        With the compiled module all in one call that holds no GIL; else one at a time.
        Returns, per region, its array or the library's message for data it could not
        decode.
        """
        if self.native is None:
            return [self._region_or_message(*region) for region in regions]
        items, outs = [], []
        for buf, pixel_format, numerator, (y0, x0, y1, x1) in regions:
            out = output_pool.empty((y1 - y0, x1 - x0, _CHANNELS[pixel_format]), np.uint8)
            items.append((buf, out, PIXEL_FORMATS[pixel_format], numerator, y0, x0))
            outs.append(out)
        errors = self.native.jpeg_decode_batch(items)
        return [out if error is None else error for out, error in zip(outs, errors)]

    def _region_or_message(self, buf, pixel_format, numerator, rect) -> np.ndarray | str:
        try:
            return self.decode_region(np.frombuffer(buf, np.uint8), pixel_format, numerator, rect)
        except ValueError as exc:
            return str(exc)

    def decode(
        self,
        buf: np.ndarray,
        pixel_format: str,
        numerator: int = 8,
        rect: tuple[int, int, int, int] | None = None,
        scratch: bool = False,
        header: JpegHeader | None = None,
    ) -> tuple[np.ndarray, int, int]:
        """Decode at `numerator`/8 scale, only `rect` (y0, x0, y1, x1, in scaled pixels).

        Returns (image, y, x): the HWC image and where its top-left pixel lies in
        the scaled image. The decoded area has a margin around `rect` and starts
        at an MCU column boundary (libjpeg-turbo decodes whole MCU columns), so
        ``image`` can be a few pixels larger than asked. With `scratch`, ``image``
        lives in this thread's reusable buffer, valid until its next decode: copy
        what you keep (the copy into fresh memory then is the only one). `header`, from
        :meth:`header` of this `buf` just before on this thread, skips reading it again.
        """
        handle = self._handle()
        lib = self.lib
        address = buf.ctypes.data
        if header is None or header is not handle.header or handle.source != (address, buf.size):
            header = self._read_header(handle, buf, address)
        scaled_h, scaled_w = _scaled_size(header, numerator)
        if lib.tj3SetScalingFactor(handle.ptr, _scaling_factor(numerator)) != 0:
            raise ValueError(self._error(handle))
        y0, x0, y1, x1 = rect if rect is not None else (0, 0, scaled_h, scaled_w)
        if not (0 <= y0 < y1 <= scaled_h and 0 <= x0 < x1 <= scaled_w):
            raise ValueError(f"region {rect} outside the {scaled_h}x{scaled_w} scaled image")
        # Chroma upsampling at the region's edges reads pixels beyond them, and
        # libjpeg-turbo treats the region's right edge as the image's: decoding one
        # more row above and below, one more column left and one more MCU right
        # keeps the region equal to the same pixels of a full decode (checked on
        # 4:4:4, 4:2:2, 4:2:0 and progressive files; it costs a few columns).
        mcu = _MCU_WIDTH.get(header.subsampling, 0) * numerator // 8
        y0, x0 = max(y0 - 1, 0), max(x0 - 1, 0)
        y1, x1 = min(y1 + 1, scaled_h), min(x1 + mcu, scaled_w)
        if (y0, x0, y1, x1) == (0, 0, scaled_h, scaled_w) or mcu == 0:
            region = _NO_REGION
            y0, x0, y1, x1 = 0, 0, scaled_h, scaled_w
        else:
            x0 -= x0 % mcu
            region = _Region(x0, y0, x1 - x0, y1 - y0)
        if lib.tj3SetCroppingRegion(handle.ptr, region) != 0:
            raise ValueError(self._error(handle))
        channels = _CHANNELS[pixel_format]
        shape = (y1 - y0, x1 - x0, channels)
        # a whole image decodes into its output: recycled memory, no page faults
        out = handle.scratch(shape) if scratch else output_pool.empty(shape, np.uint8)
        # the handle's header state is spent by the decode: the next one reads it again
        handle.header = None
        status = lib.tj3Decompress8(
            handle.ptr, address, buf.size, out.ctypes.data, 0, PIXEL_FORMATS[pixel_format]
        )
        if status != 0:
            raise ValueError(self._error(handle))
        return out, y0, x0


def _scaled_size(header: JpegHeader, numerator: int) -> tuple[int, int]:
    return -(-header.height * numerator // 8), -(-header.width * numerator // 8)


def _bind_native(path: str):
    """chute.runtime._native with its JPEG functions bound to the library at `path`, or None."""
    return native.jpeg_module(path)


@functools.cache
def _scaling_factor(numerator: int) -> _ScalingFactor:
    common = math.gcd(numerator, 8)  # the library accepts only reduced fractions
    return _ScalingFactor(numerator // common, 8 // common)


def _bundled_library() -> list[str]:
    # The turbojpeg wheel keeps libjpeg-turbo 3 in site-packages/turbojpeg.libs/;
    # importing that package is not needed (and not wanted: we use only the library).
    try:
        spec = importlib.util.find_spec("turbojpeg")
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.origin:
        return []
    libs = Path(spec.origin).parent / "turbojpeg.libs"
    return sorted(str(p) for p in libs.glob("libturbojpeg*.so*")) if libs.is_dir() else []


def _candidates() -> list[str]:
    found = []
    env = os.environ.get("CHUTE_LIBTURBOJPEG")
    if env:
        found.append(env)
    found += _bundled_library()
    system = ctypes.util.find_library("turbojpeg")
    if system:
        found.append(system)
    return found


@functools.cache
def load() -> TurboJPEG | None:
    """The TurboJPEG 3 decoder, or None where no libturbojpeg 3 can be loaded (cached)."""
    return _first_loadable()


def _first_loadable() -> TurboJPEG | None:
    if os.environ.get("CHUTE_LIBTURBOJPEG") == "":
        return None  # explicitly switched off
    for path in _candidates():
        try:
            return TurboJPEG(path)
        except (OSError, AttributeError):
            continue  # not loadable, or a version 2 library without the tj3 functions
    return None
