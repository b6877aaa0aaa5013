"""chute beside DALI on one machine: fresh processes alternating over rounds, median ratios.

    python bench/vs_dali.py --data DIR --configs train:16,train:4,val:16 --rounds 5 \
        [--systems "chute;dali;chute+hy:--tuning hw_load=0.65"] [--device gpu] [--json OUT]

Each round runs every system once per config (preset:threads), each in a new process
(``python -m chute bench --systems NAME --reps 1``), in an order that flips from round to
round, so that a machine whose speed drifts (the GPU hosts vary by +-20% between calls)
slows every system alike. A system is ``NAME[:extra chute bench arguments]``; the bench
system is NAME up to a ``+`` (``chute+hy`` runs ``chute`` with its extra ``--tuning``); an
extra word ``env:NAME=VALUE`` sets an environment variable of that system's process.
Printed last, per config and system: median img/s, the median and per-round ratios to
the baseline (``--baseline``; DALI when it runs, else the first system), the GPU memory the
run added (MB) and the process's CPU time per image over the timed loop (ms, every thread
of the process; the JSON also holds the whole process's, start-up included). ``--dmon`` adds, per run, the hardware JPEG decoders' and the SMs' mean
utilisation over the seconds the GPU was busy (``nvidia-smi dmon -s u`` beside the run):
whether the decoders or the host bound a system.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from typing import Any


def dmon_summary(text: str) -> dict[str, float | None]:
    """``nvidia-smi dmon -s u`` output of one run: the hardware JPEG decoders' (``jpg``) and the
    SMs' mean utilisation (%) over the seconds either was busy, and the decoders' peak."""
    names: list[str] = []
    rows: list[dict[str, float]] = []
    for line in text.splitlines():
        if line.startswith("#"):  # "# gpu sm mem enc dec jpg ofa" (or "#Time gpu ..." with -o T)
            words = line[1:].split()
            if not names and "gpu" in words:
                names = words
            continue
        words = line.split()
        if len(words) != len(names):
            continue
        try:
            rows.append({n: float(w) for n, w in zip(names, words) if n in ("sm", "jpg")})
        except ValueError:  # "-" where a counter is not reported
            continue
    busy = [r for r in rows if r.get("sm", 0) > 0 or r.get("jpg", 0) > 0]
    if not busy or "jpg" not in busy[0]:
        return {"jpg_pct": None, "jpg_max": None, "sm_pct": None}
    return {
        "jpg_pct": round(sum(r["jpg"] for r in busy) / len(busy), 1),
        "jpg_max": max(r["jpg"] for r in busy),
        "sm_pct": round(sum(r.get("sm", 0.0) for r in busy) / len(busy), 1),
    }


def _dmon_start(a: argparse.Namespace) -> subprocess.Popen | None:
    """``nvidia-smi dmon`` on the GPU the run uses (the first of CUDA_VISIBLE_DEVICES)."""
    if not a.dmon or a.device != "gpu":
        return None
    gpu = (os.environ.get("CUDA_VISIBLE_DEVICES") or "0").split(",")[0]
    try:
        return subprocess.Popen(
            ["nvidia-smi", "dmon", "-s", "u", "-i", gpu],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
    except OSError:
        return None


def _dmon_stop(proc: subprocess.Popen | None) -> dict[str, float | None]:
    if proc is None:
        return {}
    proc.terminate()
    try:
        out, _ = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    return dmon_summary(out or "")


def run_one(system: str, extra: str, preset: str, threads: str, a: argparse.Namespace) -> dict:
    """One fresh ``chute bench`` process: img/s, GPU MB added and CPU ms per image (or None);
    with ``--dmon`` also the GPU's decoder and SM utilisation over the run."""
    dmon = _dmon_start(a)
    try:
        out = _run_bench(system, extra, preset, threads, a)
    finally:
        used = _dmon_stop(dmon)
    out.update(used)
    return out


