"""The structure of JPEG files: markers, segment lengths, scans, restart markers and EOI.

Checked before decoding, on the CPU and the GPU path alike: a file that ends inside a
segment or a scan, lacks its EOI marker, has bytes between segments where a marker
belongs, restart markers out of order or a scan before its frame header is refused with
the reason. libjpeg reports these as errors or warnings (chute's CPU decoder stops on
warnings), a GPU decoder decodes them silently, and a region decoder, which stops at its
window's last row, never reaches them: checked here, every decoder keeps the same files.

It reads the file once (a byte search over the scans, no Huffman decoding), so corrupt
entropy-coded data that only a Huffman decoder notices is not caught here; the CPU
decoder refuses those, the GPU decoders decode them (docs/errors.md).

``structure_errors`` runs the compiled check (chute.runtime._native, without the GIL) and
this module's Python copy of the same rules where it is not built.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chute.ops.decoders.image_headers import DecodeError
from chute.runtime import native

__all__ = ["check_structure", "structure_error", "structure_errors"]

_TRUNCATED_SCAN = "the data ends inside a scan (truncated file, no EOI marker)"


def structure_errors(
    buffers: Sequence[Any], only_jpeg: bool = False, threads: int = 1
) -> list[str | None]:
    """Per JPEG buffer: None where it is well-formed, else the reason.

    With ``only_jpeg`` (a decoder's batch): buffers that do not start as a JPEG pass, and
    empty ones are refused. One call without the GIL where chute.runtime._native is built,
    on ``threads`` native threads.
    """
    if native.jpeg_check_batch is not None:
        items = buffers if isinstance(buffers, list) else list(buffers)
        return native.jpeg_check_batch(items, only_jpeg, threads)
    return [_checked(b, only_jpeg) for b in buffers]


def check_structure(buf: Any) -> None:
    """Raise DecodeError naming the fault of a JPEG whose structure is broken (the CPU
    decoders call it before decoding: what a region decode would stop short of)."""
    fault = structure_errors([buf])[0]
    if fault is not None:
        raise DecodeError(f"jpeg: {fault}")


def _checked(data: Any, only_jpeg: bool) -> str | None:
    if not only_jpeg:
        return structure_error(data)
    head = bytes(memoryview(data).cast("B")[:3])
    if not head:
        return "empty input: 0 bytes"
    return structure_error(data) if head == b"\xff\xd8\xff" else None


def structure_error(data: Any) -> str | None:
    """None where the JPEG in ``data`` is well-formed, else the reason (Python rules)."""
    p = bytes(memoryview(data).cast("B")) if not isinstance(data, bytes) else data
    n = len(p)
    if n < 4 or p[0] != 0xFF or p[1] != 0xD8:
        return "no SOI marker: not a JPEG file"
    pos, seen_frame, seen_scan, restart = 2, False, False, 0
    while pos < n:
        if p[pos] != 0xFF:
            return "bytes between segments where a marker should be (corrupt data)"
        while pos + 1 < n and p[pos + 1] == 0xFF:
            pos += 1
        if pos + 1 >= n:
            break
        m = p[pos + 1]
        if m == 0xD9:
            return None if seen_scan else "an EOI marker before any scan: the file holds no image"
        if m == 0xD8:
            return "a second SOI marker (corrupt data)"
        if m == 0x00 or 0xD0 <= m <= 0xD7:
            return "a marker that belongs inside a scan outside of one (corrupt data)"
        if m == 0x01:
            pos += 2
            continue
        if pos + 4 > n:
            return "the data ends inside a segment header (truncated file)"
        length = (p[pos + 2] << 8) | p[pos + 3]
        if length < 2:
            return "a segment length below 2 (corrupt data)"
        if pos + 2 + length > n:
            return "a segment runs past the end of the file (truncated)"
        body = pos + 4
        if 0xC0 <= m <= 0xCF and m not in (0xC4, 0xC8, 0xCC):
            if length < 8 or length != 8 + 3 * p[body + 5]:
                return "a frame header whose length disagrees with its components"
            if p[body + 5] == 0:
                return "a frame header with no components"
            seen_frame = True
        elif m == 0xDD:
            if length != 4:
                return "a restart-interval segment of the wrong length"
            restart = (p[body] << 8) | p[body + 1]
        elif m == 0xDA:
            if not seen_frame:
                return "a scan before the frame header (corrupt data)"
            if length < 6 or length != 6 + 2 * p[body] or p[body] == 0:
                return "a scan header whose length disagrees with its components"
            end = _scan_end(p, pos + 2 + length, restart)
            if isinstance(end, str):
                return end
            seen_scan, pos = True, end
            continue
        pos += 2 + length
    return "no EOI marker: the file is truncated"


def _scan_end(p: bytes, pos: int, restart: int) -> int | str:
    """The offset of the marker that ends the scan starting at ``pos``, or why there is none."""
    n, expected = len(p), 0
    while True:
        i = p.find(b"\xff", pos)
        if i < 0:
            return _TRUNCATED_SCAN
        while i + 1 < n and p[i + 1] == 0xFF:
            i += 1
        if i + 1 >= n:
            return _TRUNCATED_SCAN
        b = p[i + 1]
        if b == 0x00:
            pos = i + 2
            continue
        if 0xD0 <= b <= 0xD7:
            if restart == 0:
                return "a restart marker inside a scan without a restart interval (corrupt data)"
            if b - 0xD0 != expected:
                return "restart markers out of order (corrupt data)"
            expected = (expected + 1) & 7
            pos = i + 2
            continue
        return i
