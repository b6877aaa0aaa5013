"""Timing, memory, the table, the JSON record and the bar chart of ``chute bench``."""

from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import sys
import time
from typing import Any

from chute.tools.benchmark.systems import SYSTEMS


def _rss_mb() -> float:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def _gpu_used_mb() -> float | None:
    try:
        import cupy

        free, total = cupy.cuda.runtime.memGetInfo()
        return (total - free) / 2**20
    except Exception:
        return None


def _sync(batch: Any) -> None:
    """Wait for the GPU work behind ``batch`` (no-op on the CPU)."""
    module = type(batch).__module__
    if module.startswith("nvidia.dali"):
        if "GPU" in type(batch).__name__:
            batch.as_cpu()
    elif module.startswith("torch"):
        import torch

        if batch.is_cuda:
            torch.cuda.synchronize()
    elif module.startswith("chute") and getattr(batch, "stream", None) is not None:
        # the pipeline's lanes use several streams: wait for all of them
        import cupy

        with cupy.cuda.Device(batch.device_id):
            cupy.cuda.runtime.deviceSynchronize()


def time_system(gen: Any, batch: int, warmup: int, iters: int, reps: int) -> dict[str, Any]:
    x = None
    for _ in range(warmup):
        x = next(gen)
    _sync(x)
    rates, cpu = [], []
    for _ in range(reps):
        start, cpu0 = time.perf_counter(), time.process_time()
        for _ in range(iters):
            x = next(gen)
        _sync(x)
        rates.append(batch * iters / (time.perf_counter() - start))
        # every thread of this process (the loader's workers included), timed loop only
        cpu.append(1000 * (time.process_time() - cpu0) / (batch * iters))
    return {
        "img_per_s": round(statistics.median(rates), 1),
        "reps": [round(r, 1) for r in rates],
        "cpu_ms_per_img": round(statistics.median(cpu), 4),
    }


def _run_rep(
    name: str,
    r: dict[str, Any],
    preset: str,
    data: str,
    batch: int,
    threads: int,
    device: str,
    warmup: int,
    iters: int,
) -> None:
    """Start system ``name``, time one rep into ``r`` (memory added: the first rep's), stop it."""
    rss0 = _rss_mb()
    gpu0 = _gpu_used_mb()
    try:
        gen = SYSTEMS[name](preset, data, batch, threads, device)
        rep = time_system(gen, batch, warmup, iters, 1)
        r.setdefault("reps", []).extend(rep["reps"])
        r.setdefault("cpu_ms_per_img", []).append(rep["cpu_ms_per_img"])
        r.setdefault("rss_mb_added", round(_rss_mb() - rss0, 1))
        gpu1 = _gpu_used_mb()
        if gpu0 is not None and gpu1 is not None:
            r.setdefault("gpu_mb_added", round(gpu1 - gpu0, 1))
        close = getattr(gen, "close", None)
        if close:
            close()
    except ImportError as exc:
        r["skipped"] = f"not installed: {exc}"
    except Exception as exc:  # one system failing must not hide the others
        r["error"] = f"{type(exc).__name__}: {exc}"[:300]


def machine_info() -> dict[str, Any]:
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "cpu_count": os.cpu_count(),
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
    }
    try:
        import cupy

        props = cupy.cuda.runtime.getDeviceProperties(0)
        info["gpu"] = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    except Exception:
        info["gpu"] = None
    versions = {}
    for mod in (
        "chute",
        "numpy",
        "cv2",
        "PIL",
        "simplejpeg",
        "torch",
        "torchvision",
        "nvidia.dali",
        "cupy",
    ):
        try:
            m = __import__(mod, fromlist=["__version__"])
            versions[mod] = getattr(m, "__version__", "?")
        except Exception:
            pass
    info["versions"] = versions
    return info


