"""A DDP training run (ResNet-50, mixed precision) fed by chute, DALI and a torchvision DataLoader.

    torchrun --nproc_per_node=2 bench/multigpu/ddp_train.py --data DIR [--steps 300]
    python bench/multigpu/ddp_train.py --cpu --steps 3 --model tiny   # tiny mode, 1 CPU process

In one call, each loader in turn (``--loaders``, alternating over ``--rounds``) feeds a
fresh DistributedDataParallel model for ``--warmup`` + ``--steps`` steps on every rank:
- chute: ``chute.torch.DataIterator`` given a callable train pipeline (bench's train
  preset: random-resized-crop 224, flip, normalize, fp16 CHW, decoded on the GPU); its
  shard and GPU come from torch.distributed and LOCAL_RANK;
- chute@NAME=VALUE;...: the same under chute engine settings (chute.runtime.tuning, as
  ``chute bench --tuning``), e.g. ``chute@switch_interval=None;gpu_lanes=1``;
- dali: DALI's ``DALIGenericIterator`` over the same pipeline (when nvidia.dali imports);
- torchvision: ``ImageFolder`` + ``RandomResizedCrop`` / flip in DataLoader workers
  (Pillow), a ``DistributedSampler``, pinned memory, normalized on the GPU.
Per loader it reports the step time (wall time of the measured steps / steps), the
host's time waiting in ``next()``, and the GPU's idle time waiting for data: CUDA events
at the start and end of every step's GPU work; the gap between one step's end and the
next one's start is time the GPU had nothing queued because the batch was not there.
Rank 0 writes every rank's figures to ``--out``.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import os
import socket
import statistics
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
    set_nccl_defaults,
    write_results,
)

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def init_distributed(cpu: bool) -> tuple[int, int, int | None]:
    """Join the torchrun job (or make a job of one): (rank, world size, GPU or None)."""
    import torch
    import torch.distributed as dist

    if "WORLD_SIZE" not in os.environ:  # started without torchrun: a job of one process
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        os.environ.update(
            {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1",
             "MASTER_PORT": str(port)}
        )  # fmt: skip
    import chute.torch

    gpu = None if cpu else chute.torch.placement().device_id
    if gpu is not None:
        torch.cuda.set_device(gpu)
    dist.init_process_group(
        "gloo" if gpu is None else "nccl", timeout=datetime.timedelta(minutes=10)
    )
    return dist.get_rank(), dist.get_world_size(), gpu


def tiny_model(num_classes: int) -> Any:
    """A small CNN for the tiny mode (no torchvision needed)."""
    import torch.nn as nn

    return nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=4, padding=1),
        nn.BatchNorm2d(16),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, num_classes),
    )


def build_model(name: str, num_classes: int) -> Any:
    if name == "tiny":
        return tiny_model(num_classes)
    import torchvision

    return getattr(torchvision.models, name)(num_classes=num_classes)


def torchvision_loader(root: str, batch: int, workers: int, rank: int, world: int, gpu: bool):
    """ImageFolder + RandomResizedCrop/flip in DataLoader workers; uint8 CHW, pinned."""
    import torch
    import torchvision
    from torchvision import transforms as T

    tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.PILToTensor()])
    dataset = torchvision.datasets.ImageFolder(root, tf)
    sampler = torch.utils.data.DistributedSampler(dataset, world, rank, shuffle=True, seed=0)
    loader = torch.utils.data.DataLoader(
        dataset,
        batch_size=batch,
        sampler=sampler,
        num_workers=workers,
        pin_memory=gpu,
        drop_last=True,
        persistent_workers=workers > 0,
        prefetch_factor=4 if workers > 0 else None,
    )
    return loader, sampler


def torchvision_batches(loader, sampler, device) -> Any:
    """(images fp16 normalized on ``device``, labels) epoch after epoch."""
    import torch

    mean = torch.tensor(MEAN, device=device).view(1, 3, 1, 1)
    std = torch.tensor(STD, device=device).view(1, 3, 1, 1)
    epoch = 0
    while True:
        sampler.set_epoch(epoch)
        for images, labels in loader:
            images = images.to(device, non_blocking=True).float().sub_(mean).div_(std).half()
            yield images, labels
        epoch += 1


def batches_for(name: str, args: argparse.Namespace, rank: int, world: int, gpu: int | None):
    """The loader ``name`` for this rank, as an endless iterator of (images, labels)."""
    import torch

    device = torch.device("cpu") if gpu is None else torch.device("cuda", gpu)
    if name == "chute":
        return endless(chute_loader(args.data, args.batch_size, args.threads, gpu is not None))
    if name.startswith("chute@"):  # chute under engine settings: chute@switch_interval=None;...
        from chute.runtime.tuning import use
        from chute.tools.cli import tuning_from_strings

        with use(tuning_from_strings([x for x in name[6:].split(";") if x])):
            loader = chute_loader(args.data, args.batch_size, args.threads, gpu is not None)
        return endless(loader)
    if name == "dali":
        return endless(dali_loader(args.data, args.batch_size, args.threads, gpu, rank, world))
    if name == "torchvision":
        loader, sampler = torchvision_loader(
            args.data, args.batch_size, args.workers, rank, world, gpu is not None
        )
        return torchvision_batches(loader, sampler, device)
    raise ValueError(f"unknown loader {name!r}: chute, chute@NAME=VALUE;..., dali or torchvision")


def train(name: str, args: argparse.Namespace, rank: int, world: int, gpu: int | None) -> dict:
    """Train a fresh DDP model on loader ``name``; time its steps and its waits for data."""
    import torch
    import torch.nn.functional as F
    from torch.nn.parallel import DistributedDataParallel

    cuda = gpu is not None
    device = torch.device("cuda", gpu) if cuda else torch.device("cpu")
    torch.manual_seed(0)
    classes = len([d for d in os.scandir(args.data) if d.is_dir()])
    model = build_model(args.model, classes).to(device, memory_format=torch.channels_last)
    model = DistributedDataParallel(model, device_ids=[gpu] if cuda else None)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-5)
    scaler = torch.amp.GradScaler("cuda", enabled=cuda)
    amp_dtype = torch.float16 if cuda else torch.bfloat16
    batches = batches_for(name, args, rank, world, gpu)
    total = args.warmup + args.steps
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(total)] if cuda else []
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(total)] if cuda else []
    host_wait, losses = 0.0, []
    began = time.perf_counter()
    for step in range(total):
        if step == args.warmup:
            if cuda:
                torch.cuda.synchronize()
            torch.distributed.barrier()
            began, host_wait = time.perf_counter(), 0.0
        waited = time.perf_counter()
        images, labels = next(batches)
        host_wait += time.perf_counter() - waited
        if cuda:
            starts[step].record()
        images = images.to(device, non_blocking=True).contiguous(memory_format=torch.channels_last)
        labels = labels.to(device, non_blocking=True).view(-1).long()
        with torch.autocast(device.type, dtype=amp_dtype):
            loss = F.cross_entropy(model(images), labels)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        if cuda:
            ends[step].record()
        if step in (0, total - 1):
            losses.append(float(loss.detach()))
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - began
    idle_ms = (
        sum(ends[i - 1].elapsed_time(starts[i]) for i in range(args.warmup + 1, total))
        if cuda
        else None
    )
    del batches, model, optimizer
    gc.collect()
    if cuda:
        torch.cuda.empty_cache()
    return {
        "loader": name,
        "rank": rank,
        "step_ms": 1000 * seconds / args.steps,
        "img_s": args.batch_size * args.steps / seconds,
        "host_wait_ms_per_step": 1000 * host_wait / args.steps,
        "gpu_idle_ms_per_step": None if idle_ms is None else idle_ms / max(1, args.steps - 1),
        "loss_first_last": losses,
    }


def summarize(reports: list[dict], world: int, batch: int) -> dict:
    """Per loader and round: the slowest rank's step time (DDP steps in lockstep), waits."""
    out: dict[str, Any] = {}
    for name in dict.fromkeys(r["loader"] for r in reports):
        mine = [r for r in reports if r["loader"] == name]
        rounds = sorted({r["round"] for r in mine})
        step = [max(r["step_ms"] for r in mine if r["round"] == k) for k in rounds]
        idle = [r["gpu_idle_ms_per_step"] for r in mine if r["gpu_idle_ms_per_step"] is not None]
        out[name] = {
            "step_ms_median": statistics.median(step),
            "step_ms_rounds": step,
            "global_img_s_median": world * batch * 1000 / statistics.median(step),
            "gpu_idle_ms_per_step_mean": statistics.mean(idle) if idle else None,
            "host_wait_ms_per_step_mean": statistics.mean(r["host_wait_ms_per_step"] for r in mine),
        }
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="/tmp/chute-multigpu-data", help="ImageFolder of JPEGs")
    parser.add_argument(
        "--images", type=int, default=8192, help="images to make if --data is empty"
    )
    parser.add_argument("--model", default="resnet50", help="a torchvision model name, or tiny")
    parser.add_argument("--loaders", default="chute,dali,torchvision")
    parser.add_argument("--batch-size", type=int, default=128, help="per GPU")
    parser.add_argument("--threads", type=int, default=0, help="pipeline threads per rank")
    parser.add_argument("--workers", type=int, default=0, help="DataLoader workers per rank")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=1, help="loaders alternate in each round")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "results"))
    parser.add_argument("--name", default="")
    parser.add_argument("--cpu", action="store_true", help="tiny mode: CPU, gloo, small batches")
    args = parser.parse_args(argv)
    set_nccl_defaults()
    if args.cpu:
        args.batch_size = min(args.batch_size, 4)
        args.warmup = min(args.warmup, 1)
        args.images = min(args.images, 32)
    rank, world, gpu = init_distributed(args.cpu)
    import torch.distributed as dist

    per_node = int(os.environ.get("LOCAL_WORLD_SIZE", world))
    cores = max(1, (os.cpu_count() or 2) // per_node)
    args.threads = args.threads or cores
    args.workers = args.workers or (0 if args.cpu else cores)
    if rank == 0:
        ensure_dataset(args.data, args.images, tiny=args.cpu)
    dist.barrier()
    loaders, skipped = [], {}
    for name in [n for n in args.loaders.split(",") if n]:
        if name == "dali" and not dali_available():
            skipped[name] = "nvidia.dali is not importable"
        elif name == "torchvision" and not _importable("torchvision"):
            skipped[name] = "torchvision is not importable"
        else:
            loaders.append(name)
    if args.model != "tiny" and not _importable("torchvision"):
        raise SystemExit(f"--model {args.model} needs torchvision; use --model tiny without it")
    reports = []
    for round_index in range(args.rounds):
        order = loaders[round_index % len(loaders) :] + loaders[: round_index % len(loaders)]
        for name in order:
            report = train(name, args, rank, world, gpu)
            report["round"] = round_index
            everyone: list[Any] = [None] * world
            dist.all_gather_object(everyone, report)
            reports += everyone
            if rank == 0:
                slowest = max(r["step_ms"] for r in everyone)
                idle = [r["gpu_idle_ms_per_step"] for r in everyone]
                print(f"round {round_index} {name:12s} step {slowest:8.1f} ms  "
                      f"GPU idle waiting for data {idle} ms/step", flush=True)  # fmt: skip
    if rank == 0:
        results = {
            "summary": summarize(reports, world, args.batch_size),
            "command": " ".join([sys.executable, *sys.argv]) if argv is None else argv,
            "config": vars(args),
            "world_size": world,
            "machine": machine(),
            "skipped": skipped,
            "reports": reports,
        }
        name = args.name or ("cpu_ddp_train" if args.cpu else f"gpu{world}_ddp_train")
        print(f"wrote {write_results(args.out, name, results)}")
    dist.destroy_process_group()


def _importable(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    main()
