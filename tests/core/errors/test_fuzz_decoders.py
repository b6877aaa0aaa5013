"""Fuzzing the CPU decoders with mutated JPEG, PNG and WebP files.

Every mutated file must give either a valid array or a ``ValueError`` (which
``DecodeError`` is) from decode, ROI decode, scaled decode and peek_shape —
never another exception type. A crash in native code kills pytest (loud); a
hang is turned into a loud failure by faulthandler's watchdog below.
"""

from __future__ import annotations

import faulthandler
import io
import struct
import sys
import time
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from PIL import Image

from chute.ops.decoders.image_codec import decode, decode_scaled, peek_shape

EXAMPLES = 1000  # per format; ~3,000 files x 4 decoder calls in well under a minute
SLOW_CALL_S = 2.0  # one 32x32 decode taking this long counts as a hang
WATCHDOG_S = 240  # a native hang: dump the stacks and exit the test run


def _seed_image() -> np.ndarray:
    # Smooth colour ramps plus noise: the encoders use real Huffman tables and filters.
    y, x = np.mgrid[0:32, 0:32]
    rng = np.random.default_rng(7)
    base = np.stack([x * 8, y * 8, (x + y) * 4], axis=-1) + rng.integers(0, 20, (32, 32, 3))
    return np.clip(base, 0, 255).astype(np.uint8)


def _encode(fmt: str, **params) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(_seed_image()).save(buf, fmt, **params)
    return buf.getvalue()


SEEDS = {
    "jpeg": _encode("JPEG", quality=85),
    "jpeg_progressive": _encode("JPEG", quality=85, progressive=True),
    "png": _encode("PNG"),
    "webp": _encode("WEBP", quality=80),
    "webp_lossless": _encode("WEBP", lossless=True),
}
FAMILIES = {
    "jpeg": ["jpeg", "jpeg_progressive"],
    "png": ["png"],
    "webp": ["webp", "webp_lossless"],
}


@st.composite
def mutation(draw: st.DrawFn, size: int) -> tuple:
    """One edit of a file of ``size`` bytes: bit flip, truncation, insert, delete or header write."""
    kind = draw(st.sampled_from(["flip", "truncate", "insert", "delete", "header"]))
    if kind == "flip":
        return ("flip", draw(st.integers(0, size - 1)), draw(st.integers(0, 7)))
    if kind == "truncate":
        return ("truncate", draw(st.integers(0, size - 1)))
    if kind == "insert":
        return ("insert", draw(st.integers(0, size)), draw(st.binary(min_size=1, max_size=64)))
    if kind == "delete":
        return ("delete", draw(st.integers(0, size - 1)), draw(st.integers(1, 64)))
    # Header fields (sizes, chunk lengths, markers, colour types) live in the first bytes.
    value = draw(
        st.one_of(
            st.binary(min_size=1, max_size=4),
            st.sampled_from([b"\x00", b"\xff", b"\xff\xff", b"\x7f\xff\xff\xff", b"\x00\x00"]),
        )
    )
    return ("header", draw(st.integers(0, min(size, 64) - 1)), value)


def apply(data: bytes, edits: list[tuple]) -> bytes:
    """Apply edits in order (positions are clipped to the current length)."""
    out = bytearray(data)
    for edit in edits:
        kind, pos = edit[0], min(edit[1], max(len(out) - 1, 0))
        if kind == "flip" and out:
            out[pos] ^= 1 << edit[2]
        elif kind == "truncate":
            del out[pos:]
        elif kind == "insert":
            out[pos:pos] = edit[2]
        elif kind == "delete":
            del out[pos : pos + edit[2]]
        elif kind == "header":
            out[pos : pos + len(edit[2])] = edit[2]
    return bytes(out)


def fix_png_crcs(data: bytes) -> bytes:
    """Recompute each whole PNG chunk's CRC, so that mutations reach the inflater and filters
    instead of stopping at the first CRC check."""
    out = bytearray(data)
    pos = 8
    while pos + 12 <= len(out):
        (length,) = struct.unpack_from(">I", out, pos)
        end = pos + 8 + length
        if end + 4 > len(out):
            break
        struct.pack_into(">I", out, end, zlib.crc32(bytes(out[pos + 4 : end])))
        pos = end + 4
    return bytes(out)


