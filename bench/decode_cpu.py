"""CPU JPEG decoding throughput: Pillow vs chute, full decode and random-resized-crop.

Makes N ImageNet-like JPEGs (about 500x375, quality 90, smooth colour fields
plus noise) in a temporary directory, reads them into memory, then measures
images per second with a thread pool, all in one process:

  pillow_full         Image.open + convert("RGB") + np.asarray
  chute_full          chute decode (simplejpeg / libjpeg-turbo)
  pillow_random_crop  torchvision-style: random window, decode, crop, bilinear resize
  chute_random_crop   random window, DCT-domain scaled decode of the roi, cv2 resize

Usage: PYTHONPATH=core/src python bench/decode_cpu.py [--n 512] [--threads 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

from chute.ops.decoders.image_codec import decode, decode_resized, peek_shape
from chute.runtime.crop_window import random_crop_window


def make_photo(height: int, width: int, rng: np.random.Generator) -> np.ndarray:
    """A photo-like image: smooth random colour fields plus sensor-like noise."""
    small = rng.integers(0, 256, (height // 24 + 2, width // 24 + 2, 3), dtype=np.uint8)
    smooth = cv2.resize(small, (width, height), interpolation=cv2.INTER_CUBIC).astype(np.int16)
    noise = rng.normal(0, 6, (height, width, 3))
    return np.clip(smooth + noise, 0, 255).astype(np.uint8)


def make_dataset(directory: Path, count: int, seed: int = 0) -> list[bytes]:
    """Write `count` JPEGs of ImageNet-like sizes into `directory` and return their bytes."""
    rng = np.random.default_rng(seed)
    encoded = []
    for index in range(count):
        # Mostly landscape 500x375 with some portrait and size variety, like ImageNet.
        height, width = (375, 500) if rng.random() < 0.7 else (500, 375)
        height += int(rng.integers(-40, 41))
        width += int(rng.integers(-40, 41))
        path = directory / f"{index:05d}.jpg"
        Image.fromarray(make_photo(height, width, rng)).save(path, "JPEG", quality=90)
        encoded.append(path.read_bytes())
    return encoded


def pillow_full(data: bytes, index: int) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def chute_full(data: bytes, index: int) -> np.ndarray:
    return decode(data)


def pillow_random_crop(data: bytes, index: int, size: int = 224) -> np.ndarray:
    image = Image.open(io.BytesIO(data))
    width, height = image.size
    y0, x0, crop_h, crop_w = random_crop_window(height, width, rng=np.random.default_rng(index))
    crop = image.convert("RGB").crop((x0, y0, x0 + crop_w, y0 + crop_h))
    return np.asarray(crop.resize((size, size), Image.BILINEAR))


def chute_random_crop(data: bytes, index: int, size: int = 224) -> np.ndarray:
    height, width, _ = peek_shape(data)
    y0, x0, crop_h, crop_w = random_crop_window(height, width, rng=np.random.default_rng(index))
    return decode_resized(data, (size, size), roi=(y0, x0, y0 + crop_h, x0 + crop_w))


def measure(
    cases: dict[str, Callable[[bytes, int], np.ndarray]],
    encoded: list[bytes],
    threads: int,
    repeats: int,
) -> dict[str, float]:
    """Best-of-`repeats` images per second of each case over `encoded` with a thread pool.

    Cases take turns within each repeat, so drift in machine speed (shared
    hosts, turbo clocks) hits them all alike.
    """
    best = dict.fromkeys(cases, float("inf"))
    indices = list(range(len(encoded)))
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for function in cases.values():  # warm up caches and lazy imports
            list(pool.map(function, encoded[: 4 * threads], indices[: 4 * threads]))
        for _ in range(repeats):
            for name, function in cases.items():
                started = time.perf_counter()
                for _ in pool.map(function, encoded, indices, chunksize=8):
                    pass
                best[name] = min(best[name], time.perf_counter() - started)
    return {name: len(encoded) / seconds for name, seconds in best.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=512, help="number of JPEGs")
    parser.add_argument("--threads", type=int, default=2, help="thread-pool size")
    parser.add_argument("--repeats", type=int, default=5, help="best of this many passes")
    parser.add_argument("--json", type=Path, default=None, help="write results here")
    args = parser.parse_args()

    # The pool is the parallelism; OpenCV's own threads would oversubscribe it.
    cv2.setNumThreads(1)
    with tempfile.TemporaryDirectory(prefix="chute_decode_bench_") as directory:
        encoded = make_dataset(Path(directory), args.n)
    mean_kib = sum(map(len, encoded)) / len(encoded) / 1024

    cases = {
        "pillow_full": pillow_full,
        "chute_full": chute_full,
        "pillow_random_crop": pillow_random_crop,
        "chute_random_crop": chute_random_crop,
    }
    results = measure(cases, encoded, args.threads, args.repeats)

    print(f"{args.n} JPEGs, ~500x375 q90, mean {mean_kib:.0f} KiB; {args.threads} threads")
    print(f"{'case':<22}{'img/s':>10}{'vs Pillow':>11}")
    for name, rate in results.items():
        baseline = results["pillow_full" if name.endswith("full") else "pillow_random_crop"]
        print(f"{name:<22}{rate:>10.0f}{rate / baseline:>10.2f}x")

    if args.json is not None:
        record = {
            "images": args.n,
            "threads": args.threads,
            "mean_kib": round(mean_kib, 1),
            "cpu_count": os.cpu_count(),
            "machine": platform.processor() or platform.machine(),
            "images_per_second": {name: round(rate, 1) for name, rate in results.items()},
        }
        args.json.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
