"""SSD300 training input pipeline on COCO-like data: chute beside DALI.

The pipeline, the same code for both (DALI's SSD example, examples/dali_ports/
ssd_training_pipeline.py): readers.coco (relative ltrb boxes) -> random_bbox_crop (IoU
thresholds 0..0.9, scaling 0.3..1, aspect 0.5..2) -> decoders.image_slice (the crop window
only) -> resize 300x300 -> hsv + brightness_contrast -> bb_flip + crop_mirror_normalize
(mirror, float CHW) -> box_encoder against SSD300's 8,732 default boxes. Systems, each
skipped (with the reason) when it cannot run here:

  chute-cpu        chute on the CPU (num_threads workers)
  chute-gpu        chute with mixed decoding and the image and box ops on the GPU (CuPy, a GPU)
  dali-cpu         DALI's CPU pipeline (needs nvidia.dali)
  dali-gpu         the same with mixed decoding and GPU ops (needs nvidia.dali and a GPU)
  torchvision-cpu  torchvision's transforms v2 detection recipe in a torch DataLoader
                   (threads = workers): PIL decode -> RandomIoUCrop (the same thresholds,
                   scales and aspect ratios) -> SanitizeBoundingBoxes -> Resize 300x300 ->
                   ColorJitter -> RandomHorizontalFlip -> ToDtype float + Normalize; boxes
                   are tv_tensors.BoundingBoxes. No box encoding: torchvision's SSD matches
                   boxes to anchors inside the model. Needs torch and torchvision.

Data: ImageNet-like JPEGs (chute.tools.sample_data) with a generated COCO annotation file
(1 to 6 boxes an image, 80 categories), made once per call. Systems run in rounds (each one
rep in turn, started afresh); the median img/s of the rounds is printed, with the spread
(min..max) and, for GPU systems, the GPU memory the first rep added.

Usage: PYTHONPATH=core/src python bench/detection.py [--n 512] [--batch 64] [--threads 2]
       [--iters 10] [--warmup 2] [--rounds 3] [--systems chute-cpu,dali-cpu,...]
       [--fresh] [--python SYSTEM=INTERPRETER ...] [--data ROOT,ANNOTATIONS] [--json out.json]

  --fresh      each rep in a new process (systems alternate; no state carried between reps)
  --python     with --fresh, run SYSTEM's reps with another interpreter, e.g.
               --python dali-cpu=/work/main/.nox/dali_parity/bin/python (a venv with DALI)
               --python torchvision-cpu=/work/venv-plugins/bin/python (a venv with torch)
  --data       reuse a data set made before (the root and annotation file it printed)

A system named SYSTEM@LABEL runs SYSTEM under its own --python (e.g. chute-cpu@base with an
interpreter script that puts another checkout's core/src on PYTHONPATH): an A/B of two trees.

On the device, all arms in one call:
  PYTHONPATH=core/src python bench/detection.py --systems chute-cpu,chute-gpu,dali-cpu,dali-gpu
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from collections.abc import Callable, Iterator
from itertools import product
from math import sqrt
from typing import Any

import numpy as np

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def ssd300_anchors() -> list[float]:
    """SSD300's 8,732 default boxes (ltrb, relative), flattened for box_encoder."""
    feat, steps = (38, 19, 10, 5, 3, 1), (8, 16, 32, 64, 100, 300)
    scales = (21, 45, 99, 153, 207, 261, 315)
    ratios = ((2,), (2, 3), (2, 3), (2, 3), (2,), (2,))
    boxes = []
    for k, fsize in enumerate(feat):
        s1, s2 = scales[k] / 300, scales[k + 1] / 300
        sizes = [(s1, s1), (sqrt(s1 * s2), sqrt(s1 * s2))]
        for a in ratios[k]:
            sizes += [(s1 * sqrt(a), s1 / sqrt(a)), (s1 / sqrt(a), s1 * sqrt(a))]
        cells = 300 / steps[k]
        for i, j in product(range(fsize), repeat=2):
            cx, cy = (j + 0.5) / cells, (i + 0.5) / cells
            boxes += [(cx, cy, w, h) for w, h in sizes]
    xywh = np.clip(np.array(boxes), 0, 1)
    ltrb = np.concatenate([xywh[:, :2] - xywh[:, 2:] / 2, xywh[:, :2] + xywh[:, 2:] / 2], 1)
    assert len(ltrb) == 8732
    return ltrb.astype(np.float32).ravel().tolist()


