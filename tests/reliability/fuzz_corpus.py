"""The fuzz corpus of issue 30: valid seeds in every format the decoders take, and mutants.

``write_corpus(root, mutants, seed)`` writes ``seeds`` valid images (JPEG baseline and
progressive, PNG 8/16-bit, grey and RGBA, WebP lossy/lossless, BMP, TIFF, PNM) and
``mutants`` files made from them by a fixed-seed generator: byte flips, truncations,
corrupt header bytes, huge declared sizes, zero-length and garbage files. The same
seed always gives the same files (names carry the mutation, for the reports).
"""

from __future__ import annotations

import io
import struct
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

__all__ = ["MUTATIONS", "seed_images", "mutate", "write_corpus"]


def _image(rng: np.random.Generator, h: int, w: int, channels: int) -> np.ndarray:
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 7, y * 5, (x + y) * 3, x * y % 255][:channels], axis=-1)
    base = base + rng.integers(0, 30, base.shape)
    return np.clip(base, 0, 255).astype(np.uint8)


def _pil(array: np.ndarray, fmt: str, **params) -> bytes:
    mode = {1: "L", 3: "RGB", 4: "RGBA"}[array.shape[-1]]
    buffer = io.BytesIO()
    Image.fromarray(array if mode != "L" else array[..., 0], mode).save(buffer, fmt, **params)
    return buffer.getvalue()


def seed_images(count: int = 64, seed: int = 30) -> list[tuple[str, bytes]]:
    """``count`` valid files (name, bytes), cycling through the formats and sizes."""
    rng = np.random.default_rng(seed)
    makers = [
        ("jpg", lambda a: _pil(a[..., :3], "JPEG", quality=90)),
        ("jpg", lambda a: _pil(a[..., :3], "JPEG", quality=75, progressive=True)),
        ("jpg", lambda a: _pil(a[..., :1], "JPEG")),
        ("png", lambda a: _pil(a[..., :3], "PNG")),
        ("png", lambda a: _pil(a, "PNG")),
        ("png", lambda a: cv2.imencode(".png", (a[..., :3].astype(np.uint16) * 257))[1].tobytes()),
        ("webp", lambda a: _pil(a[..., :3], "WEBP", quality=80)),
        ("webp", lambda a: _pil(a[..., :3], "WEBP", lossless=True)),
        ("bmp", lambda a: _pil(a[..., :3], "BMP")),
        ("tif", lambda a: _pil(a[..., :3], "TIFF")),
        ("pnm", lambda a: cv2.imencode(".ppm", a[..., :3])[1].tobytes()),
    ]
    out = []
    for i in range(count):
        ext, make = makers[i % len(makers)]
        h, w = int(rng.integers(8, 48)), int(rng.integers(8, 48))
        out.append((f"seed{i:03d}.{ext}", make(_image(rng, h, w, 4))))
    return out


def _flip(data: bytearray, rng: np.random.Generator) -> bytearray:
    for _ in range(int(rng.integers(1, 9))):
        data[int(rng.integers(0, len(data)))] ^= 1 << int(rng.integers(0, 8))
    return data


def _truncate(data: bytearray, rng: np.random.Generator) -> bytearray:
    return data[: int(rng.integers(0, len(data)))]


def _header(data: bytearray, rng: np.random.Generator) -> bytearray:
    end = min(len(data), 64)
    for _ in range(int(rng.integers(1, 5))):
        data[int(rng.integers(0, end))] = int(rng.integers(0, 256))
    return data


def _huge(data: bytearray, rng: np.random.Generator) -> bytearray:
    """Declare a huge size where the format keeps it (JPEG SOF, PNG IHDR, BMP, WebP VP8X)."""
    big = int(rng.choice([65_000, 65_535, 40_000, 1 << 15]))
    if data[:2] == b"\xff\xd8":
        k = 2
        while k + 9 < len(data):
            marker, length = data[k + 1], struct.unpack(">H", data[k + 2 : k + 4])[0]
            if marker in (0xC0, 0xC1, 0xC2):
                data[k + 5 : k + 9] = struct.pack(">HH", big, big)
                break
            k += 2 + length
    elif data[:8] == b"\x89PNG\r\n\x1a\n":
        data[16:24] = struct.pack(">II", big * 4, big * 4)  # the CRC now fails too
    elif data[:2] == b"BM":
        data[18:26] = struct.pack("<ii", big, big)
    else:
        data[4:8] = struct.pack("<I", 0xFFFFFFF0)
    return data


def _empty(data: bytearray, rng: np.random.Generator) -> bytearray:
    return bytearray()


def _garbage(data: bytearray, rng: np.random.Generator) -> bytearray:
    keep = int(rng.integers(0, 16))  # a valid magic number, then noise
    return data[:keep] + bytearray(rng.integers(0, 256, int(rng.integers(1, 4096)), np.uint8))


MUTATIONS = {
    "flip": _flip,
    "trunc": _truncate,
    "header": _header,
    "huge": _huge,
    "empty": _empty,
    "garbage": _garbage,
}
_WEIGHTS = {"flip": 8, "trunc": 5, "header": 4, "huge": 2, "empty": 1, "garbage": 1}


def mutate(data: bytes, rng: np.random.Generator) -> tuple[str, bytes]:
    """One mutant of ``data``: (mutation name, bytes)."""
    names = list(_WEIGHTS)
    p = np.array([_WEIGHTS[n] for n in names], float)
    name = names[int(rng.choice(len(names), p=p / p.sum()))]
    return name, bytes(MUTATIONS[name](bytearray(data), rng))


def write_corpus(root: Path, mutants: int, seed: int = 30, seeds: int = 64) -> list[Path]:
    """Write the seeds and ``mutants`` mutants under ``root``; the paths, sorted."""
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    originals = seed_images(seeds, seed)
    for name, data in originals:
        (root / name).write_bytes(data)
    for i in range(mutants):
        name, data = originals[int(rng.integers(0, len(originals)))]
        kind, mutant = mutate(data, rng)
        stem, ext = name.rsplit(".", 1)
        (root / f"m{i:05d}_{kind}_{stem}.{ext}").write_bytes(mutant)
    return sorted(root.iterdir())