def _run_bench(system: str, extra: str, preset: str, threads: str, a: argparse.Namespace) -> dict:
    bench = system.split("+")[0]
    env = dict(os.environ)
    for word in [w for w in extra.split() if w.startswith("env:")]:
        name, _, value = word[4:].partition("=")
        env[name] = value
    args = [w for w in extra.split() if not w.startswith("env:")]
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        cmd = [sys.executable, "-m", "chute", "bench", "--data", a.data, "--preset", preset]
        cmd += ["--device", a.device, "--systems", bench, *args]
        cmd += ["--batch-size", str(a.batch), "--threads", threads, "--warmup", str(a.warmup)]
        cmd += ["--iters", str(a.iters), "--reps", "1", "--json", f.name]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout, env=env)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        try:
            with open(f.name) as out:
                result = json.load(out)["results"][bench]
        except (OSError, ValueError, KeyError):
            print(done.stdout[-1500:], done.stderr[-2500:], flush=True)
            return {"img_s": None, "gpu_mb": None, "cpu_ms_per_img": None}
    images = (a.warmup + a.iters) * a.batch
    return {
        "img_s": result.get("img_per_s"),
        "gpu_mb": result.get("gpu_mb_added"),
        # the process's CPU time over the timed loop (all its threads), per image
        "cpu_ms_per_img": result.get("cpu_ms_per_img"),
        # the whole process, start-up included
        "process_cpu_ms_per_img": round(1000 * cpu / images, 3),
    }


def _median(values: list) -> float:
    kept = [v for v in values if v is not None]
    return statistics.median(kept) if kept else float("nan")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", required=True, help="ImageNet-like folder of JPEGs")
    p.add_argument("--configs", default="train:16,val:16", help="preset:threads, comma-separated")
    p.add_argument("--systems", default="chute;dali", help="NAME[:extra args], ';'-separated")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--warmup", type=int, default=5)
    # 40 batches of 256 is half a second at 20k img/s: one stall moved a run by 30%
    # (session 12, H100); start-up (~20 s a process) costs far more than longer timing
    p.add_argument("--iters", type=int, default=150)
    p.add_argument("--device", default="gpu", choices=("gpu", "cpu"))
    p.add_argument("--timeout", type=float, default=240.0, help="seconds for one run")
    p.add_argument("--json", default=None, help="write every round here (after each config)")
    p.add_argument(
        "--baseline",
        default=None,
        help="the system the ratios are to (default: dali when it runs, else the first system)",
    )
    p.add_argument(
        "--dmon",
        action="store_true",
        help="record the hardware JPEG decoders' and SMs' utilisation of each run (nvidia-smi)",
    )
    a = p.parse_args()
    systems = [s.split(":", 1) if ":" in s else [s, ""] for s in a.systems.split(";") if s]
    names = [n for n, _ in systems]
    base = a.baseline or ("dali" if "dali" in names else names[0])
    if base not in names:
        p.error(f"--baseline {base!r} is not one of the systems: {', '.join(names)}")
    configs = [c.split(":") for c in a.configs.split(",") if c]
    results: dict[str, dict[str, Any]] = {f"{pr}:{t}": {n: [] for n in names} for pr, t in configs}
    for r in range(a.rounds):
        for preset, threads in configs:
            key = f"{preset}:{threads}"
            for name, extra in systems if r % 2 == 0 else systems[::-1]:
                one = run_one(name, extra, preset, threads, a)
                results[key][name].append(one)
                print(f"round {r} {key} {name}: {one}", flush=True)
            if a.json:
                record = {"args": vars(a), "nproc": os.cpu_count(), "results": results}
                with open(a.json, "w") as f:
                    json.dump(record, f, indent=1)
    print(f"\n{'config':10} {'system':10} {'img/s':>8} {'/' + base:>6} {'per-round':28} "
          f"{'GPU MB':>7} {'CPU ms/img':>10}" + (f" {'NVJPG %':>7}" if a.dmon else ""))  # fmt: skip
    for key, runs in results.items():
        anchor = [x["img_s"] for x in runs[base]]
        for name in names:
            rates = [x["img_s"] for x in runs[name]]
            ratios = [c / d for c, d in zip(rates, anchor) if c and d]
            print(
                f"{key:10} {name:10} {_median(rates):8.0f} {_median(ratios):6.2f} "
                f"{' '.join(f'{q:.2f}' for q in ratios):28} "
                f"{_median([x['gpu_mb'] for x in runs[name]]):7.0f} "
                f"{_median([x['cpu_ms_per_img'] for x in runs[name]]):10.3f}"
                + (f" {_median([x.get('jpg_pct') for x in runs[name]]):7.1f}" if a.dmon else "")
            )


if __name__ == "__main__":
    main()