def run_benchmark(
    data: str,
    preset: str = "train",
    systems: list[str] | None = None,
    batch: int = 64,
    threads: int | None = None,
    device: str = "auto",
    warmup: int = 3,
    iters: int = 10,
    reps: int = 3,
    json_path: str | None = None,
    png_path: str | None = None,
) -> dict[str, Any]:
    """Run each system over ``data`` and return (and print) the side-by-side results."""
    threads = threads or os.cpu_count() or 1
    if device == "auto":
        device = "gpu" if _gpu_used_mb() is not None else "cpu"
    names = systems or list(SYSTEMS)
    results: dict[str, Any] = {name: {} for name in names}
    # Rounds: each system runs one rep in turn, from a fresh start (the machine's speed
    # drifts; interleaving spreads the drift over all systems alike).
    for _ in range(reps):
        for name in names:
            r = results[name]
            if "skipped" in r or "error" in r:
                continue
            _run_rep(name, r, preset, data, batch, threads, device, warmup, iters)
    for name in names:
        r = results[name]
        if "reps" in r:
            results[name] = r = {"img_per_s": round(statistics.median(r["reps"]), 1), **r}
            r["cpu_ms_per_img"] = round(statistics.median(r["cpu_ms_per_img"]), 4)
        print(_row(name, r), flush=True)
    record = {
        "date": datetime.date.today().isoformat(),
        "command": " ".join(["chute", "bench", *sys.argv[2:]])
        if sys.argv[1:2] == ["bench"]
        else " ".join(sys.argv),
        "preset": preset,
        "batch": batch,
        "threads": threads,
        "device": device,
        "warmup": warmup,
        "iters": iters,
        "reps": reps,
        "data": data,
        "machine": machine_info(),
        "results": results,
    }
    print(table(record))
    if json_path:
        with open(json_path, "w") as f:
            json.dump(record, f, indent=1)
    if png_path:
        bar_chart(record, png_path)
    return record


def _row(name: str, r: dict[str, Any]) -> str:
    if "img_per_s" in r:
        mem = f"  rss +{r['rss_mb_added']} MB" + (
            f", gpu +{r['gpu_mb_added']} MB" if "gpu_mb_added" in r else ""
        )
        return f"{name:12s} {r['img_per_s']:10.1f} img/s{mem}"
    return f"{name:12s} {r.get('skipped') or r.get('error')}"


def table(record: dict[str, Any]) -> str:
    lines = [
        f"\n{record['preset']} preset, batch {record['batch']}, {record['threads']} threads, "
        f"device {record['device']} ({record['machine'].get('gpu') or record['machine']['processor']})",
        f"{'system':12s} {'img/s':>10s}  {'vs chute':>8s}",
    ]
    base = record["results"].get("chute", {}).get("img_per_s")
    for name, r in record["results"].items():
        if "img_per_s" in r:
            ratio = f"{base / r['img_per_s']:.2f}x" if base and name != "chute" else ""
            lines.append(f"{name:12s} {r['img_per_s']:10.1f}  {ratio:>8s}")
    return "\n".join(lines)


def bar_chart(record: dict[str, Any], path: str) -> str:
    """A horizontal bar chart of img/s, drawn with Pillow."""
    from PIL import Image, ImageDraw

    rows = [(n, r["img_per_s"]) for n, r in record["results"].items() if "img_per_s" in r]
    width, bar_h = 640, 28
    img = Image.new("RGB", (width, 40 + bar_h * max(1, len(rows))), "white")
    draw = ImageDraw.Draw(img)
    draw.text(
        (10, 8),
        f"{record['preset']}: img/s, batch {record['batch']}, {record['threads']} threads, {record['device']}",
        fill="black",
    )
    top = max((v for _, v in rows), default=1)
    for k, (name, value) in enumerate(rows):
        y = 32 + k * bar_h
        length = int((width - 220) * value / top)
        color = (46, 125, 50) if name == "chute" else (120, 144, 156)
        draw.rectangle([110, y, 110 + length, y + bar_h - 8], fill=color)
        draw.text((10, y + 4), name, fill="black")
        draw.text((116 + length, y + 4), f"{value:,.0f}", fill="black")
    img.save(path)
    return path
