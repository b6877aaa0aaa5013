"""FITS files: header units and image data, parsed directly (FITS standard 4.0, images).

A FITS file is a run of HDUs (header + data units). A header is 2880-byte blocks of
80-character cards ``KEYWORD = value / comment`` up to an ``END`` card; the data
follows, padded to whole blocks, big-endian, its type given by ``BITPIX`` (8: uint8,
16/32/64: signed integers, -32/-64: IEEE floats) and its axes by ``NAXIS1`` (fastest)
.. ``NAXISn``, so that the array's shape is ``(NAXISn, ..., NAXIS1)``. ``BSCALE`` /
``BZERO`` scale the stored values: the unsigned conventions (BZERO 2**15, 2**31,
2**63 on 16/32/64-bit data, -128 on 8-bit) give uint16/32/64 and int8 exactly; any
other scaling gives float32 (8/16-bit data) or float64, as astropy and cfitsio do.
HDUs are numbered from 1 (the primary HDU), as cfitsio and DALI number them.
Tile-compressed images (``ZIMAGE = T`` binary tables) are decoded by astropy where it
is installed (``pip install 'chute[fits]'``).
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["BLOCK", "Hdu", "image", "image_dtype", "image_ndim", "read_hdus"]

BLOCK = 2880
CARD = 80
_BITPIX = {8: ">u1", 16: ">i2", 32: ">i4", 64: ">i8", -32: ">f4", -64: ">f8"}
_UNSIGNED = {(16, 1 << 15): np.uint16, (32, 1 << 31): np.uint32, (64, 1 << 63): np.uint64}
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([EeDd][+-]?\d+)?$")


@dataclass(frozen=True)
class Hdu:
    """One header + data unit: its number (from 1), cards, and where its data lies."""

    number: int
    header: dict[str, Any]
    data_offset: int
    data_size: int
    shape: tuple[int, ...] = field(default=())

    @property
    def compressed(self) -> bool:
        return bool(self.header.get("ZIMAGE"))

    @property
    def is_image(self) -> bool:
        kind = self.header.get("XTENSION", "IMAGE") if self.number > 1 else "IMAGE"
        return kind.strip() == "IMAGE" or self.compressed


def _value(text: str, where: str) -> Any:
    text = text.strip()
    if text.startswith("'"):  # a string: '' is a quote; trailing blanks do not count
        out, pos = [], 1
        while True:
            end = text.find("'", pos)
            if end < 0:
                raise ValueError(f"{where}: unterminated string")
            out.append(text[pos:end])
            if text[end + 1 : end + 2] == "'":
                out.append("'")
                pos = end + 2
                continue
            return "".join(out).rstrip()
    value = text.split("/", 1)[0].strip()
    if value in ("T", "F"):
        return value == "T"
    if not value:
        return None
    if _NUMBER.match(value):
        if re.fullmatch(r"[+-]?\d+", value):
            return int(value)
        return float(value.replace("D", "E").replace("d", "e"))
    return value  # complex numbers and the like: kept as text


def _header(raw: bytes, offset: int, where: str) -> tuple[dict[str, Any], int]:
    """The cards from ``offset`` to END, and the offset after the header's last block."""
    cards: dict[str, Any] = {}
    pos = offset
    while True:
        block = bytes(raw[pos : pos + BLOCK])
        if len(block) < BLOCK:
            raise ValueError(f"{where}: truncated header at offset {pos} (no END card)")
        pos += BLOCK
        for k in range(0, BLOCK, CARD):
            card = block[k : k + CARD].decode("ascii", errors="replace")
            key = card[:8].strip()
            if key == "END":
                return cards, pos
            if card[8:10] == "= " and key:
                cards[key] = _value(card[10:], f"{where}: card {key}")


