"""Header-level facts about encoded images: format, EXIF orientation, PNG layout.

Everything here reads a few dozen bytes to a few kilobytes of the header and
never decompresses pixels, so the decoder can refuse a file (unsupported,
oversized) before it allocates anything.
"""

from __future__ import annotations

import struct

import numpy as np

EncodedImage = bytes | bytearray | memoryview | np.ndarray

FORMATS = ("jpeg", "png", "bmp", "tiff", "pnm", "webp", "gif", "jpeg2000")

_JP2_SIGNATURE = b"\x00\x00\x00\x0cjP  \r\n\x87\n"
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_EXIF_ORIENTATION_TAG = 0x0112

# Formats that are recognisable but that chute does not decode; naming them
# makes the error actionable ("convert your HEIC files") instead of "unknown".
_UNSUPPORTED_SIGNATURES: tuple[tuple[bytes, int, str], ...] = (
    (b"%PDF", 0, "pdf"),
    (b"\x00\x00\x01\x00", 0, "ico"),
    (b"8BPS", 0, "psd"),
    (b"\x76\x2f\x31\x01", 0, "openexr"),
    (b"#?RADIANCE", 0, "hdr"),
    (b"PK\x03\x04", 0, "zip"),
    (b"\x1f\x8b", 0, "gzip"),
)
_ISO_BMFF_BRANDS = {
    b"heic": "heic",
    b"heix": "heic",
    b"mif1": "heif",
    b"msf1": "heif",
    b"avif": "avif",
    b"avis": "avif",
    b"isom": "mp4",
    b"mp41": "mp4",
    b"mp42": "mp4",
    b"qt  ": "quicktime",
}


class DecodeError(ValueError):
    """An encoded image that cannot be decoded: corrupt, truncated, unsupported or too large."""


def check_pixels(height: int, width: int, max_pixels: int | None) -> None:
    """Raise DecodeError when a claimed size is empty or above max_pixels (None: no limit)."""
    if height <= 0 or width <= 0:
        raise DecodeError(f"image header claims an empty size {width}x{height}")
    if max_pixels is not None and height * width > max_pixels:
        raise DecodeError(
            f"image header claims {width}x{height} = {height * width} pixels, "
            f"more than max_pixels={max_pixels}"
        )


def as_buffer(data: EncodedImage) -> memoryview:
    """Return a flat, contiguous byte view of encoded image data without copying."""
    if isinstance(data, np.ndarray):
        if data.dtype != np.uint8 or data.ndim != 1:
            raise ValueError(
                f"encoded image must be a 1-D uint8 array, got {data.dtype} with shape {data.shape}"
            )
        data = np.ascontiguousarray(data)
    view = memoryview(data)
    if view.ndim != 1 or view.itemsize != 1:
        view = view.cast("B")
    return view


