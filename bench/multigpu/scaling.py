"""Aggregate img/s of the ResNet-50 train input pipeline on 1 GPU and on N GPUs, chute beside DALI.

    python bench/multigpu/scaling.py --data DIR [--gpus N] [--rounds 3] [--out bench/results]
    python bench/multigpu/scaling.py --cpu --iters 3      # tiny mode: 2 CPU processes

Every run starts one fresh process per GPU (spawned, with torchrun's variables RANK,
WORLD_SIZE, LOCAL_RANK, ...), each with the pipeline of bench/'s train preset
(chute.tools.benchmark.pipelines.train_pipeline; DALI's twin from systems.py) on its
GPU and its shard of the data, fed through the framework iterator a training script
uses (chute.torch.DataIterator given a callable pipeline; DALI's DALIGenericIterator).
After ``--warmup`` batches all processes meet at a barrier, then each takes ``--iters``
batches; aggregate img/s = all their images / (last end - first start). Systems and
GPU counts alternate within each round (the order rotates between rounds), so a
machine whose speed drifts slows every system alike; the JSON holds each round, the
medians, and the median (min-max) of the per-round ratios.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from multigpu_common import (
    chute_loader,
    dali_available,
    dali_loader,
    endless,
    ensure_dataset,
    machine,
    median_spread,
    set_nccl_defaults,
    write_results,
)


def rank_main(rank: int, world: int, system: str, args: argparse.Namespace, barrier, queue) -> None:
    """One process of one run: build the loader on this rank's GPU, time ``iters`` batches."""
    os.environ.update(
        {
            "RANK": str(rank),
            "WORLD_SIZE": str(world),
            "LOCAL_RANK": str(rank),
            "LOCAL_WORLD_SIZE": str(world),
            "GROUP_RANK": "0",
        }
    )
    import torch

    gpu = None if args.cpu else rank
    if gpu is not None:
        torch.cuda.set_device(gpu)
    if "+" in system:  # before chute is imported here (e.g. CHUTE_NATIVE_OFF)
        os.environ.update(dict(item.split("=", 1) for item in args.env))
    if system.startswith("chute"):
        # "chute+NAME": chute built under --tuning's settings (e.g. the decoder's cpu_share)
        from chute.runtime.tuning import use
        from chute.tools.cli import tuning_from_strings

        tuning = tuning_from_strings(args.tuning if "+" in system else [])
        with use(tuning):
            loader = chute_loader(args.data, args.batch_size, args.threads, gpu is not None)
    else:
        loader = dali_loader(args.data, args.batch_size, args.threads, gpu, rank, world)
    batches = endless(loader)
    device = torch.device("cpu") if gpu is None else torch.device("cuda", gpu)
    for _ in range(args.warmup):
        images, _ = next(batches)
    if gpu is not None:
        torch.cuda.synchronize()
    barrier.wait()
    start = time.monotonic()
    count = 0
    for _ in range(args.iters):
        images, _ = next(batches)
        assert images.device == device, f"rank {rank}: batch on {images.device}, not {device}"
        count += images.shape[0]
    if gpu is not None:
        torch.cuda.synchronize()
    end = time.monotonic()  # CLOCK_MONOTONIC: one clock for every process of this host
    queue.put({"rank": rank, "images": count, "start": start, "end": end})


