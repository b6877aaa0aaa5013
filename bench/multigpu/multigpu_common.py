"""What the multi-GPU benchmarks share: the dataset, the loaders per rank, results files.

Each loader is built for one rank of a job: ``rank`` / ``world`` pick its shard, ``gpu``
its device (None: the CPU, the tiny mode). chute is fed through ``chute.torch`` with a
callable pipeline, so its shard and device come from the job as a user's would; DALI
through its own PyTorch iterator, built with the same shard and device by hand.
"""

from __future__ import annotations

import functools
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

# the device machine's settings for several GPUs (NVLink multicast off)
NCCL_SETTINGS = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}
ROOT = Path(__file__).resolve().parents[2]


def set_nccl_defaults() -> None:
    """Keep NVLink multicast off unless the caller set these variables otherwise."""
    for name, value in NCCL_SETTINGS.items():
        os.environ.setdefault(name, value)


def ensure_dataset(folder: str, images: int, tiny: bool) -> str:
    """An ImageFolder tree of JPEGs at ``folder``; made when missing (tiny: small noise JPEGs)."""
    marker = Path(folder) / f".multigpu-{images}-{int(tiny)}"
    if marker.exists() or (not tiny and any(Path(folder).glob("*/*.jpg"))):
        return folder
    if not tiny:
        from chute.tools.sample_data import make_imagenet_like

        return make_imagenet_like(folder, images)
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    for i in range(images):
        cls = Path(folder) / f"class{i % 4}"
        cls.mkdir(parents=True, exist_ok=True)
        pixels = rng.integers(0, 256, (48 + 8 * (i % 3), 64, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(cls / f"{i:05d}.jpg", quality=90)
    marker.touch()
    return folder


def dali_available() -> bool:
    try:
        import nvidia.dali.plugin.pytorch  # noqa: F401
    except ImportError:
        return False
    return True


def chute_loader(root: str, batch: int, threads: int, gpu: bool, seed: int = 0) -> Any:
    """chute.torch.DataIterator over a callable train pipeline: shard and GPU from the job."""
    import chute.torch
    from chute.tools.benchmark.pipelines import train_pipeline

    make = functools.partial(train_pipeline, root, batch, threads, "gpu" if gpu else "cpu", seed)
    return chute.torch.DataIterator(
        make,
        ["data", "label"],
        reader_name="Reader",
        last_batch_policy=chute.torch.LastBatchPolicy.DROP,
        auto_reset=True,
    )


def dali_loader(root: str, batch: int, threads: int, gpu: int | None, rank: int, world: int) -> Any:
    """DALI's DALIGenericIterator over the same train pipeline, shard and GPU given by hand."""
    from nvidia.dali.plugin.pytorch import DALIGenericIterator, LastBatchPolicy

    from chute.tools.benchmark.systems import dali_pipeline

    pipe = dali_pipeline(
        "train",
        root,
        batch,
        threads,
        "gpu" if gpu is not None else "cpu",
        device_id=gpu or 0,
        shard_id=rank,
        num_shards=world,
    )
    return DALIGenericIterator(
        [pipe],
        ["data", "label"],
        reader_name="Reader",
        last_batch_policy=LastBatchPolicy.DROP,
        auto_reset=True,
    )


def endless(iterator: Any) -> Iterator[tuple[Any, Any]]:
    """(images, labels) of one pipeline per step, epoch after epoch (auto_reset iterators)."""
    while True:
        for (batch,) in iterator:
            yield batch["data"], batch["label"]


def median_spread(values: list[float]) -> dict[str, Any]:
    """Median, min and max of per-round values (the spread is what a reader should trust)."""
    if not values:
        return {"median": None, "min": None, "max": None, "rounds": []}
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "rounds": values,
    }


def machine() -> dict[str, Any]:
    """What ran the benchmark: host, CPUs, GPUs, versions."""
    info: dict[str, Any] = {
        "host": platform.node(),
        "cpus": os.cpu_count(),
        "python": sys.version.split()[0],
        "time": time.strftime("%Y-%m-%d %H:%M:%S"),
        "nccl_settings": {k: os.environ.get(k) for k in NCCL_SETTINGS},
    }
    try:
        import torch

        info["torch"] = torch.__version__
        if torch.cuda.is_available():
            info["gpus"] = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
    except ImportError:
        pass
    try:
        import nvidia.dali

        info["dali"] = nvidia.dali.__version__
    except ImportError:
        pass
    try:
        info["commit"] = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout.strip()
    except OSError:
        pass
    return info


def write_results(out_dir: str, name: str, results: dict[str, Any]) -> Path:
    """Write ``results`` as ``out_dir/name_DATE.json`` and return the path."""
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}_{time.strftime('%Y-%m-%d')}.json"
    path.write_text(json.dumps(results, indent=1) + "\n")
    return path