def make_coco_like(n: int) -> tuple[str, str]:
    """n ImageNet-like JPEGs and a COCO annotation file with random boxes for them."""
    from PIL import Image

    from chute.tools.sample_data import make_imagenet_like

    root = make_imagenet_like(tempfile.mkdtemp(prefix="detection_bench_"), n=n)
    rng = np.random.default_rng(0)
    images, anns = [], []
    files = sorted(
        os.path.relpath(os.path.join(d, f), root)
        for d, _, fs in os.walk(root)
        for f in fs
        if f.endswith(".jpg")
    )
    for k, name in enumerate(files):
        with Image.open(os.path.join(root, name)) as im:
            w, h = im.size
        images.append({"id": k + 1, "file_name": name, "width": w, "height": h})
        for _ in range(int(rng.integers(1, 7))):
            bw, bh = rng.uniform(0.1, 0.7) * w, rng.uniform(0.1, 0.7) * h
            x, y = rng.uniform(0, w - bw), rng.uniform(0, h - bh)
            anns.append(
                {
                    "id": len(anns) + 1,
                    "image_id": k + 1,
                    "bbox": [x, y, bw, bh],
                    "area": bw * bh,
                    "category_id": int(rng.integers(1, 81)),
                    "iscrowd": 0,
                }
            )
    path = os.path.join(root, "instances.json")
    categories = [{"id": c, "name": str(c)} for c in range(1, 81)]
    with open(path, "w") as f:
        json.dump({"images": images, "annotations": anns, "categories": categories}, f)
    return root, path


def library_batches(
    lib: str, root: str, ann: str, batch: int, threads: int, gpu: bool
) -> Iterator[Any]:
    """chute's or DALI's SSD pipeline (one definition: chute ports DALI by its imports)."""
    if lib == "dali":
        from nvidia.dali import fn, pipeline_def, types
    else:
        from chute import fn, pipeline_def, types

    anchors = ssd300_anchors()

    @pipeline_def(batch_size=batch, num_threads=threads, device_id=0 if gpu else None, seed=0)
    def pipe():
        jpegs, bboxes, labels = fn.readers.coco(
            file_root=root, annotations_file=ann, skip_empty=True, ratio=True, ltrb=True,
            random_shuffle=True, name="Reader",
        )  # fmt: skip
        crop_begin, crop_size, bboxes, labels = fn.random_bbox_crop(
            bboxes, labels, aspect_ratio=[0.5, 2.0], thresholds=[0, 0.1, 0.3, 0.5, 0.7, 0.9],
            scaling=[0.3, 1.0], bbox_layout="xyXY", allow_no_crop=True, num_attempts=50,
        )  # fmt: skip
        images = fn.decoders.image_slice(
            jpegs, crop_begin, crop_size, device="mixed" if gpu else "cpu", output_type=types.RGB
        )
        flip = fn.random.coin_flip(probability=0.5)
        images = fn.resize(images, resize_x=300, resize_y=300)
        images = fn.hsv(
            images, dtype=types.FLOAT, hue=fn.random.uniform(range=[-0.5, 0.5]),
            saturation=fn.random.uniform(range=[0.5, 1.5]),
        )  # fmt: skip
        images = fn.brightness_contrast(
            images, contrast_center=128, dtype=types.UINT8,
            brightness=fn.random.uniform(range=[0.875, 1.125]),
            contrast=fn.random.uniform(range=[0.5, 1.5]),
        )  # fmt: skip
        bboxes = fn.bb_flip(bboxes, ltrb=True, horizontal=flip)
        images = fn.crop_mirror_normalize(
            images, crop=(300, 300), mean=MEAN, std=STD, mirror=flip, dtype=types.FLOAT,
            output_layout="CHW",
        )  # fmt: skip
        bboxes, labels = fn.box_encoder(bboxes, labels, criteria=0.5, anchors=anchors)
        return images, bboxes, labels

    p = pipe()
    p.build()
    while True:
        images, _, _ = p.run()
        yield images


