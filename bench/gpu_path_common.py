"""What the parts of bench/gpu_path.py share: the results table (written as it grows),
batches of JPEG bytes and torchvision-style random-resized-crop windows."""

from __future__ import annotations

import json
import math
import traceback
from pathlib import Path

import numpy as np

MEAN = (0.485 * 255, 0.456 * 255, 0.406 * 255)
STD = (0.229 * 255, 0.224 * 255, 0.225 * 255)
RESULTS: list[dict] = []


def rrc_windows(
    shapes: np.ndarray, rng: np.random.Generator, scale=(0.08, 1.0), ratio=(3 / 4, 4 / 3)
):
    """Return (N, 4) int windows (y, x, h, w) drawn like torchvision's RandomResizedCrop."""
    n, tries = len(shapes), 10
    hgt, wid = shapes[:, :1].astype(np.float64), shapes[:, 1:2].astype(np.float64)
    area = hgt * wid * rng.uniform(scale[0], scale[1], (n, tries))
    aspect = np.exp(rng.uniform(math.log(ratio[0]), math.log(ratio[1]), (n, tries)))
    w = np.round(np.sqrt(area * aspect))
    h = np.round(np.sqrt(area / aspect))
    ok = (w > 0) & (w <= wid) & (h > 0) & (h <= hgt)
    first = np.where(ok.any(1), ok.argmax(1), -1)
    out = np.zeros((n, 4), np.int64)
    for i in range(n):
        H, W = int(shapes[i, 0]), int(shapes[i, 1])
        if first[i] >= 0:
            hh, ww = int(h[i, first[i]]), int(w[i, first[i]])
            out[i] = rng.integers(0, H - hh + 1), rng.integers(0, W - ww + 1), hh, ww
        else:  # torchvision's fallback: a centre crop with the ratio clamped
            r = W / H
            ww, hh = (
                (W, round(W / ratio[0]))
                if r < ratio[0]
                else ((round(H * ratio[1]), H) if r > ratio[1] else (W, H))
            )
            out[i] = (H - hh) // 2, (W - ww) // 2, hh, ww
    return out


def load_jpegs(folder: str, n: int) -> list[bytes]:
    files = sorted(p for p in Path(folder).rglob("*") if p.suffix.lower() in (".jpg", ".jpeg"))
    data = [p.read_bytes() for p in files]
    return [data[i % len(data)] for i in range(n)]


JSON_PATH: list[str] = []


def dump() -> None:
    """Write what was measured so far (a crash later keeps the earlier numbers)."""
    if JSON_PATH:
        Path(JSON_PATH[0]).write_text(json.dumps({"partial": True, "results": RESULTS}, indent=1))


def record(name: str, imgs: int, secs: float, **extra) -> dict:
    r = {
        "name": name,
        "images": imgs,
        "seconds": round(secs, 4),
        "img_per_s": round(imgs / secs, 1),
        **extra,
    }
    RESULTS.append(r)
    print(f"  {name:58s} {r['img_per_s']:9.0f} img/s  {extra if extra else ''}", flush=True)
    dump()
    return r


def guarded(fn):
    def run(*a, **k):
        try:
            return fn(*a, **k)
        except Exception as e:
            traceback.print_exc()
            RESULTS.append({"name": f"{fn.__name__}{a[:1]}", "error": f"{type(e).__name__}: {e}"})
            return None

    return run


def batches(data: list[bytes], bs: int):
    return [data[i : i + bs] for i in range(0, len(data), bs)]