@st.composite
def mutated_file(draw: st.DrawFn, family: str) -> bytes:
    seed = SEEDS[draw(st.sampled_from(FAMILIES[family]))]
    edits = draw(st.lists(mutation(len(seed)), min_size=1, max_size=3))
    data = apply(seed, edits)
    if family == "png" and draw(st.booleans()):
        data = fix_png_crcs(data)
    return data


def _timed(call, *args, **kwargs):
    start = time.perf_counter()
    try:
        return call(*args, **kwargs)
    finally:
        elapsed = time.perf_counter() - start
        assert elapsed < SLOW_CALL_S, f"{call.__name__} took {elapsed:.1f} s"


def _valid_image(image: np.ndarray, dtype: type) -> None:
    assert isinstance(image, np.ndarray) and image.dtype == dtype
    assert image.ndim == 3 and image.shape[0] > 0 and image.shape[1] > 0
    assert 1 <= image.shape[2] <= 4


def exercise(data: bytes, roi_frac: tuple[float, float, float, float], gray: bool) -> None:
    """Run every decoder entry point; each may only succeed or raise ValueError."""
    output_type = "GRAY" if gray else "RGB"
    try:
        shape = _timed(peek_shape, data)
        assert len(shape) == 3 and all(isinstance(v, int) for v in shape)
    except ValueError:
        shape = None
    try:
        _valid_image(_timed(decode, data, output_type=output_type), np.uint8)
    except ValueError:
        pass
    try:
        _valid_image(_timed(decode, data, dtype=np.float32), np.float32)
    except ValueError:
        pass
    if shape is not None and shape[0] > 0 and shape[1] > 0:
        h, w = shape[0], shape[1]
        y0, x0 = int(roi_frac[0] * (h - 1)), int(roi_frac[1] * (w - 1))
        y1 = y0 + 1 + int(roi_frac[2] * (h - y0 - 1))
        x1 = x0 + 1 + int(roi_frac[3] * (w - x0 - 1))
        try:
            _valid_image(_timed(decode, data, roi=(y0, x0, y1, x1)), np.uint8)
        except ValueError:
            pass
        try:
            scaled = _timed(decode_scaled, data, (max(1, (y1 - y0) // 4), 1), roi=(y0, x0, y1, x1))
            _valid_image(scaled.image, np.uint8)
        except ValueError:
            pass


@pytest.fixture(scope="module", autouse=True)
def watchdog():
    faulthandler.dump_traceback_later(WATCHDOG_S, exit=True, file=sys.stderr)
    yield
    faulthandler.cancel_dump_traceback_later()


FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,  # the same files on every run: a failure reproduces
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
UNIT = st.floats(0, 1, allow_nan=False)


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_mutated_files_decode_or_raise_value_error(family):
    @FUZZ_SETTINGS
    @given(mutated_file(family), st.tuples(UNIT, UNIT, UNIT, UNIT), st.booleans())
    def fuzz(data, roi_frac, gray):
        exercise(data, roi_frac, gray)

    fuzz()


def test_seeds_decode():
    # The fuzzing starts from valid files: each decodes to the 32x32 seed image.
    for name, data in SEEDS.items():
        image = decode(data)
        assert image.shape == (32, 32, 3), name
        assert peek_shape(data) == (32, 32, 3), name


def test_png_crc_fix_makes_a_mutated_png_pass_crc_checks():
    seed = SEEDS["png"]
    flipped = apply(seed, [("flip", 20, 0)])  # IHDR width: the CRC no longer matches
    with pytest.raises(ValueError):
        decode(flipped)
    assert fix_png_crcs(seed) == seed
    assert fix_png_crcs(flipped) != flipped
    assert fix_png_crcs(flipped)[:29] == flipped[:29]


def test_mutations_apply_as_described():
    assert apply(b"\x00\x01\x02", [("flip", 1, 1)]) == b"\x00\x03\x02"
    assert apply(b"abcdef", [("truncate", 2)]) == b"ab"
    assert apply(b"abc", [("insert", 1, b"XY")]) == b"aXYbc"
    assert apply(b"abcdef", [("delete", 1, 2)]) == b"adef"
    assert apply(b"abcdef", [("header", 2, b"ZZ")]) == b"abZZef"
