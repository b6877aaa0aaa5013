"""Pure-Python (GIL-holding) augmentation: chute threads vs chute processes vs torch DataLoader.

The same work in each configuration: N small uint8 images (HxWx3), each run
through ``python_augment`` (a per-pixel Python loop: gamma curve and a
horizontal blur of one channel, no NumPy inside the loop), in batches of B,
with W workers:

  chute_threads     fn.python_function on the pipeline's W worker threads
  chute_processes   fn.python_function(parallel=True), py_num_workers=W (fork)
  torch_dataloader  torch.utils.data.DataLoader(num_workers=W), same function in the Dataset

Reports samples per second (best of --repeats epochs, after one warm-up batch).
Usage: PYTHONPATH=core/src .nox/torch/bin/python bench/python_ops.py [--n 512] [--workers 2]
       [--json bench/results/python_ops_<date>.json]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
import time

import numpy as np

from chute import fn, pipeline_def

GAMMA = [round(255 * (v / 255) ** 0.8) for v in range(256)]


def python_augment(img: np.ndarray) -> np.ndarray:
    """Gamma on every pixel and a 3-tap horizontal blur of the red channel, in pure Python."""
    h, w, _ = img.shape
    flat = img.ravel().tolist()
    out = [GAMMA[v] for v in flat]
    for y in range(h):
        row = y * w * 3
        for x in range(1, w - 1):
            i = row + x * 3
            out[i] = (out[i - 3] + 2 * out[i] + out[i + 3]) // 4
    return np.array(out, dtype=np.uint8).reshape(h, w, 3)


def make_images(n: int, size: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.integers(0, 256, (size, size, 3), dtype=np.uint8) for _ in range(n)]


def chute_rate(images: list[np.ndarray], batch: int, workers: int, parallel: bool) -> float:
    batches = [images[i : i + batch] for i in range(0, len(images), batch)]

    @pipeline_def(
        batch_size=batch,
        num_threads=workers,
        seed=0,
        py_num_workers=workers,
        py_start_method="fork",
        prefetch_queue_depth=2,
    )
    def pipe():
        x = fn.external_source(source=batches, layout="HWC", cycle="raise")
        return fn.python_function(x, function=python_augment, parallel=parallel)

    p = pipe()
    p.build()
    p.run()  # warm-up: start threads / processes
    p.reset()
    start = time.perf_counter()
    n = 0
    while True:
        try:
            (out,) = p.run()
        except StopIteration:
            break
        n += len(out.as_array())
    elapsed = time.perf_counter() - start
    p.close()
    return n / elapsed


class AugmentDataset:
    """A map-style dataset applying python_augment (torch DataLoader baseline)."""

    def __init__(self, images: list[np.ndarray]):
        self.images = images

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int) -> np.ndarray:
        return python_augment(self.images[i])


def torch_rate(images: list[np.ndarray], batch: int, workers: int) -> float:
    import torch.utils.data

    loader = torch.utils.data.DataLoader(
        AugmentDataset(images),
        batch_size=batch,
        num_workers=workers,
        persistent_workers=True,
        multiprocessing_context="fork",
    )
    next(iter(loader))  # warm-up: start the workers
    start = time.perf_counter()
    n = sum(len(b) for b in loader)
    elapsed = time.perf_counter() - start
    return n / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    images = make_images(args.n, args.size)
    t0 = time.perf_counter()
    python_augment(images[0])
    per_sample_ms = (time.perf_counter() - t0) * 1e3
    runs = {
        "chute_threads": lambda: chute_rate(images, args.batch, args.workers, False),
        "chute_processes": lambda: chute_rate(images, args.batch, args.workers, True),
    }
    try:
        import torch  # noqa: F401

        runs["torch_dataloader"] = lambda: torch_rate(images, args.batch, args.workers)
    except ImportError:
        print("torch not installed: torch_dataloader skipped", file=sys.stderr)
    results = {}
    for name, run in runs.items():
        rates = [run() for _ in range(args.repeats)]
        results[name] = {"samples_per_s": round(max(rates), 1), "all": [round(r, 1) for r in rates]}
        print(
            f"{name:18s} {max(rates):9.1f} samples/s  (runs: {', '.join(f'{r:.1f}' for r in rates)})"
        )
    record = {
        "benchmark": "python_ops",
        "date": datetime.date.today().isoformat(),
        "command": " ".join(["python", *sys.argv]),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
            "processor": platform.processor() or platform.machine(),
        },
        "params": {**vars(args), "one_sample_ms": round(per_sample_ms, 2)},
        "results": results,
    }
    if args.json:
        with open(args.json, "w") as f:
            json.dump(record, f, indent=2)
            f.write("\n")
    print(json.dumps(record["params"]))


if __name__ == "__main__":
    main()
