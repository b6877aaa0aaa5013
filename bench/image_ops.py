"""CPU throughput of single image operators: chute beside DALI's CPU backend.

Each operator runs alone in a one-operator pipeline (external_source -> operator), written
once and built with chute's or DALI's `fn`/`pipeline_def`/`types` (chute ports DALI by its
imports). Both systems get the same uint8 HWC batches (made with NumPy from a fixed seed and
fed through external_source, so decoding is not measured). Every (system, operator group)
runs in a fresh process, and rounds alternate the systems, so that a shared machine whose
speed drifts slows both alike; the median img/s of the rounds and the per-round ratios
chute/DALI are reported. An operator DALI has no CPU backend for is reported as such.

Usage: PYTHONPATH=core/src python bench/image_ops.py --dali-python PATH [--ops resize_linear_down,flip]
       [--batch 32] [--threads 2] [--iters 10] [--warmup 3] [--max-seconds 3]
       [--rounds 3] [--group 8]
       [--json out.json] [--markdown]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

H, W = 480, 640
N_IMAGES = 64
MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]
# a 30-degree rotation about the image centre, as a 2x3 matrix (destination -> source)
_C, _S = 0.8660254, 0.5
AFFINE = [_C, -_S, (1 - _C) * W / 2 + _S * H / 2, _S, _C, -_S * W / 2 + (1 - _C) * H / 2]
SHARPEN = [[0.0, -1.0, 0.0], [-1.0, 5.0, -1.0], [0.0, -1.0, 0.0]]

Op = Callable[[Any, Any, Any], Any]  # builder(fn, types, images) -> output node


def _sharpen() -> Any:
    import numpy as np

    return np.array(SHARPEN, dtype=np.float32)


def _ops() -> dict[str, Op]:
    """The operators measured, by name: each builds its node from (fn, types, images)."""
    lin, cub, nn = "INTERP_LINEAR", "INTERP_CUBIC", "INTERP_NN"

    def resize(interp: str, scale: float) -> Op:
        return lambda fn, t, x: fn.resize(
            x, resize_x=int(W * scale), resize_y=int(H * scale), interp_type=getattr(t, interp)
        )

    u8 = list(range(256))
    return {
        "resize_linear_down": resize(lin, 0.5),
        "resize_cubic_down": resize(cub, 0.5),
        "resize_nn_down": resize(nn, 0.5),
        "resize_linear_up": resize(lin, 1.5),
        "resize_cubic_up": resize(cub, 1.5),
        "resize_nn_up": resize(nn, 1.5),
        "resize_shorter_224": lambda fn, t, x: fn.resize(x, resize_shorter=224),
        "crop_224": lambda fn, t, x: fn.crop(x, crop=(224, 224)),
        "crop_mirror_normalize": lambda fn, t, x: fn.crop_mirror_normalize(
            x, dtype=t.FLOAT, output_layout="CHW", mean=MEAN, std=STD, mirror=1
        ),
        "crop_mirror_normalize_224": lambda fn, t, x: fn.crop_mirror_normalize(
            x, crop=(224, 224), dtype=t.FLOAT, output_layout="CHW", mean=MEAN, std=STD, mirror=1
        ),
        "flip": lambda fn, t, x: fn.flip(x, horizontal=1),
        "flip_vertical": lambda fn, t, x: fn.flip(x, horizontal=0, vertical=1),
        "rotate": lambda fn, t, x: fn.rotate(x, angle=30.0, fill_value=0),
        "warp_affine": lambda fn, t, x: fn.warp_affine(x, matrix=AFFINE, fill_value=0),
        "color_space_conversion_ycbcr": lambda fn, t, x: fn.color_space_conversion(
            x, image_type=t.RGB, output_type=t.YCbCr
        ),
        "color_space_conversion_gray": lambda fn, t, x: fn.color_space_conversion(
            x, image_type=t.RGB, output_type=t.GRAY
        ),
        "color_space_conversion_bgr": lambda fn, t, x: fn.color_space_conversion(
            x, image_type=t.RGB, output_type=t.BGR
        ),
        "hsv": lambda fn, t, x: fn.hsv(x, hue=30.0, saturation=1.2, value=0.9),
        "hue": lambda fn, t, x: fn.hue(x, hue=30.0),
        "saturation": lambda fn, t, x: fn.saturation(x, saturation=0.5),
        "brightness_contrast": lambda fn, t, x: fn.brightness_contrast(
            x, brightness=1.2, contrast=0.8
        ),
        "brightness": lambda fn, t, x: fn.brightness(x, brightness=1.2),
        "contrast": lambda fn, t, x: fn.contrast(x, contrast=0.8),
        "color_twist": lambda fn, t, x: fn.color_twist(
            x, hue=30.0, saturation=1.2, brightness=1.1, contrast=0.9
        ),
        "gaussian_blur": lambda fn, t, x: fn.gaussian_blur(x, window_size=5, sigma=1.5),
        # (DALI takes the kernel as a node or an array, not a nested list)
        "filter": lambda fn, t, x: (
            fn.experimental.filter(x, _sharpen())
            if hasattr(fn, "experimental") and hasattr(fn.experimental, "filter")
            else fn.filter(x, _sharpen())
        ),
        "laplacian": lambda fn, t, x: fn.laplacian(x, window_size=3),
        "median_blur": lambda fn, t, x: fn.experimental.median_blur(x, window_size=5),
        "erase": lambda fn, t, x: fn.erase(
            x, anchor=[100, 100, 300, 300], shape=[80, 120, 60, 60], axis_names="HW", fill_value=0
        ),
        "paste": lambda fn, t, x: fn.paste(x, ratio=1.5, fill_value=0, paste_x=0.5, paste_y=0.5),
        "pad": lambda fn, t, x: fn.pad(x, axis_names="HW", shape=[512, 672], fill_value=0),
        "jitter": lambda fn, t, x: fn.jitter(x, nDegree=2),
        "water": lambda fn, t, x: fn.water(x),
        "sphere": lambda fn, t, x: fn.sphere(x),
        "normalize": lambda fn, t, x: fn.normalize(x, axes=[0, 1]),
        "cast_float": lambda fn, t, x: fn.cast(x, dtype=t.FLOAT),
        "transpose_chw": lambda fn, t, x: fn.transpose(x, perm=[2, 0, 1]),
        "lookup_table": lambda fn, t, x: fn.lookup_table(
            x, keys=u8, values=[255 - v for v in u8], dtype=t.UINT8
        ),
        "jpeg_compression_distortion": lambda fn, t, x: fn.jpeg_compression_distortion(
            x, quality=50
        ),
        "noise_gaussian": lambda fn, t, x: fn.noise.gaussian(x, stddev=10.0),
        "noise_salt_and_pepper": lambda fn, t, x: fn.noise.salt_and_pepper(x, prob=0.05),
        "noise_shot": lambda fn, t, x: fn.noise.shot(x, factor=16.0),
        "grid_mask": lambda fn, t, x: fn.grid_mask(x, ratio=0.5, tile=64, angle=0.3),
        "equalize": lambda fn, t, x: fn.experimental.equalize(x),
        "dilate": lambda fn, t, x: fn.experimental.dilate(x),
        "erode": lambda fn, t, x: fn.experimental.erode(x),
        "clahe": lambda fn, t, x: fn.clahe(x, tiles_x=8, tiles_y=8, clip_limit=2.0),
    }


OPS = _ops()
# another engineer was optimizing these when this benchmark was written (numbers only)
NOT_TUNED_HERE = {
    "warp_affine",
    "rotate",
    "filter",
    "hsv",
    "hue",
    "saturation",
    "equalize",
    "brightness_contrast",
    "brightness",
    "contrast",
}


def make_images(seed: int = 0) -> list[Any]:
    """N_IMAGES uint8 HxWx3 images: random low-frequency content plus pixel noise."""
    import cv2
    import numpy as np

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(N_IMAGES):
        coarse = rng.integers(0, 256, (H // 16, W // 16, 3), dtype=np.uint8)
        smooth = cv2.resize(coarse, (W, H), interpolation=cv2.INTER_CUBIC).astype(np.int16)
        noise = rng.integers(-24, 25, (H, W, 3), dtype=np.int16)
        out.append(np.clip(smooth + noise, 0, 255).astype(np.uint8))
    return out


def time_op(system: str, name: str, images: list[Any], args: argparse.Namespace) -> dict[str, Any]:
    """Build the one-operator pipeline of ``name`` in ``system`` and time it (img/s)."""
    if system == "dali":
        from nvidia.dali import fn, pipeline_def, types
    else:  # chute, or chute's "before" tree
        from chute import fn, pipeline_def, types

    batch = args.batch
    state = {"i": 0}

    def source() -> list[Any]:
        i = state["i"]
        state["i"] = (i + batch) % len(images)
        return [images[(i + k) % len(images)] for k in range(batch)]

    @pipeline_def(batch_size=batch, num_threads=args.threads, device_id=None, seed=1)
    def pipe():
        x = fn.external_source(source=source, layout="HWC", dtype=types.UINT8)
        return OPS[name](fn, types, x)

    try:
        p = pipe()
        p.build()
        t0 = time.perf_counter()
        for _ in range(args.warmup):
            p.run()
            if time.perf_counter() - t0 > 2 * args.max_seconds:
                break  # a slow operator is warm after fewer batches
    except Exception as exc:
        text = " ".join(line.strip() for line in str(exc).splitlines() if line.strip())
        return {"error": f"{type(exc).__name__}: {text}"[:400]}
    start = time.perf_counter()
    cpu0 = time.process_time()
    done = 0
    while done < args.iters:
        p.run()
        done += 1
        if done >= 3 and time.perf_counter() - start > args.max_seconds:
            break  # a slow operator: fewer batches, the same rate
    wall = time.perf_counter() - start
    cpu = time.process_time() - cpu0
    del p
    return {
        "img_per_s": round(batch * done / wall, 1),
        "cpu_us_per_img": round(1e6 * cpu / (batch * done), 1),
        "batches": done,
    }


def worker(args: argparse.Namespace) -> None:
    images = make_images()
    out = {name: time_op(args.worker, name, images, args) for name in args.ops.split(",")}
    print("RESULT " + json.dumps(out))


def run_group(system: str, names: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """One fresh process of ``system`` timing the operators ``names``."""
    python = args.dali_python if system == "dali" else args.chute_python
    here = os.path.dirname(os.path.abspath(__file__))
    src = args.chute_src or os.path.join(os.path.dirname(here), "core", "src")
    if system == "before":
        src = args.before_src
    env = dict(os.environ)
    if system in ("chute", "before"):
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    cmd = [python, os.path.abspath(__file__), "--worker", system, "--ops", ",".join(names)]
    for k in ("batch", "threads", "iters", "warmup", "max_seconds"):
        cmd += [f"--{k.replace('_', '-')}", str(getattr(args, k))]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd="/tmp")
    for line in done.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    err = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
    return {n: {"error": f"process failed: {err}", "process_failed": True} for n in names}


def summarize(results: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Medians of the rounds per system and the per-round chute/DALI ratios."""
    table = {}
    for name, r in results.items():
        row: dict[str, Any] = {}
        for system in ("chute", "dali", "before"):
            if not r.get(system):
                continue
            reps = [x["img_per_s"] for x in r[system] if "img_per_s" in x]
            errors = [x for x in r[system] if "error" in x]
            if reps:
                row[system] = round(statistics.median(reps), 1)
            elif errors:
                row[system + "_error"] = errors[0]["error"]
                row[system + "_unavailable"] = not errors[0].get("process_failed", False)
        pairs = [
            (c["img_per_s"], d["img_per_s"])
            for c, d in zip(r["chute"], r["dali"])
            if "img_per_s" in c and "img_per_s" in d
        ]
        if pairs:
            ratios = [c / d for c, d in pairs]
            row["ratio_median"] = round(statistics.median(ratios), 2)
            row["ratio_min"] = round(min(ratios), 2)
            row["ratio_max"] = round(max(ratios), 2)
        before = [
            (b["img_per_s"], d["img_per_s"])
            for b, d in zip(r.get("before", []), r["dali"])
            if "img_per_s" in b and "img_per_s" in d
        ]
        if before:
            row["before_ratio_median"] = round(statistics.median(b / d for b, d in before), 2)
        table[name] = row
    return table