def _collate(samples: list) -> tuple[Any, list]:
    import torch

    return torch.stack([img for img, _ in samples]), [target for _, target in samples]


def torchvision_batches(root: str, ann: str, batch: int, threads: int) -> Iterator[Any]:
    """torchvision's transforms v2 detection recipe on the same data, in a torch DataLoader."""
    import torch
    from PIL import Image
    from torchvision import tv_tensors
    from torchvision.transforms import v2

    with open(ann) as f:
        coco = json.load(f)
    boxes: dict[int, list] = {}
    for a in coco["annotations"]:
        boxes.setdefault(a["image_id"], []).append((a["bbox"], a["category_id"]))
    images = [im for im in coco["images"] if im["id"] in boxes]  # skip_empty, as the reader
    transform = v2.Compose(
        [
            v2.RandomIoUCrop(
                min_scale=0.3,
                max_scale=1.0,
                min_aspect_ratio=0.5,
                max_aspect_ratio=2.0,
                trials=50,
            ),
            v2.SanitizeBoundingBoxes(),
            v2.Resize((300, 300)),
            v2.ColorJitter(
                brightness=(0.875, 1.125),
                contrast=(0.5, 1.5),
                saturation=(0.5, 1.5),
                hue=0.5 / 360,  # DALI's hue is in degrees, torchvision's in turns
            ),
            v2.RandomHorizontalFlip(),
            v2.ToDtype(torch.float32, scale=True),
            v2.Normalize([m / 255 for m in MEAN], [s / 255 for s in STD]),
        ]
    )

    class CocoLike(torch.utils.data.Dataset):
        def __len__(self) -> int:
            return len(images)

        def __getitem__(self, i: int) -> Any:
            info = images[i]
            with Image.open(os.path.join(root, info["file_name"])) as im:
                image = tv_tensors.Image(v2.functional.pil_to_tensor(im.convert("RGB")))
            rows = boxes[info["id"]]
            target = {
                "boxes": tv_tensors.BoundingBoxes(
                    torch.tensor([b for b, _ in rows], dtype=torch.float32),
                    format="XYWH",
                    canvas_size=(info["height"], info["width"]),
                ),
                "labels": torch.tensor([c for _, c in rows]),
            }
            return transform(image, target)

    loader = torch.utils.data.DataLoader(
        CocoLike(), batch_size=batch, shuffle=True, num_workers=threads, collate_fn=_collate
    )
    while True:
        for images_batch, _ in loader:
            yield images_batch


def gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


SYSTEMS: dict[str, Callable[[str, str, int, int], Iterator[Any]]] = {
    "chute-cpu": lambda r, a, b, t: library_batches("chute", r, a, b, t, gpu=False),
    "chute-gpu": lambda r, a, b, t: library_batches("chute", r, a, b, t, gpu=True),
    "dali-cpu": lambda r, a, b, t: library_batches("dali", r, a, b, t, gpu=False),
    "dali-gpu": lambda r, a, b, t: library_batches("dali", r, a, b, t, gpu=True),
    "torchvision-cpu": torchvision_batches,
}


def available(name: str) -> str | None:
    """Why system ``name`` cannot run here (None when it can)."""
    import importlib.util

    needs = {"dali": ["nvidia.dali"], "torchvision": ["torch", "torchvision"]}
    for module in needs.get(name.split("-")[0], []):
        try:
            missing = importlib.util.find_spec(module) is None
        except ModuleNotFoundError:
            missing = True
        if missing:
            return f"{module} is not installed"
    if name.startswith("torchvision"):
        try:
            import torchvision.transforms.v2  # noqa: F401
        except Exception as exc:  # a wheel that does not match torch fails on import
            return f"torchvision does not import: {type(exc).__name__}: {exc}"[:200]
    if name.endswith("-gpu") and not gpu_available():
        return "no GPU (CuPy sees none)"
    return None


