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
``check_entropy`` argument says so, by default under ``on_error="skip"`` or ``"warn"``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chute.ops.decoders import image_codec, turbo
from chute.ops.decoders.image_codec import MAX_IMAGE_PIXELS
from chute.ops.decoders.image_headers import DecodeError

__all__ = ["check_entropy_enabled", "corrupt_jpegs"]

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
