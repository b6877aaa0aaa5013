"""TFRecord files: framing, CRC32C, and DALI's ``tfrecord2idx`` index files.

A TFRecord file is a sequence of records, each framed as::

    uint64 length (little-endian) | uint32 masked_crc32c(length bytes)
    data[length]                  | uint32 masked_crc32c(data)

An index file (DALI's ``tfrecord2idx`` format) has one line per record,
``"<offset> <size>"``, where size counts the whole frame (16 + length bytes).
Without an index the reader scans each file once (reading only the 12-byte
headers) and keeps the index in chute's cache folder, keyed by the file's path,
size and modification time, so that a changed file is indexed again.
"""

from __future__ import annotations

import hashlib
import os
import socket
import struct
from collections.abc import Iterable

from chute.ops.readers import storage
from chute.ops.readers.records import cache_dir

__all__ = [
    "crc32c",
    "frame",
    "masked_crc32c",
    "read_index",
    "record_index",
    "scan",
    "unframe",
    "write_index",
    "write_records",
]

_POLY = 0x82F63B78  # CRC-32C (Castagnoli), reflected


def _table() -> list[int]:
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ _POLY if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _table()

try:  # a C implementation where installed (pip install google-crc32c): ~1 GB/s
    import google_crc32c as _fast_crc  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - depends on the environment
    _fast_crc = None


def crc32c(data: bytes | memoryview) -> int:
    """The CRC-32C (Castagnoli) of ``data``."""
    if _fast_crc is not None:
        return _fast_crc.value(bytes(data))
    crc = 0xFFFFFFFF
    table = _TABLE
    for byte in bytes(data):
        crc = table[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc32c(data: bytes | memoryview) -> int:
    """TFRecord's masked CRC: rotate right by 15 bits, add 0xA282EAD8."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(data: bytes) -> bytes:
    """One TFRecord frame around ``data``."""
    length = struct.pack("<Q", len(data))
    return b"".join(
        [
            length,
            struct.pack("<I", masked_crc32c(length)),
            data,
            struct.pack("<I", masked_crc32c(data)),
        ]
    )


def write_records(path: str | os.PathLike, payloads: Iterable[bytes]) -> list[tuple[int, int]]:
    """Write a TFRecord file of ``payloads``; return its index, ``(offset, size)`` per record."""
    index = []
    offset = 0
    with open(path, "wb") as f:
        for payload in payloads:
            framed = frame(payload)
            f.write(framed)
            index.append((offset, len(framed)))
            offset += len(framed)
    return index


def unframe(record: memoryview | bytes, check_crc: bool = False) -> memoryview:
    """The payload of one framed record; ValueError saying what is wrong with the frame."""
    view = memoryview(record)
    if len(view) < 16:
        raise ValueError(f"truncated TFRecord: {len(view)} bytes, a frame has at least 16")
    (length,) = struct.unpack_from("<Q", view, 0)
    if 16 + length != len(view):
        raise ValueError(
            f"TFRecord length field says {length} bytes of data, "
            f"the record (index or file end) holds {len(view) - 16}"
        )
    data = view[12 : 12 + length]
    if check_crc:
        (length_crc,) = struct.unpack_from("<I", view, 8)
        if masked_crc32c(view[:8]) != length_crc:
            raise ValueError("TFRecord length CRC mismatch (corrupt record header)")
        (data_crc,) = struct.unpack_from("<I", view, 12 + length)
        if masked_crc32c(data) != data_crc:
            raise ValueError("TFRecord data CRC mismatch (corrupt record)")
    return data


def scan(path: str | os.PathLike) -> list[tuple[int, int]]:
    """Index a TFRecord file by reading its record headers: ``(offset, size)`` per record.

    A record that runs past the end of the file is still listed, with its declared
    size: reading it fails and names it (the rest of the file stays readable).
    """
    out = []
    path = os.fspath(path)
    with storage.open_binary(path) as f:
        end = storage.size(path)
        offset = 0
        while offset < end:
            f.seek(offset)
            header = f.read(8)
            if len(header) < 8:
                out.append((offset, 16))  # a tail too short for a length field
                break
            (length,) = struct.unpack("<Q", header)
            out.append((offset, 16 + length))
            offset += 16 + length
    return out


def write_index(path: str | os.PathLike, index: Iterable[tuple[int, int]]) -> None:
    """Write an index in DALI's tfrecord2idx format (``offset size`` lines)."""
    with open(path, "w", encoding="ascii") as f:
        f.writelines(f"{offset} {size}\n" for offset, size in index)


def read_index(path: str | os.PathLike) -> list[tuple[int, int]]:
    """Read a tfrecord2idx index; ValueError naming the file and line when it is malformed."""
    out = []
    path = os.fspath(path)
    text = storage.read_bytes(path).decode("ascii", errors="replace")
    for number, line in enumerate(text.splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        try:
            offset, size = (int(x) for x in fields[:2])
            if len(fields) != 2 or offset < 0 or size < 16:
                raise ValueError
        except ValueError:
            raise ValueError(
                f"malformed TFRecord index {os.fspath(path)!r} line {number}: {line.strip()!r} "
                "(expected '<offset> <size>')"
            ) from None
        out.append((offset, size))
    return out


def record_index(path: str) -> list[tuple[int, int]]:
    """The index of a TFRecord file, from chute's cache or made (and cached) now."""
    folder = cache_dir("tfrecord-index")
    key = hashlib.sha1(storage.fingerprint(path).encode()).hexdigest()
    cached = os.path.join(folder, f"{key}.idx") if folder else None
    if cached and os.path.exists(cached):
        try:
            return read_index(cached)
        except (OSError, ValueError):
            pass  # a damaged cache entry: index again
    index = scan(path)
    if cached:
        # the cache may be on a file system that several nodes share: pids repeat across hosts
        tmp = f"{cached}.{socket.gethostname()}.{os.getpid()}.tmp"
        try:
            write_index(tmp, index)
            os.replace(tmp, cached)  # atomic: concurrent readers see all or nothing
        except OSError:
            pass
    return index
