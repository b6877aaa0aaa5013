"""What the JPEG entropy check costs (check_entropy: issue 30), on the CPU and in the GPU path.

    python bench/entropy_check.py --data DIR [--threads 16] [--rounds 3] [--json OUT]

Part 1, per image over the dataset's JPEGs: the structure check, the entropy check
(libjpeg-turbo reads every scan, no output) and a full CPU decode, on one thread and on
``--threads`` native threads. Part 2, the ResNet-50 training pipeline on the GPU (mixed
image_random_crop), img/s under on_error="raise" (no check), "skip" (the check on, beside
the GPU decode) and "skip" with check_entropy=False, alternating in one process over
``--rounds`` rounds; medians printed last.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import numpy as np

from chute.ops.decoders import image_codec, turbo
from chute.ops.decoders.jpeg_structure import structure_errors
from chute.tools.benchmark.pipelines import endless_batches, train_pipeline
from chute.tools.benchmark.runner import _sync


def per_image_ms(data: list[bytes], threads: int) -> dict[str, float]:
    """Best of 3 passes over ``data``, in ms per image."""
    decoder = turbo.load()
    assert decoder is not None, "needs libturbojpeg 3"
    arrays = [np.frombuffer(d, np.uint8) for d in data]
    limit = image_codec.MAX_IMAGE_PIXELS
    steps = {
        "structure, 1 thread": lambda: structure_errors(data),
        "entropy, 1 thread": lambda: decoder.entropy_errors(data, limit, 1),
        f"entropy, {threads} threads": lambda: decoder.entropy_errors(data, limit, threads),
        "full decode, 1 thread": lambda: [decoder.decode(a, "RGB") for a in arrays],
    }
    out = {}
    for name, step in steps.items():
        step()
        best = min(_timed(step) for _ in range(3))
        out[name] = round(1000 * best / len(data), 4)
    return out


def _timed(step: Any) -> float:
    t0 = time.perf_counter()
    step()
    return time.perf_counter() - t0


MODES = {
    "raise (no check)": ({}, {}),
    "skip (check on)": ({"on_error": "skip"}, {}),
    "skip, check_entropy=False": ({"on_error": "skip"}, {"check_entropy": False}),
}


def gpu_rate(root: str, mode: str, batch: int, threads: int, iters: int) -> float:
    pipe_kw, decoder_args = MODES[mode]
    pipe = train_pipeline(root, batch, threads, "gpu", decoder_args=decoder_args, **pipe_kw)
    batches = endless_batches(pipe)
    for _ in range(3):
        _sync(next(batches))
    t0 = time.perf_counter()
    for _ in range(iters):
        _sync(next(batches))
    rate = iters * batch / (time.perf_counter() - t0)
    pipe.close()
    return rate


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--iters", type=int, default=30)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--files", type=int, default=1024, help="JPEGs for part 1")
    p.add_argument("--no-gpu", action="store_true", help="part 1 only")
    p.add_argument("--json", default=None)
    a = p.parse_args()
    files = sorted(glob.glob(os.path.join(a.data, "**", "*.jpg"), recursive=True))[: a.files]
    data = [Path(f).read_bytes() for f in files]
    record: dict[str, Any] = {"args": vars(a), "nproc": os.cpu_count()}
    record["per_image_ms"] = per_image_ms(data, a.threads)
    record["mean_kb"] = round(sum(map(len, data)) / len(data) / 1e3, 1)
    rates: dict[str, list[float]] = {m: [] for m in MODES}
    if not a.no_gpu:
        for r in range(a.rounds):
            for mode in MODES if r % 2 == 0 else list(MODES)[::-1]:
                rates[mode].append(round(gpu_rate(a.data, mode, a.batch, a.threads, a.iters)))
                print(f"round {r} {mode}: {rates[mode][-1]} img/s", flush=True)
    record["gpu_train_img_s"] = rates
    if a.json:
        with open(a.json, "w") as f:
            json.dump(record, f, indent=1)
    print(f"\n{len(data)} JPEGs, mean {record['mean_kb']} KB")
    for name, ms in record["per_image_ms"].items():
        print(f"  {name:28} {ms:8.3f} ms/img")
    for mode, values in rates.items():
        if values:
            print(f"  GPU train, {mode:26} {statistics.median(values):8.0f} img/s  {values}")


if __name__ == "__main__":
    main()
