"""The JPEG structure check: well-formed files pass, truncated and mangled ones name why.

The compiled check and the Python copy of its rules must agree on every file, good or
mutated; expected verdicts come from how the files were made (an encoder's output is
well-formed; a file cut anywhere before its EOI is not).
"""

from __future__ import annotations

import io

import cv2
import numpy as np
import pytest
from PIL import Image

from chute.ops.decoders import jpeg_structure
from chute.ops.decoders.jpeg_structure import structure_error, structure_errors
from chute.runtime import native


def pil_jpeg(mode: str = "RGB", size: int = 40, **params) -> bytes:
    rng = np.random.default_rng(size)
    image = Image.fromarray(rng.integers(0, 256, (size, size, 3), np.uint8)).convert(mode)
    buf = io.BytesIO()
    image.save(buf, "JPEG", **params)
    return buf.getvalue()


def restart_jpeg() -> bytes:
    rng = np.random.default_rng(5)
    ok, buf = cv2.imencode(
        ".jpg", rng.integers(0, 256, (64, 64, 3), np.uint8), [cv2.IMWRITE_JPEG_RST_INTERVAL, 2]
    )
    assert ok
    return buf.tobytes()


GOOD = {
    "baseline": pil_jpeg(quality=90),
    "progressive": pil_jpeg(quality=80, progressive=True),
    "gray": pil_jpeg("L"),
    "cmyk": pil_jpeg("CMYK"),
    "restart": restart_jpeg(),
}


def both(data: bytes) -> list[str | None]:
    """The Python verdict, and the compiled one where the module is built."""
    verdicts = [structure_error(data)]
    if native.jpeg_check_batch is not None:
        verdicts.append(native.jpeg_check_batch([data])[0])
    return verdicts


@pytest.mark.parametrize("name", sorted(GOOD))
def test_encoder_output_is_well_formed(name):
    assert both(GOOD[name]) == [None] * len(both(GOOD[name]))
    # fill bytes before a marker and data after EOI are allowed, as libjpeg allows them
    data = GOOD[name]
    assert set(both(data[:2] + b"\xff\xff" + data[2:] + b"trailing")) == {None}


def test_restart_file_really_has_restart_markers():
    data = GOOD["restart"]
    assert b"\xff\xdd" in data and b"\xff\xd0" in data and b"\xff\xd1" in data


@pytest.mark.parametrize("name", sorted(GOOD))
def test_every_truncation_is_refused(name):
    data = GOOD[name]
    for cut in range(len(data) - 1):  # up to but not including the whole EOI marker
        verdicts = both(data[:cut])
        assert None not in verdicts, cut
        assert len(set(verdicts)) == 1, (cut, verdicts)


def test_reasons_name_the_fault():
    data = GOOD["baseline"]
    sos = data.index(b"\xff\xda")
    assert structure_error(data[:-2]) == jpeg_structure._TRUNCATED_SCAN
    assert "segment runs past the end" in structure_error(data[: sos - 5])
    assert "not a JPEG" in structure_error(b"\x89PNG\r\n\x1a\n" + data)
    extraneous = data[:sos] + b"\x00\x01" + data[sos:]
    assert "between segments" in structure_error(extraneous)
    no_frame = data[:2] + data[sos:]
    assert "before the frame header" in structure_error(no_frame)
    only_eoi = b"\xff\xd8\xff\xd9"
    assert "holds no image" in structure_error(only_eoi)
    restart = bytearray(GOOD["restart"])
    first = bytes(restart).index(b"\xff\xd0")
    restart[first + 1] = 0xD3  # RST3 where RST0 belongs
    assert "out of order" in structure_error(bytes(restart))


def test_compiled_and_python_rules_agree_on_mutants():
    if native.jpeg_check_batch is None:
        pytest.skip("chute.runtime._native is not built here")
    rng = np.random.default_rng(11)
    seeds = list(GOOD.values())
    files = []
    for k in range(3000):
        data = bytearray(seeds[k % len(seeds)])
        kind = k % 4
        if kind == 0:
            for at in rng.integers(0, len(data), rng.integers(1, 5)):
                data[at] = int(rng.integers(0, 256))
        elif kind == 1:
            at = int(rng.integers(0, len(data)))
            data[at:at] = rng.bytes(int(rng.integers(1, 16)))
        elif kind == 2:
            at = int(rng.integers(0, len(data)))
            del data[at : at + int(rng.integers(1, 32))]
        else:
            data[int(rng.integers(2, 40))] = 0xFF
        files.append(bytes(data))
    compiled = structure_errors(files)
    python = [structure_error(f) for f in files]
    assert compiled == python
    assert 0 < sum(v is None for v in python) < len(files)  # the corpus has both kinds
