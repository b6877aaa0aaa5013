"""The protobuf wire format by hand: enough to read (and, for tests, write) Caffe's messages.

A message is a sequence of fields ``(number, wire type, value)``: varints (type 0),
64-bit (1), length-delimited bytes (2) and 32-bit (5). :func:`fields` splits a
message; the ``encode_*`` functions write one field. No protobuf compiler needed.
"""

from __future__ import annotations

import struct

import numpy as np

VARINT, FIXED64, BYTES, FIXED32 = 0, 1, 2, 5


class WireError(ValueError):
    """Bytes that are not a well-formed protobuf message."""


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``pos`` and the position after it."""
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise WireError(f"varint runs past the end ({len(buf)} bytes)")
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise WireError(f"varint longer than 10 bytes at byte {pos}")


def fields(buf: bytes) -> list[tuple[int, int, int | bytes]]:
    """Every field of a message, in order: (number, wire type, int or raw bytes)."""
    out: list[tuple[int, int, int | bytes]] = []
    pos = 0
    while pos < len(buf):
        key, pos = read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise WireError(f"field number 0 at byte {pos}")
        if wire == VARINT:
            value, pos = read_varint(buf, pos)
        elif wire == BYTES:
            length, pos = read_varint(buf, pos)
            if pos + length > len(buf):
                raise WireError(
                    f"field {number} says {length} bytes at byte {pos}, "
                    f"only {len(buf) - pos} are left"
                )
            value, pos = buf[pos : pos + length], pos + length
        elif wire in (FIXED32, FIXED64):
            size = 4 if wire == FIXED32 else 8
            if pos + size > len(buf):
                raise WireError(f"field {number} runs past the end at byte {pos}")
            value, pos = buf[pos : pos + size], pos + size
        else:
            raise WireError(f"unsupported wire type {wire} of field {number} at byte {pos}")
        out.append((number, wire, value))
    return out


def signed(value: int, bits: int = 32) -> int:
    """A varint read as int32 / int64 (negative numbers take ten bytes, two's complement)."""
    value &= (1 << 64) - 1
    if value >= 1 << 63:
        value -= 1 << 64
    if bits == 32:
        value = (value + (1 << 31)) % (1 << 32) - (1 << 31)
    return value


def varints(wire: int, value: int | bytes) -> list[int]:
    """A repeated varint field's values: one unpacked value, or a packed run."""
    if wire == VARINT:
        return [int(value)]  # type: ignore[arg-type]
    if wire != BYTES:
        raise WireError(f"expected varints, got wire type {wire}")
    out, pos, buf = [], 0, bytes(value)  # type: ignore[arg-type]
    while pos < len(buf):
        v, pos = read_varint(buf, pos)
        out.append(v)
    return out


def floats(wire: int, value: int | bytes, double: bool = False) -> np.ndarray:
    """A repeated float (or double) field's values: one unpacked value, or a packed run."""
    dtype = np.dtype("<f8" if double else "<f4")
    if wire not in (BYTES, FIXED64 if double else FIXED32):
        raise WireError(f"expected {'doubles' if double else 'floats'}, got wire type {wire}")
    buf = bytes(value)  # type: ignore[arg-type]
    if len(buf) % dtype.itemsize:
        raise WireError(f"{len(buf)} bytes of packed {dtype.itemsize}-byte values")
    return np.frombuffer(buf, dtype)


# ---- writing (tests and tools build databases with these) --------------------------------
def encode_varint(value: int) -> bytes:
    """A varint; negative numbers as ten-byte two's complement, as protobuf writes int32."""
    value &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def encode_key(number: int, wire: int) -> bytes:
    return encode_varint(number << 3 | wire)


def encode_int(number: int, value: int) -> bytes:
    """A varint field (int32, int64, bool, enum)."""
    return encode_key(number, VARINT) + encode_varint(value)


def encode_bytes(number: int, value: bytes) -> bytes:
    """A length-delimited field (bytes, string, embedded message, packed run)."""
    return encode_key(number, BYTES) + encode_varint(len(value)) + value


def encode_packed_floats(number: int, values) -> bytes:
    return encode_bytes(number, np.asarray(values, "<f4").tobytes())


def encode_packed_ints(number: int, values) -> bytes:
    return encode_bytes(number, b"".join(encode_varint(int(v)) for v in values))


def encode_float(number: int, value: float) -> bytes:
    """One unpacked float field (fixed32)."""
    return encode_key(number, FIXED32) + struct.pack("<f", value)
