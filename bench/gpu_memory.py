"""Where chute's GPU memory goes in a benchmark preset: every growth of CuPy's pool, by site.

    python bench/gpu_memory.py --data DIR [--preset train] [--batch 256] [--threads 16] \
        [--iters 150] [--tuning NAME=VALUE ...] [--json OUT]

The GPU memory vs_dali.py reports is the device memory a run added (cudaMemGetInfo after
the timed loop minus before the pipeline was built). This runs the same preset through
``chute bench``'s pipeline with CuPy's allocator wrapped: each request that makes the pool
take new device memory is recorded with its size, the batch it came in, the thread, the
current stream and the innermost chute frames that asked. Printed last: the memory added,
what of it is CuPy's pool (in use / held free) and what is not (nvImageCodec's and nvJPEG's
own buffers, the CUDA libraries), and the pool's growth per site before and after the
warm-up. A pool that still grows after the warm-up holds blocks it cannot reuse (CuPy
keeps freed blocks per stream, for requests no larger than them).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import threading
import traceback
from typing import Any

_CHUTE = os.sep + "chute" + os.sep


def _site(depth: int = 3) -> str:
    """The innermost ``depth`` frames of chute's own code on this thread's stack."""
    frames = [f for f in traceback.extract_stack()[:-2] if _CHUTE in f.filename]
    return " <- ".join(
        f"{f.filename.rsplit(_CHUTE, 1)[1]}:{f.lineno} {f.name}" for f in frames[::-1][:depth]
    )


class PoolWatch:
    """CuPy's allocator wrapped: every malloc that grows the default pool, recorded."""

    def __init__(self, cupy: Any) -> None:
        self.cupy = cupy
        self.pool = cupy.get_default_memory_pool()
        self.batch = -1  # the batch the caller is waiting for (set by the loop)
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def malloc(self, size: int) -> Any:
        with self._lock:  # the pool's totals around one malloc, not another thread's
            before = self.pool.total_bytes()
            mem = self.pool.malloc(size)
            grown = self.pool.total_bytes() - before
        if grown > 0:
            self.events.append(
                {
                    "batch": self.batch,
                    "grown_mb": grown / 2**20,
                    "request_mb": size / 2**20,
                    "thread": threading.current_thread().name,
                    "stream": int(self.cupy.cuda.get_current_stream().ptr),
                    "site": _site(),
                }
            )
        return mem

    def install(self) -> None:
        self.cupy.cuda.set_allocator(self.malloc)  # process-wide, every thread's allocations


def _used_mb(cupy: Any) -> float:
    free, total = cupy.cuda.runtime.memGetInfo()
    return (total - free) / 2**20


def _by_site(events: list[dict[str, Any]]) -> list[tuple[str, float, int]]:
    sites: dict[str, list[float]] = collections.defaultdict(list)
    for e in events:
        sites[e["site"]].append(e["grown_mb"])
    return sorted(((s, sum(v), len(v)) for s, v in sites.items()), key=lambda r: -r[1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--data", required=True, help="ImageNet-like folder of JPEGs")
    p.add_argument("--preset", default="train", choices=("train", "val"))
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--threads", type=int, default=16)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--iters", type=int, default=150)
    p.add_argument("--tuning", action="append", default=[], help="NAME=VALUE, as chute bench")
    p.add_argument("--json", default=None)
    a = p.parse_args()

    import cupy

    from chute.runtime.tuning import use as use_tuning
    from chute.tools.benchmark.runner import _sync
    from chute.tools.benchmark.systems import SYSTEMS
    from chute.tools.cli import tuning_from_strings

    watch = PoolWatch(cupy)
    used0 = _used_mb(cupy)  # the context exists: what follows is the pipeline's
    watch.install()
    per_batch = []
    with use_tuning(tuning_from_strings(a.tuning)):
        gen = SYSTEMS["chute"](a.preset, a.data, a.batch, a.threads, "gpu")
        for i in range(a.warmup + a.iters):
            watch.batch = i
            x = next(gen)
            _sync(x)
            per_batch.append(
                {
                    "batch": i,
                    "added_mb": _used_mb(cupy) - used0,
                    "pool_used_mb": watch.pool.used_bytes() / 2**20,
                    "pool_total_mb": watch.pool.total_bytes() / 2**20,
                }
            )
        del x
        close = getattr(gen, "close", None)
        if close:
            close()
    last = per_batch[-1]
    late = [e for e in watch.events if e["batch"] >= a.warmup]
    result = {
        "args": vars(a),
        "added_mb": last["added_mb"],
        "pool_total_mb": last["pool_total_mb"],
        "pool_used_mb": last["pool_used_mb"],
        "outside_pool_mb": last["added_mb"] - last["pool_total_mb"],
        "growth_events": watch.events,
        "per_batch": per_batch,
    }
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=1)
    print(f"batches at which the pool grew: {sorted({e['batch'] for e in watch.events})}")
    for label, events in (
        ("warm-up", watch.events[: len(watch.events) - len(late)]),
        ("after", late),
    ):
        print(f"pool growth, {label}:")
        for site, mb, n in _by_site(events)[:8]:
            print(f"  {mb:8.1f} MB in {n:3d} blocks  {site}")
    streams = collections.Counter(e["stream"] for e in watch.events)
    print(f"blocks per stream at allocation: {dict(streams)}")
    print(
        f"added {last['added_mb']:.0f} MB = pool {last['pool_total_mb']:.0f} "
        f"(in use {last['pool_used_mb']:.0f}) + outside the pool {result['outside_pool_mb']:.0f}"
    )


if __name__ == "__main__":
    main()