def run_rep(name: str, root: str, ann: str, args: argparse.Namespace) -> dict[str, Any]:
    """One rep of system ``name`` in this process: its img/s (and GPU memory it added)."""
    from chute.tools.benchmark.runner import _gpu_used_mb, time_system

    system = name.split("@")[0]
    why = available(system)
    if why:
        return {"skipped": why}
    gpu0 = _gpu_used_mb() if system.endswith("-gpu") else None
    gen = SYSTEMS[system](root, ann, args.batch, args.threads)
    try:
        rep = time_system(gen, args.batch, args.warmup, args.iters, 1)
        out: dict[str, Any] = {"reps": rep["reps"]}
        gpu1 = _gpu_used_mb() if gpu0 is not None else None
        if gpu0 is not None and gpu1 is not None:
            out["gpu_mb_added"] = round(gpu1 - gpu0, 1)
        return out
    except Exception as exc:  # one system failing must not hide the others
        return {"error": f"{type(exc).__name__}: {exc}"[:300]}
    finally:
        gen.close()


def run_fresh(name: str, root: str, ann: str, args: argparse.Namespace) -> dict[str, Any]:
    """One rep of system ``name`` in a new process (``--python`` picks its interpreter)."""
    import subprocess

    python = dict(p.split("=", 1) for p in args.python).get(name, sys.executable)
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        cmd = [python, os.path.abspath(__file__), "--systems", name, "--rounds", "1"]
        cmd += ["--data", f"{root},{ann}", "--json", out.name]
        for key in ("n", "batch", "threads", "iters", "warmup"):
            cmd += [f"--{key}", str(getattr(args, key))]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode:
            return {"error": f"{python}: exit {done.returncode}: {done.stderr[-300:]}"}
        with open(out.name) as f:
            record = json.load(f)
    result = record["results"][name]
    result.setdefault("versions", record["machine"].get("versions"))
    result.setdefault("python", python)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=512)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--systems", default="chute-cpu,chute-gpu,dali-cpu,dali-gpu")
    parser.add_argument("--fresh", action="store_true")
    parser.add_argument("--python", action="append", default=[], metavar="SYSTEM=PATH")
    parser.add_argument("--data", metavar="ROOT,ANNOTATIONS")
    parser.add_argument("--json")
    args = parser.parse_args()

    from chute.tools.benchmark.runner import machine_info

    names = [n for n in args.systems.split(",") if n]
    for name in names:
        if name.split("@")[0] not in SYSTEMS:
            sys.exit(f"unknown system {name!r}; systems: {', '.join(SYSTEMS)}")
    root, ann = args.data.split(",", 1) if args.data else make_coco_like(args.n)
    results: dict[str, dict[str, Any]] = {name: {"reps": []} for name in names}
    for _ in range(args.rounds):
        for name in names:
            r = results[name]
            if "skipped" in r or "error" in r:
                continue
            rep = (run_fresh if args.fresh else run_rep)(name, root, ann, args)
            reps = rep.pop("reps", [])
            r["reps"].extend(reps)
            for key, value in rep.items():
                r.setdefault(key, value)
    print(f"SSD300 input pipeline, batch {args.batch}, {args.threads} threads, {args.n} images")
    for name, r in results.items():
        if r.get("reps"):
            reps = r["reps"]
            r["img_per_s"] = round(statistics.median(reps), 1)
            r["spread"] = [min(reps), max(reps)]
            gpu = f"   GPU +{r['gpu_mb_added']} MB" if "gpu_mb_added" in r else ""
            print(
                f"  {name:16s} {r['img_per_s']:8.1f} img/s  ({min(reps)}..{max(reps)})  "
                f"rounds {reps}{gpu}"
            )
        else:
            print(f"  {name:16s} {'-':>8s}        {r.get('skipped') or r.get('error')}")
    if args.json:
        record = {"benchmark": "ssd300 input pipeline", "args": vars(args)}
        record["machine"] = machine_info()
        with open(args.json, "w") as f:
            json.dump({**record, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
