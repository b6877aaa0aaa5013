"""Soak test: many shuffled epochs through one pipeline; memory, threads and files stay flat.

Makes a few hundred small JPEGs (plus a few bad files, so the on_error="skip"
path is soaked too) in a temporary folder, then runs

  readers.file(random_shuffle) -> decoders.image -> resize -> crop_mirror_normalize

through ``chute.Iterator`` for ``--epochs`` epochs, recording after each epoch
the resident memory (VmRSS from /proc/self/status), the thread count
(Threads, native threads included) and the open file descriptors
(/proc/self/fd). It passes when RSS grows less than ``--max-growth`` (5%)
from the end of epoch 1 to the end of the run and the thread and descriptor
counts never change after epoch 1. Writes bench/results/soak_<date>.json.

Usage: PYTHONPATH=core/src python bench/soak.py [--epochs 50] [--n 300] [--threads 2]
"""

from __future__ import annotations

import argparse
import datetime
import gc
import io
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

import chute
from chute import Iterator, fn, pipeline_def, types

RESULTS = Path(__file__).resolve().parent / "results"


def proc_status(field: str) -> int:
    """An integer field of /proc/self/status (VmRSS in kB, Threads)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise KeyError(field)


def snapshot(dataset: Path | None = None) -> dict[str, int]:
    """Resident memory (kB), native threads and open descriptors of this process, now.

    Descriptors of dataset files are counted apart: the reader thread runs ahead into the
    next epoch, so one may be open for a moment while we look; that is a read, not a leak.
    """
    gc.collect()  # count what is kept, not garbage waiting for a collection
    fds, reading = 0, 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed between listdir and readlink (the listdir's own fd)
            continue
        if dataset is not None and target.startswith(str(dataset)):
            reading += 1
        else:
            fds += 1
    return {
        "rss_kb": proc_status("VmRSS"),
        "threads": proc_status("Threads"),
        "fds": fds,
        "dataset_files_open": reading,
    }


def make_dataset(root: Path, n: int, bad: int, classes: int, seed: int = 0) -> None:
    """``n`` photo-like JPEGs of 96..256 px in ``classes`` folders, plus ``bad`` broken files."""
    rng = np.random.default_rng(seed)
    for c in range(classes):
        (root / f"class{c:02d}").mkdir(parents=True)
    for i in range(n):
        h, w = (int(v) for v in rng.integers(96, 257, 2))
        small = rng.integers(0, 256, (h // 16 + 2, w // 16 + 2, 3), dtype=np.uint8)
        photo = cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC)
        buf = io.BytesIO()
        Image.fromarray(photo).save(buf, "JPEG", quality=85)
        (root / f"class{i % classes:02d}" / f"{i:05d}.jpg").write_bytes(buf.getvalue())
    for i in range(bad):
        data = buf.getvalue()[: len(buf.getvalue()) // 3] if i % 2 else b"not an image"
        (root / f"class{i % classes:02d}" / f"bad{i:03d}.jpg").write_bytes(data)


def build_pipeline(root: Path, batch_size: int, threads: int):
    @pipeline_def(batch_size=batch_size, num_threads=threads, seed=0, on_error="skip")
    def pipe():
        jpegs, labels = fn.readers.file(file_root=str(root), random_shuffle=True, name="Reader")
        images = fn.decoders.image(jpegs)
        images = fn.resize(images, resize_shorter=80)
        images = fn.crop_mirror_normalize(
            images,
            crop=(64, 64),
            crop_pos_x=fn.random.uniform(range=(0, 1)),
            crop_pos_y=fn.random.uniform(range=(0, 1)),
            mirror=fn.random.coin_flip(),
            mean=[123.7, 116.3, 103.5],
            std=[58.4, 57.1, 57.4],
            dtype=types.FLOAT,
            output_layout="CHW",
        )
        return images, labels

    return pipe()


def machine() -> dict[str, object]:
    import simplejpeg

    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "chute": chute.__version__,
        "numpy": np.__version__,
        "opencv": cv2.__version__,
        "pillow": Image.__version__,
        "simplejpeg": simplejpeg.__version__,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--n", type=int, default=300, help="good JPEGs")
    parser.add_argument("--bad", type=int, default=6, help="broken files (skipped)")
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-growth", type=float, default=0.05, help="allowed RSS growth")
    parser.add_argument("--json", default=None, help="default: bench/results/soak_<date>.json")
    args = parser.parse_args()

    before = snapshot()
    with tempfile.TemporaryDirectory(prefix="chute-soak-") as tmp:
        root = Path(tmp)
        make_dataset(root, args.n, args.bad, args.classes)
        pipe = build_pipeline(root, args.batch_size, args.threads)
        it = Iterator(pipe, ["images", "labels"], reader_name="Reader")
        rows = [{"epoch": 0, **snapshot(root), "seconds": 0.0, "images": 0}]
        for epoch in range(1, args.epochs + 1):
            start = time.perf_counter()
            images = 0
            for (batch,) in it:
                images += batch.real
                del batch
            it.reset()
            row = {
                "epoch": epoch,
                **snapshot(root),
                "seconds": round(time.perf_counter() - start, 3),
                "images": images,
            }
            rows.append(row)
            print(
                f"epoch {epoch:3d}: {images} images in {row['seconds']:.2f} s, "
                f"RSS {row['rss_kb'] / 1024:.1f} MiB, {row['threads']} threads, {row['fds']} fds",
                flush=True,
            )
        skipped = pipe.error_summary()["skipped"]
        pipe.close()
    after = snapshot()

    base, last = rows[1], rows[-1]
    growth = (last["rss_kb"] - base["rss_kb"]) / base["rss_kb"]
    steady = rows[1:]
    checks = {
        "rss_growth_after_epoch_1": round(growth, 4),
        "rss_growth_ok": growth < args.max_growth,
        "threads_constant": len({r["threads"] for r in steady}) == 1,
        "fds_constant": len({r["fds"] for r in steady}) == 1,
        "images_per_epoch_exact": all(r["images"] == args.n for r in steady),
        "skipped_per_epoch": skipped / args.epochs,
    }
    passed = all(v for k, v in checks.items() if k.endswith(("_ok", "_constant", "_exact")))
    report = {
        "benchmark": "soak",
        "command": "PYTHONPATH=core/src python " + " ".join(["bench/soak.py", *sys.argv[1:]]),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": machine(),
        "config": vars(args),
        "before_pipeline": before,
        "epochs": rows,
        "after_close": after,
        "checks": checks,
        "passed": passed,
    }
    out = Path(args.json) if args.json else RESULTS / f"soak_{datetime.date.today()}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(
        f"RSS {base['rss_kb'] / 1024:.1f} -> {last['rss_kb'] / 1024:.1f} MiB "
        f"({growth:+.1%} after epoch 1), threads {sorted({r['threads'] for r in steady})}, "
        f"fds {sorted({r['fds'] for r in steady})}, {checks['skipped_per_epoch']:.0f} skipped/epoch; "
        f"before the pipeline {before['threads']} threads, {before['fds']} fds; "
        f"after close: {after['threads']} threads, {after['fds']} fds"
    )
    print(("PASSED" if passed else "FAILED") + f"; wrote {out}")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())
