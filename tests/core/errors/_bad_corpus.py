"""A folder of good images next to every kind of bad input issue 7 names, built on the fly.

Shared by the pipeline tests (test_bad_inputs.py) and the ``chute check``
tests (test_check.py); nothing here depends on files outside the test's tmp.
"""

from __future__ import annotations

import io
import os
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image


def encode(image: Image.Image, fmt: str, **params) -> bytes:
    """Encode a Pillow image and return the bytes."""
    buffer = io.BytesIO()
    image.save(buffer, fmt, **params)
    return buffer.getvalue()


def rgb(seed: int, size: int = 16) -> Image.Image:
    """A small random colour image."""
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size, size, 3), np.uint8), "RGB")


def png_chunk(kind: bytes, data: bytes) -> bytes:
    """One PNG chunk with its CRC."""
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def huge_png(width: int = 100_000, height: int = 100_000) -> bytes:
    """A valid-looking PNG whose IHDR claims width x height RGB pixels (with a tiny IDAT)."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    idat = zlib.compress(b"\x00" * 16)
    return (
        b"\x89PNG\r\n\x1a\n"
        + png_chunk(b"IHDR", ihdr)
        + png_chunk(b"IDAT", idat)
        + png_chunk(b"IEND", b"")
    )


def huge_jpeg(jpeg: bytes, width: int = 65_000, height: int = 65_000) -> bytes:
    """A real JPEG whose baseline frame header (SOF0) is rewritten to claim width x height."""
    sof = jpeg.index(b"\xff\xc0")
    return jpeg[: sof + 5] + struct.pack(">HH", height, width) + jpeg[sof + 9 :]


def sixteen_bit_png(seed: int) -> bytes:
    """A 16-bit RGB PNG (Pillow cannot write one; OpenCV can)."""
    import cv2

    rng = np.random.default_rng(seed)
    ok, buf = cv2.imencode(".png", rng.integers(0, 65536, (12, 10, 3), np.uint16))
    assert ok
    return buf.tobytes()


@dataclass
class Corpus:
    """Where everything lies: good and bad files (relative to root) and the reasons expected."""

    root: Path
    good: list[str] = field(default_factory=list)
    # relative path -> a fragment the error reason must contain
    bad: dict[str, str] = field(default_factory=dict)
    classes: list[str] = field(default_factory=list)
    unreadable: str | None = None  # chmod 000 file; None when chmod does not block reads

    def paths(self, names: list[str]) -> list[str]:
        return sorted(str(self.root / n) for n in names)


def can_block_reads(folder: Path) -> bool:
    """Whether chmod 000 stops this process from reading a file (not so for root)."""
    probe = folder / ".probe"
    probe.write_bytes(b"x")
    probe.chmod(0)
    try:
        with open(probe, "rb"):
            return False
    except PermissionError:
        return True
    finally:
        probe.chmod(0o600)
        probe.unlink()


def build_corpus(root: Path, with_unreadable: bool = True) -> Corpus:
    """Write the corpus under ``root``: classes a (good + bad), b (no images), c (good)."""
    corpus = Corpus(root, classes=["a", "b", "c"])
    for cls in corpus.classes:
        (root / cls).mkdir(parents=True)
    (root / "b" / "notes.txt").write_text("a class folder with no images")

    def put(name: str, data: bytes, reason: str | None = None) -> None:
        (root / name).write_bytes(data)
        if reason is None:
            corpus.good.append(name)
        else:
            corpus.bad[name] = reason

    for i in range(4):
        put(f"a/photo{i}.jpg", encode(rgb(i), "JPEG", quality=90))
        put(f"c/photo{i}.png", encode(rgb(10 + i), "PNG"))
    put("a/png_named.jpg", encode(rgb(20), "PNG"))  # decodes by content, not by name
    put("a/cmyk.jpg", encode(rgb(21).convert("CMYK"), "JPEG"))
    put("a/gray.jpg", encode(rgb(22).convert("L"), "JPEG"))
    put("c/gray.png", encode(rgb(23).convert("L"), "PNG"))
    put("c/palette.png", encode(rgb(24).convert("P"), "PNG"))
    put("c/deep16.png", sixteen_bit_png(25))

    jpeg = encode(rgb(30, 32), "JPEG", quality=90)
    png = encode(rgb(31, 32), "PNG")
    put("a/empty.jpg", b"", "0 bytes")
    put("a/truncated.jpg", jpeg[: len(jpeg) // 2], "jpeg")
    put("c/truncated.png", png[: len(png) // 2], "png")
    put("a/text.jpg", b"this is a text file, not a JPEG\n" * 4, "text")
    put("a/random.jpg", np.random.default_rng(32).bytes(500), "not an image")
    put("a/document.jpg", b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n", "pdf")
    put("c/huge.png", huge_png(), "max_pixels")
    put("a/huge.jpg", huge_jpeg(jpeg), "max_pixels")
    if with_unreadable and can_block_reads(root):
        put("c/locked.png", encode(rgb(33), "PNG"), "Permission denied")
        (root / "c/locked.png").chmod(0)
        corpus.unreadable = "c/locked.png"
    return corpus


def restore_permissions(corpus: Corpus) -> None:
    """Let pytest clean up the tmp folder."""
    if corpus.unreadable:
        os.chmod(corpus.root / corpus.unreadable, 0o600)
