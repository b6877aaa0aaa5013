"""Corrupt entropy-coded data in JPEGs, found before a GPU or region decode.

A flipped byte inside a scan leaves a JPEG's structure intact (chute.ops.decoders.
jpeg_structure passes it); only a Huffman decoder notices. chute's full CPU decode
refuses such a file ("Corrupt JPEG data: ..."), a GPU decoder decodes it into an image
with damaged blocks, and a region decoder stops at its window's last row, so it refuses
the file only when the damage lies above that row. With the check, the decoders refuse
what the full CPU decode refuses, whatever the device and whatever the window.

The check decodes the entropy-coded data with libjpeg-turbo and drops it
(turbo.TurboJPEG.entropy_errors: no inverse DCT, upsampling or colour conversion); a file
it refuses is confirmed by the full CPU decode, whose message becomes the reason, so no
file the CPU decoder keeps is ever refused. The decoders run it when their
``check_entropy`` argument says so, by default under ``on_error="skip"`` or ``"warn"``,
once per file: :class:`CheckedFiles` keeps each verdict by the reader's dataset index
(and the file's size), so later epochs check nothing again.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from chute.ops.decoders import image_codec, turbo
from chute.ops.decoders.image_codec import MAX_IMAGE_PIXELS
from chute.ops.decoders.image_headers import DecodeError

__all__ = ["CheckedFiles", "check_entropy_enabled", "corrupt_jpegs"]

_JPEG = b"\xff\xd8\xff"


def check_entropy_enabled(value: Any, on_error: str) -> bool:
    """A decoder's ``check_entropy`` argument, resolved: None means on unless errors raise."""
    return bool(value) if value is not None else on_error != "raise"


def corrupt_jpegs(buffers: Sequence[Any], threads: int = 1) -> dict[int, str]:
    """{i: the CPU decoder's reason} for the JPEGs among ``buffers`` that a full CPU decode
    refuses for their entropy-coded data (other buffers are not looked at).

    One call without the GIL on ``threads`` native threads where chute's compiled module
    is built; a file that fails it is decoded in full to confirm (rare: corrupt files only).
    """
    decoder = turbo.load()
    if decoder is None:  # simplejpeg alone: the full decode is the check
        suspects = [i for i, b in enumerate(buffers) if bytes(memoryview(b).cast("B")[:3]) == _JPEG]
    else:  # other formats pass the check untouched
        faults = decoder.entropy_errors(list(buffers), MAX_IMAGE_PIXELS, threads)
        suspects = [i for i, fault in enumerate(faults) if fault is not None]
    out: dict[int, str] = {}
    for i in suspects:
        try:
            image_codec.decode(buffers[i], output_type="RGB", adjust_orientation=False)
        except DecodeError as exc:
            out[i] = str(exc)
    return out


class CheckedFiles:
    """The check's verdicts by dataset index (a reader's ``index`` meta) and file size: a
    file is checked in its first epoch only. One per decoder node; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._good = np.zeros(0, np.int64)  # 1 + the size of a good file at its index; 0: not
        self._bad: dict[int, tuple[int, str]] = {}  # index -> (size, the CPU decoder's reason)

    def corrupt(self, buffers: Sequence[Any], metas: Sequence[Any], threads: int = 1) -> dict:
        """:func:`corrupt_jpegs` of ``buffers``, checking only those not seen before."""
        keys = [_key(b, m) for b, m in zip(buffers, metas)]
        known: dict[int, str] = {}
        todo: list[int] = []
        with self._lock:
            for pos, key in enumerate(keys):
                if (
                    key is not None
                    and key[0] < len(self._good)
                    and self._good[key[0]] == key[1] + 1
                ):
                    continue  # good when last seen
                bad = self._bad.get(key[0]) if key is not None else None
                if bad is not None and bad[0] == key[1]:
                    known[pos] = bad[1]
                else:
                    todo.append(pos)
        faults = corrupt_jpegs([buffers[pos] for pos in todo], threads)
        with self._lock:
            for j, pos in enumerate(todo):
                key = keys[pos]
                if key is None:
                    continue
                index, size = key
                if j in faults:
                    self._bad[index] = (size, faults[j])
                    continue
                if index >= len(self._good):
                    grown = np.zeros(max(index + 1, 2 * len(self._good), 1024), np.int64)
                    grown[: len(self._good)] = self._good
                    self._good = grown
                self._good[index] = size + 1
                self._bad.pop(index, None)
        known.update({todo[j]: reason for j, reason in faults.items()})
        return known


def _key(buf: Any, meta: Any) -> tuple[int, int] | None:
    index = meta.get("index") if meta else None
    if not isinstance(index, (int, np.integer)) or index < 0:
        return None  # not from a reader: checked every time
    return int(index), memoryview(buf).nbytes