def read_hdus(
    raw: bytes | memoryview | np.ndarray, where: str, upto: int | None = None
) -> list[Hdu]:
    """The HDUs of a FITS file's bytes (the first ``upto`` of them); ValueError says where a
    header is malformed or truncated."""
    raw = memoryview(raw)
    hdus: list[Hdu] = []
    offset = 0
    while offset < len(raw) and (upto is None or len(hdus) < upto):
        if len(hdus) > 0 and not bytes(raw[offset : offset + CARD]).strip(b"\0 "):
            break  # zero or blank padding after the last HDU
        number = len(hdus) + 1
        at = f"{where} HDU {number}"
        header, data_offset = _header(raw, offset, at)
        first = "SIMPLE" if number == 1 else "XTENSION"
        if first not in header:
            raise ValueError(f"{at}: not a FITS header (no {first} card at offset {offset})")
        try:
            bitpix = int(header["BITPIX"])
            naxis = int(header.get("NAXIS", 0))
            axes = [int(header[f"NAXIS{i}"]) for i in range(1, naxis + 1)]
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{at}: malformed BITPIX/NAXIS cards ({exc})") from None
        if bitpix not in _BITPIX:
            raise ValueError(f"{at}: BITPIX {bitpix} is not a FITS data type")
        count = int(np.prod(axes, dtype=np.int64)) if axes else 0
        groups = int(header.get("GCOUNT", 1) or 1)
        params = int(header.get("PCOUNT", 0) or 0)
        size = abs(bitpix) // 8 * groups * (params + count) if axes else 0
        hdus.append(Hdu(number, header, data_offset, size, tuple(reversed(axes))))
        offset = data_offset + -(-size // BLOCK) * BLOCK
    return hdus


def image_dtype(hdu: Hdu) -> np.dtype:
    """The type :func:`image` gives for ``hdu``, from its header alone."""
    header = hdu.header
    bitpix = int(header.get("ZBITPIX", header["BITPIX"]) if hdu.compressed else header["BITPIX"])
    scale, zero = header.get("BSCALE", 1), header.get("BZERO", 0)
    if scale == 1 and zero == 0:
        return np.dtype(_BITPIX[bitpix]).newbyteorder("=")
    if scale == 1 and bitpix == 8 and zero == -128:
        return np.dtype(np.int8)
    unsigned = _UNSIGNED.get((bitpix, zero)) if scale == 1 else None
    if unsigned is not None:
        return np.dtype(unsigned)
    return np.dtype(np.float32 if bitpix in (8, 16, -32) else np.float64)


def image_ndim(hdu: Hdu) -> int:
    """The number of axes of ``hdu``'s image."""
    return int(hdu.header.get("ZNAXIS", 0)) if hdu.compressed else len(hdu.shape)


def image(raw: bytes | memoryview | np.ndarray, hdu: Hdu, where: str) -> np.ndarray:
    """The image of ``hdu`` as a native-order array, BSCALE / BZERO applied (see above)."""
    at = f"{where} HDU {hdu.number}"
    if hdu.compressed:
        return _compressed_image(raw, hdu, at)
    if not hdu.is_image:
        raise ValueError(f"{at} is a {hdu.header.get('XTENSION', '').strip()} HDU, not an image")
    bitpix = int(hdu.header["BITPIX"])
    count = int(np.prod(hdu.shape, dtype=np.int64)) if hdu.shape else 0
    buf = memoryview(raw)[hdu.data_offset : hdu.data_offset + count * abs(bitpix) // 8]
    if len(buf) < count * abs(bitpix) // 8:
        raise ValueError(
            f"{at}: truncated data at offset {hdu.data_offset}: the image needs "
            f"{count * abs(bitpix) // 8} bytes, the file holds {len(buf)}"
        )
    stored = np.frombuffer(buf, _BITPIX[bitpix], count).reshape(hdu.shape)
    scale = hdu.header.get("BSCALE", 1)
    zero = hdu.header.get("BZERO", 0)
    if scale == 1 and zero == 0:
        return stored.astype(stored.dtype.newbyteorder("="))
    if scale == 1 and bitpix == 8 and zero == -128:
        return (stored.view(np.uint8) ^ 0x80).view(np.int8).copy()
    unsigned = _UNSIGNED.get((bitpix, zero)) if scale == 1 else None
    if unsigned is not None:  # flip the sign bit: stored + 2**(n-1), exactly
        native = stored.astype(stored.dtype.newbyteorder("="))
        return native.view(unsigned) ^ unsigned(1 << (8 * native.itemsize - 1))
    out = np.float32 if bitpix in (8, 16, -32) else np.float64
    return (stored.astype(np.float64) * float(scale) + float(zero)).astype(out)


def _compressed_image(raw: bytes | memoryview | np.ndarray, hdu: Hdu, at: str) -> np.ndarray:
    try:
        from astropy.io import fits
    except ImportError:
        kind = hdu.header.get("ZCMPTYPE", "tile-compressed")
        raise ValueError(
            f"{at} is a {kind} compressed image; reading it needs astropy: "
            "pip install 'chute[fits]'"
        ) from None
    with fits.open(io.BytesIO(bytes(raw)), memmap=False) as hdus:
        try:
            data = hdus[hdu.number - 1].data
        except (ValueError, OSError, IndexError) as exc:
            raise ValueError(f"{at}: cannot decompress: {exc}") from None
        out = np.asarray(data)
        return out.astype(out.dtype.newbyteorder("="))