def markdown(table: dict[str, dict[str, Any]]) -> str:
    lines = [
        "| operator | chute img/s | DALI img/s | chute/DALI median (min-max) | before: img/s, ratio |",
        "|---|---|---|---|---|",
    ]
    for name, row in table.items():
        c = f"{row['chute']:,.0f}" if "chute" in row else "error"
        if "dali" in row:
            d = f"{row['dali']:,.0f}"
        else:
            d = "no CPU backend" if row.get("dali_unavailable") else "error"
        ratio = (
            f"{row['ratio_median']:.2f} ({row['ratio_min']:.2f}-{row['ratio_max']:.2f})"
            if "ratio_median" in row
            else "-"
        )
        mark = " *" if name in NOT_TUNED_HERE else ""
        before = ""
        if "before" in row:
            before = f"{row['before']:,.0f}"
            if "before_ratio_median" in row:
                before += f", {row['before_ratio_median']:.2f}"
        lines.append(f"| {name}{mark} | {c} | {d} | {ratio} | {before} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ops", default=",".join(OPS))
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10)
    # chute's memory pools fill over the first ~6 batches of large outputs (118 MB float
    # batches): shorter warm-ups measure page faults, not the operator
    ap.add_argument("--warmup", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--max-seconds",
        type=float,
        default=3.0,
        help="stop timing an operator after this (>= 3 batches)",
    )
    ap.add_argument("--group", type=int, default=8, help="operators per process")
    ap.add_argument("--chute-python", default=sys.executable)
    ap.add_argument("--chute-src", help="chute's core/src to measure (default: this tree's)")
    ap.add_argument("--dali-python")
    ap.add_argument("--before-src", help="another chute core/src, measured as 'before'")
    ap.add_argument("--before-ops", help="operators to measure with --before-src too")
    ap.add_argument("--systems", default="chute,dali")
    ap.add_argument("--json")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    names = [n for n in args.ops.split(",") if n]
    unknown = [n for n in names if n not in OPS]
    if unknown:
        sys.exit(f"unknown operators {unknown}; known: {', '.join(OPS)}")
    systems = [s for s in args.systems.split(",") if s]
    if "dali" in systems and not args.dali_python:
        sys.exit("--dali-python is needed for the dali system (or --systems chute)")
    groups = [names[i : i + args.group] for i in range(0, len(names), args.group)]
    before_ops = [n for n in (args.before_ops or "").split(",") if n]
    if before_ops and not args.before_src:
        sys.exit("--before-ops needs --before-src")
    results: dict[str, dict[str, list[Any]]] = {
        n: {"chute": [], "dali": [], **({"before": []} if n in before_ops else {})} for n in names
    }
    t0 = time.time()
    for rnd in range(args.rounds):
        for gi, group in enumerate(groups):
            # alternate which system goes first, round by round and group by group
            before = [n for n in group if n in before_ops]
            order = systems + (["before"] if before else [])
            order = order if (rnd + gi) % 2 == 0 else order[::-1]
            for system in order:
                for name, res in run_group(
                    system, before if system == "before" else group, args
                ).items():
                    results[name][system].append(res)
        print(f"round {rnd + 1}/{args.rounds} done ({time.time() - t0:.0f} s)", file=sys.stderr)
    table = summarize(results)
    print(
        f"one-operator CPU pipelines, {N_IMAGES} images {H}x{W}x3 uint8, batch {args.batch}, "
        f"{args.threads} threads, {args.warmup}+{args.iters} batches, {args.rounds} rounds"
    )
    print(markdown(table))
    if args.json:
        from chute.tools.benchmark.runner import machine_info

        record = {
            "benchmark": "one-operator CPU pipelines, chute vs DALI",
            "args": {k: v for k, v in vars(args).items() if k != "worker"},
            "images": f"{N_IMAGES} x {H}x{W}x3 uint8 (make_images, seed 0)",
            "machine": machine_info(),
            "load_average": os.getloadavg(),
            "not_tuned_here": sorted(NOT_TUNED_HERE),
            "table": table,
            "rounds": results,
        }
        with open(args.json, "w") as f:
            json.dump(record, f, indent=1)


if __name__ == "__main__":
    main()
