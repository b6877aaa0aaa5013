"""RandAugment (n=2, m=9) training pipeline: chute beside torchvision and DALI.

The pipeline, the same in each system: read JPEGs -> random-resized-crop 224 (decoding
the crop window) -> RandAugment n=2, m=9 (31 bins, the 14 operations of the paper) ->
normalize to float32 CHW. Systems, each skipped when it cannot run here:

  chute-cpu   chute, decoding and augmenting on the CPU (num_threads workers)
  chute-gpu   chute, mixed decoding and augmentation on the GPU (needs CuPy and a GPU)
  dali-cpu    nvidia.dali.auto_aug.rand_augment on DALI's CPU pipeline (needs nvidia.dali)
  dali-gpu    the same with mixed decoding on the GPU (needs nvidia.dali and a GPU)
  tv-loader   torchvision's RandAugment(num_ops=2, magnitude=9) on PIL images in a torch
              DataLoader (num_workers = threads), RandomResizedCrop(224) before it

Systems run in rounds (each one rep in turn, started afresh), so that a machine whose
speed drifts slows every system alike; the median img/s of the rounds is printed.

Usage: PYTHONPATH=core/src python bench/rand_augment.py [DATA_DIR] [--n 512] [--batch 64]
       [--threads 2] [--iters 20] [--warmup 3] [--rounds 3] [--systems chute-cpu,tv-loader]
       [--json out.json]
DATA_DIR is an ImageNet-like folder (class subfolders of JPEGs); without it, --n images
are made in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import Any

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]
SIZE = 224


def library_batches(lib: str, root: str, batch: int, threads: int, gpu: bool) -> Iterator[Any]:
    """chute's or DALI's pipeline (one definition: chute ports DALI by its imports)."""
    if lib == "dali":
        from nvidia.dali import fn, pipeline_def, types
        from nvidia.dali.auto_aug import rand_augment
    else:
        from chute import fn, pipeline_def, types
        from chute.auto_aug import rand_augment

    @pipeline_def(
        batch_size=batch,
        num_threads=threads,
        device_id=0 if gpu else None,
        seed=0,
        enable_conditionals=True,
    )
    def pipe():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
        images = fn.decoders.image_random_crop(
            jpegs,
            device="mixed" if gpu else "cpu",
            output_type=types.RGB,
            random_area=[0.08, 1.0],
            random_aspect_ratio=[0.75, 4 / 3],
            num_attempts=100,
        )
        images = fn.resize(images, resize_x=SIZE, resize_y=SIZE)
        images = rand_augment.rand_augment(images, n=2, m=9)
        images = fn.crop_mirror_normalize(
            images, dtype=types.FLOAT, output_layout="CHW", mean=MEAN, std=STD
        )
        return images, labels

    p = pipe()
    p.build()
    while True:
        images, _ = p.run()
        yield images


def torchvision_batches(root: str, batch: int, threads: int) -> Iterator[Any]:
    import torch
    import torchvision
    from torchvision import transforms as T

    transform = T.Compose(
        [
            T.RandomResizedCrop(SIZE),
            T.RandAugment(num_ops=2, magnitude=9),
            T.ToTensor(),
            T.Normalize([m / 255 for m in MEAN], [s / 255 for s in STD]),
        ]
    )
    loader = torch.utils.data.DataLoader(
        torchvision.datasets.ImageFolder(root, transform),
        batch_size=batch,
        shuffle=True,
        num_workers=threads,
        drop_last=True,
        persistent_workers=threads > 0,
    )
    while True:
        for images, _ in loader:
            yield images


def gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


SYSTEMS: dict[str, Callable[[str, int, int], Iterator[Any]]] = {
    "chute-cpu": lambda root, b, t: library_batches("chute", root, b, t, gpu=False),
    "chute-gpu": lambda root, b, t: library_batches("chute", root, b, t, gpu=True),
    "dali-cpu": lambda root, b, t: library_batches("dali", root, b, t, gpu=False),
    "dali-gpu": lambda root, b, t: library_batches("dali", root, b, t, gpu=True),
    "tv-loader": torchvision_batches,
}


def _importable(module: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # a parent package is missing
        return False


def available(name: str) -> str | None:
    """Why system ``name`` cannot run here (None when it can)."""
    module = {"dali": "nvidia.dali", "tv": "torchvision"}.get(name.split("-")[0])
    if module and not _importable(module):
        return f"{module} is not installed"
    if name.endswith("-gpu") and not gpu_available():
        return "no GPU (CuPy sees none)"
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", help="ImageNet-like folder (default: make --n images)")
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--systems", default=",".join(SYSTEMS))
    parser.add_argument("--json")
    args = parser.parse_args()

    from chute.tools.benchmark.runner import machine_info, time_system

    root = args.data
    if root is None:
        from chute.tools.sample_data import make_imagenet_like

        root = make_imagenet_like(tempfile.mkdtemp(prefix="rand_augment_"), n=args.n)
    names = [n for n in args.systems.split(",") if n]
    results: dict[str, dict[str, Any]] = {}
    for name in names:
        if name not in SYSTEMS:
            sys.exit(f"unknown system {name!r}; systems: {', '.join(SYSTEMS)}")
        why = available(name)
        results[name] = {"skipped": why} if why else {"reps": []}
    for _ in range(args.rounds):
        for name in names:
            r = results[name]
            if "skipped" in r or "error" in r:
                continue
            gen = SYSTEMS[name](root, args.batch, args.threads)
            try:
                rep = time_system(gen, args.batch, args.warmup, args.iters, 1)
                r["reps"].extend(rep["reps"])
            except Exception as exc:  # one system failing must not hide the others
                r["error"] = f"{type(exc).__name__}: {exc}"[:300]
            finally:
                gen.close()
    print(f"RandAugment n=2 m=9, batch {args.batch}, {args.threads} threads, data {root}")
    for name, r in results.items():
        if r.get("reps"):
            r["img_per_s"] = round(statistics.median(r["reps"]), 1)
            print(f"  {name:10s} {r['img_per_s']:10.1f} img/s   rounds {r['reps']}")
        else:
            print(f"  {name:10s} {'-':>10s}         {r.get('skipped') or r.get('error')}")
    if args.json:
        record = {
            "benchmark": "rand_augment n=2 m=9",
            "args": vars(args),
            "machine": machine_info(),
        }
        with open(args.json, "w") as f:
            json.dump({**record, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
