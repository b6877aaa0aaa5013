"""Random crop + resize to 224 of large photos on the CPU: DCT-scaled decoding side by side.

Makes N photo-like JPEGs of a large size (default 1600x1200, quality 90) in a
directory, then measures images per second in one process, same thread count:

  chute-dct      decoders.image_random_crop(dct_scaling=True) -> resize 224x224
  chute          the same without dct_scaling (region decode at full scale)
  dali-cpu       DALI's CPU decoders.image_random_crop -> resize 224x224 (device_id=None)
  pil-threads    Pillow: decode, crop, antialiased resize, on a thread pool

Usage: PYTHONPATH=core/src python bench/downscale_cpu.py [--n 256] [--size 1200x1600]
       [--threads 2] [--json bench/results/downscale_cpu_<date>.json]
DALI: pip install nvidia-dali-cuda120 (skipped with a note when missing).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import cv2
import numpy as np
from PIL import Image

from chute.tools.benchmark.pipelines import endless_batches
from chute.tools.benchmark.runner import machine_info, time_system
from chute.tools.benchmark.systems import files_of, rrc_window


def make_photos(root: str, count: int, height: int, width: int) -> None:
    """Write `count` photo-like JPEGs (smooth colour fields, edges, noise) under root/a/."""
    os.makedirs(os.path.join(root, "a"), exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(count):
        path = os.path.join(root, "a", f"{i:05d}.jpg")
        if os.path.exists(path):
            continue
        small = rng.integers(0, 256, (height // 40 + 2, width // 40 + 2, 3), dtype=np.uint8)
        image = cv2.resize(small, (width, height), interpolation=cv2.INTER_CUBIC).astype(np.int16)
        for _ in range(6):  # a few hard edges, as objects give
            x0, y0 = int(rng.integers(0, width)), int(rng.integers(0, height))
            color = [int(c) for c in rng.integers(0, 256, 3)]
            cv2.circle(image, (x0, y0), int(rng.integers(20, height // 3)), color, -1)
        image = np.clip(image + rng.normal(0, 5, image.shape), 0, 255).astype(np.uint8)
        Image.fromarray(image).save(path, quality=90)


def chute_batches(root: str, batch: int, threads: int, dct: bool) -> Iterator[Any]:
    from chute import fn, pipeline_def

    @pipeline_def(batch_size=batch, num_threads=threads, seed=0, device_id=None)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
        images = fn.decoders.image_random_crop(jpegs, dct_scaling=dct)
        return fn.resize(images, resize_x=224, resize_y=224), labels

    return endless_batches(pipe())


def dali_batches(root: str, batch: int, threads: int) -> Iterator[Any]:
    from nvidia.dali import fn, pipeline_def

    @pipeline_def(batch_size=batch, num_threads=threads, device_id=None, seed=0)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
        images = fn.decoders.image_random_crop(jpegs, device="cpu")
        return fn.resize(images, resize_x=224, resize_y=224), labels

    p = pipe()
    p.build()
    while True:
        yield p.run()[0]


def pil_batches(root: str, batch: int, threads: int) -> Iterator[Any]:
    files = files_of(root)
    pool = ThreadPoolExecutor(threads)

    def load(args: tuple[str, int]) -> np.ndarray:
        path, seed = args
        with Image.open(path) as im:
            im = im.convert("RGB")
            top, left, h, w = rrc_window(im.height, im.width, random.Random(seed))
            im = im.resize((224, 224), Image.BILINEAR, box=(left, top, left + w, top + h))
            return np.asarray(im)

    rng = random.Random(0)
    while True:
        rng.shuffle(files)
        for s in range(0, len(files) - batch + 1, batch):
            yield list(pool.map(load, [(f, rng.getrandbits(32)) for f, _ in files[s : s + batch]]))


def main(argv: list[str] | None = None) -> None:
    """Make the data, time each system, print a table and write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="/tmp/chute_downscale_data")
    parser.add_argument("--n", type=int, default=256)
    parser.add_argument("--size", default="1200x1600", help="HxW of the photos")
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--iters", type=int, default=6)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    height, width = (int(v) for v in args.size.split("x"))
    make_photos(args.data, args.n, height, width)
    systems = {
        "chute-dct": lambda: chute_batches(args.data, args.batch_size, args.threads, True),
        "chute": lambda: chute_batches(args.data, args.batch_size, args.threads, False),
        "dali-cpu": lambda: dali_batches(args.data, args.batch_size, args.threads),
        "pil-threads": lambda: pil_batches(args.data, args.batch_size, args.threads),
    }
    results: dict[str, Any] = {}
    for name, make in systems.items():
        try:
            gen = make()
            results[name] = time_system(gen, args.batch_size, 2, args.iters, args.reps)
        except ImportError as exc:
            results[name] = {"error": f"not installed: {exc}"}
        print(f"{name:12s} {results[name]}", file=sys.stderr, flush=True)
    record = {
        "date": datetime.date.today().isoformat(),
        "command": "python bench/downscale_cpu.py " + " ".join(argv or sys.argv[1:]),
        "images": args.n,
        "size_hw": [height, width],
        "batch": args.batch_size,
        "threads": args.threads,
        "machine": machine_info(),
        "results": results,
    }
    base = results.get("chute-dct", {}).get("img_per_s")
    print(f"\nrandom crop + resize 224 of {height}x{width} JPEGs, {args.threads} threads")
    print(f"{'system':12s} {'img/s':>8s}  vs chute-dct")
    for name, r in results.items():
        rate = r.get("img_per_s")
        if rate is None:
            print(f"{name:12s} {'-':>8s}  {r.get('error', '')}")
        else:
            print(f"{name:12s} {rate:8.1f}  {base / rate if base else float('nan'):.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