def run(system: str, world: int, args: argparse.Namespace) -> dict[str, Any]:
    """One run: ``world`` fresh processes; aggregate img/s over the time all of them took."""
    ctx = multiprocessing.get_context("spawn")
    barrier, queue = ctx.Barrier(world), ctx.Queue()
    procs = [
        ctx.Process(target=rank_main, args=(r, world, system, args, barrier, queue))
        for r in range(world)
    ]
    for p in procs:
        p.start()
    reports = []
    deadline = time.monotonic() + args.timeout
    try:
        while len(reports) < world:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{system} on {world}: no result in {args.timeout} s")
            if any(p.exitcode not in (None, 0) for p in procs):
                raise RuntimeError(f"{system} on {world}: a process failed")
            try:
                reports.append(queue.get(timeout=1))
            except Exception:  # queue.Empty: keep waiting
                continue
    finally:
        for p in procs:
            p.join(30)
            if p.is_alive():
                p.kill()
                p.join()
    images = sum(r["images"] for r in reports)
    seconds = max(r["end"] for r in reports) - min(r["start"] for r in reports)
    per_rank = [
        r["images"] / (r["end"] - r["start"]) for r in sorted(reports, key=lambda r: r["rank"])
    ]
    return {"system": system, "gpus": world, "img_s": images / seconds, "per_rank_img_s": per_rank}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="/tmp/chute-multigpu-data", help="ImageFolder of JPEGs")
    parser.add_argument(
        "--images", type=int, default=8192, help="images to make if --data is empty"
    )
    parser.add_argument("--gpus", type=int, default=0, help="N (default: every visible GPU)")
    parser.add_argument("--batch-size", type=int, default=256, help="per GPU")
    parser.add_argument("--threads", type=int, default=0, help="per process (default: cores / N)")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--systems",
        default="chute,dali",
        help="chute, dali, chute+NAME (chute under --tuning and --env)",
    )
    parser.add_argument(
        "--tuning",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="chute+NAME systems' settings, as chute bench --tuning (repeatable)",
    )
    parser.add_argument(
        "--env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="chute+NAME systems' environment (e.g. CHUTE_NATIVE_OFF=...; repeatable)",
    )
    parser.add_argument("--timeout", type=float, default=600, help="seconds for one run")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results"))
    parser.add_argument("--name", default="", help="results file name (default from the machine)")
    parser.add_argument("--cpu", action="store_true", help="tiny mode: CPU pipelines, no GPU")
    args = parser.parse_args(argv)
    set_nccl_defaults()
    if args.cpu:
        args.gpus = args.gpus or 2
        if args.batch_size == 256:
            args.batch_size = 8
        args.images = min(args.images, 64)
    elif not args.gpus:
        import torch

        args.gpus = torch.cuda.device_count()
        if args.gpus < 1:
            parser.error("no GPU is visible: run with --cpu for the tiny mode")
    args.threads = args.threads or max(1, (os.cpu_count() or 2) // args.gpus)
    args.data = ensure_dataset(args.data, args.images, tiny=args.cpu)
    systems = [s for s in args.systems.split(",") if s]
    skipped = {}
    if "dali" in systems and not dali_available():
        systems.remove("dali")
        skipped["dali"] = "nvidia.dali is not importable"
    worlds = [1, args.gpus] if args.gpus > 1 else [1]
    combos = [(s, w) for s in systems for w in worlds]
    runs = []
    for round_index in range(args.rounds):
        shift = round_index % len(combos)
        for system, world in combos[shift:] + combos[:shift]:
            result = run(system, world, args)
            result["round"] = round_index
            runs.append(result)
            print(f"round {round_index} {system:10s} {world} GPU(s): {result['img_s']:9,.0f} img/s",
                  flush=True)  # fmt: skip
    results = summarize(runs, systems, worlds, args.rounds)
    results.update(
        {
            "command": " ".join([sys.executable, *sys.argv]) if argv is None else argv,
            "config": {k: v for k, v in vars(args).items()},
            "machine": machine(),
            "skipped": skipped,
            "runs": runs,
        }
    )
    name = args.name or ("cpu_multigpu_scaling" if args.cpu else f"gpu{args.gpus}_scaling")
    print(f"wrote {write_results(args.out, name, results)}")
    return results


def summarize(runs: list[dict], systems: list[str], worlds: list[int], rounds: int) -> dict:
    """Medians per system and GPU count; per-round ratios: N over 1 GPU, chute over DALI."""
    value = {(r["system"], r["gpus"], r["round"]): r["img_s"] for r in runs}
    out: dict[str, Any] = {"img_s": {}, "scaling": {}, "chute_over_dali": {}}
    for s in systems:
        out["img_s"][s] = {
            str(w): median_spread([value[s, w, k] for k in range(rounds)]) for w in worlds
        }
        if len(worlds) > 1:
            n = worlds[-1]
            out["scaling"][s] = median_spread(
                [value[s, n, k] / value[s, 1, k] for k in range(rounds)]
            )
    if "chute" in systems and "dali" in systems:
        for w in worlds:
            out["chute_over_dali"][str(w)] = median_spread(
                [value["chute", w, k] / value["dali", w, k] for k in range(rounds)]
            )
    return out


if __name__ == "__main__":
    main()