def detect_format(data: EncodedImage) -> str:
    """Name the image format of `data` from its magic bytes (never from a file name)."""
    head = bytes(as_buffer(data)[:32])
    if not head:
        raise ValueError("empty input: 0 bytes")
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head.startswith(_PNG_SIGNATURE):
        return "png"
    if head.startswith(b"GIF87a") or head.startswith(b"GIF89a"):
        return "gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "webp"
    if head[:4] in (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+"):
        return "tiff"
    if head.startswith(_JP2_SIGNATURE) or head.startswith(b"\xff\x4f\xff\x51"):
        return "jpeg2000"
    if head.startswith(b"BM") and len(head) >= 26:
        return "bmp"
    if len(head) >= 3 and head[0:1] == b"P" and head[1:2] in b"123456" and head[2:3].isspace():
        return "pnm"
    for signature, offset, name in _UNSUPPORTED_SIGNATURES:
        if head[offset:].startswith(signature):
            raise ValueError(f"unsupported format: {name}")
    if head[4:8] == b"ftyp":
        brand = _ISO_BMFF_BRANDS.get(head[8:12], head[8:12].decode("latin-1"))
        raise ValueError(f"unsupported format: {brand}")
    if len(head) < 4:
        raise ValueError(f"not an image: only {len(head)} bytes: {head!r}")
    if _looks_like_text(head):
        raise ValueError(f"not an image: starts with {head[:16]!r} (text)")
    raise ValueError(f"not an image: starts with {head[:16]!r}")


def _looks_like_text(head: bytes) -> bool:
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        # A multi-byte character cut at the 32-byte boundary is still text.
        text = head[:-3].decode("utf-8", errors="replace")
    return all(ch.isprintable() or ch in "\r\n\t" for ch in text)


def orientation_from_exif(exif: bytes | memoryview) -> int:
    """Read the orientation tag (1..8) from an EXIF TIFF block; 1 when absent or malformed."""
    exif = bytes(exif)
    if exif.startswith(b"Exif\x00\x00"):
        exif = exif[6:]
    if len(exif) < 8:
        return 1
    byte_order = exif[:2]
    if byte_order == b"II":
        endian = "<"
    elif byte_order == b"MM":
        endian = ">"
    else:
        return 1
    (ifd_offset,) = struct.unpack_from(endian + "I", exif, 4)
    if ifd_offset + 2 > len(exif):
        return 1
    (num_entries,) = struct.unpack_from(endian + "H", exif, ifd_offset)
    for index in range(num_entries):
        entry = ifd_offset + 2 + 12 * index
        if entry + 12 > len(exif):
            return 1
        tag, field_type, count = struct.unpack_from(endian + "HHI", exif, entry)
        if tag != _EXIF_ORIENTATION_TAG:
            continue
        # SHORT (3) is what the standard says; some writers use LONG (4).
        if field_type == 3 and count >= 1:
            (value,) = struct.unpack_from(endian + "H", exif, entry + 8)
        elif field_type == 4 and count >= 1:
            (value,) = struct.unpack_from(endian + "I", exif, entry + 8)
        else:
            return 1
        return value if 1 <= value <= 8 else 1
    return 1


def jpeg_orientation(data: EncodedImage) -> int:
    """EXIF orientation of a JPEG, read from its APP1 segment without decoding; 1 when absent."""
    buf = as_buffer(data)
    pos = 2
    size = len(buf)
    while pos + 4 <= size:
        if buf[pos] != 0xFF:
            return 1
        marker = buf[pos + 1]
        if marker == 0xFF:  # fill byte before a marker
            pos += 1
            continue
        if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7:
            pos += 2
            continue
        if marker in (0xDA, 0xD9):  # pixels start: EXIF must come before
            return 1
        length = (buf[pos + 2] << 8) | buf[pos + 3]
        if marker == 0xE1 and bytes(buf[pos + 4 : pos + 10]) == b"Exif\x00\x00":
            return orientation_from_exif(buf[pos + 10 : pos + 2 + length])
        pos += 2 + length
    return 1


def png_header(data: EncodedImage) -> tuple[int, int, int, int]:
    """Return (height, width, bit_depth, color_type) from a PNG's IHDR chunk."""
    buf = as_buffer(data)
    if len(buf) < 33 or bytes(buf[12:16]) != b"IHDR":
        raise ValueError("truncated PNG: no IHDR chunk")
    width, height, bit_depth, color_type = struct.unpack_from(">IIBB", buf, 16)
    return height, width, bit_depth, color_type


def png_channels(data: EncodedImage) -> int:
    """Channels a PNG decodes to: 1 gray, 2 gray+alpha, 3 RGB/palette, 4 with alpha or tRNS palette."""
    _, _, _, color_type = png_header(data)
    if color_type == 3:
        return 4 if _png_has_chunk(data, b"tRNS", before=b"IDAT") else 3
    return {0: 1, 2: 3, 4: 2, 6: 4}.get(color_type, 3)


def _png_has_chunk(data: EncodedImage, wanted: bytes, before: bytes) -> bool:
    buf = as_buffer(data)
    pos = 8
    while pos + 8 <= len(buf):
        (length,) = struct.unpack_from(">I", buf, pos)
        chunk_type = bytes(buf[pos + 4 : pos + 8])
        if chunk_type == wanted:
            return True
        if chunk_type == before:
            return False
        pos += 12 + length
    return False


def png_orientation(data: EncodedImage) -> int:
    """EXIF orientation from a PNG's eXIf chunk, walking chunk headers only; 1 when absent."""
    buf = as_buffer(data)
    pos = 8
    size = len(buf)
    while pos + 8 <= size:
        (length,) = struct.unpack_from(">I", buf, pos)
        chunk_type = bytes(buf[pos + 4 : pos + 8])
        if chunk_type == b"eXIf":
            return orientation_from_exif(buf[pos + 8 : pos + 8 + length])
        if chunk_type == b"IEND":
            return 1
        pos += 12 + length  # length, type, data, crc
    return 1


def header_size(data: EncodedImage, fmt: str) -> tuple[int, int] | None:
    """Return (height, width) claimed by the header of a PNG, GIF, BMP, WebP, PNM or JPEG 2000.

    None for formats it does not parse (JPEG and TIFF have their own paths).
    A header too short to hold the size raises ``ValueError``.
    """
    buf = bytes(as_buffer(data)[:512])
    try:
        if fmt == "png":
            width, height = struct.unpack_from(">II", buf, 16)
        elif fmt == "gif":
            width, height = struct.unpack_from("<HH", buf, 6)
        elif fmt == "bmp":
            (info_size,) = struct.unpack_from("<I", buf, 14)
            if info_size == 12:  # OS/2 BITMAPCOREHEADER
                width, height = struct.unpack_from("<HH", buf, 18)
            else:
                width, height = struct.unpack_from("<ii", buf, 18)
            height = abs(height)  # negative height means rows stored top-down
        elif fmt == "webp":
            return _webp_size(buf)
        elif fmt == "pnm":
            return _pnm_size(buf)
        elif fmt == "jpeg2000":
            return _jpeg2000_size(buf)
        else:
            return None
    except struct.error:
        raise ValueError(f"truncated {fmt} header") from None
    return height, width


def _webp_size(buf: bytes) -> tuple[int, int] | None:
    chunk = buf[12:16]
    if chunk == b"VP8X":
        width = int.from_bytes(buf[24:27], "little") + 1
        height = int.from_bytes(buf[27:30], "little") + 1
    elif chunk == b"VP8L":
        (bits,) = struct.unpack_from("<I", buf, 21)
        width = (bits & 0x3FFF) + 1
        height = ((bits >> 14) & 0x3FFF) + 1
    elif chunk == b"VP8 ":
        width, height = struct.unpack_from("<HH", buf, 26)
        width, height = width & 0x3FFF, height & 0x3FFF
    else:
        return None
    return height, width


def _pnm_size(buf: bytes) -> tuple[int, int] | None:
    tokens: list[bytes] = []
    for line in buf[2:].split(b"\n"):
        tokens.extend(line.split(b"#", 1)[0].split())
        if len(tokens) >= 2:
            break
    if len(tokens) < 2 or not (tokens[0].isdigit() and tokens[1].isdigit()):
        return None
    return int(tokens[1]), int(tokens[0])


def _jpeg2000_size(buf: bytes) -> tuple[int, int] | None:
    if buf.startswith(b"\xff\x4f\xff\x51"):
        x_size, y_size, x_offset, y_offset = struct.unpack_from(">IIII", buf, 8)
        return y_size - y_offset, x_size - x_offset
    box = buf.find(b"ihdr")
    if box < 0:
        return None
    height, width = struct.unpack_from(">II", buf, box + 4)
    return height, width
