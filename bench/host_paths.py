"""Per-batch Python of the host paths beside the GPU lanes, timed on this machine (no GPU).

    python bench/host_paths.py --data DIR [--batch 256] [--json OUT]

What each figure is, per batch of ``--batch`` samples (median of ``--repeat`` timings):
- ``read_files_ms``: chute's reader reading a batch of the dataset's files (``read_files``,
  the batches cycling over the first files while the last 6 stay held, as a prefetch
  queue holds them);
- ``epoch_plan_us``: a shuffled reader's slots for one batch (``EpochPlan.batch``);
- ``sample_counters_us``: the Philox (key, counter) of a reader-keyed batch;
- ``describe_inputs_us``: the GPU kernels' table of a decoder's batch of images
  (``_describe_inputs`` over DeviceImages; no GPU memory is touched).

Compare two trees by running the script with each on PYTHONPATH, alternating, as
bench/README.md "Host-side changes" does. Prints a table last.
"""

from __future__ import annotations

import argparse
import collections
import json
import statistics
import sys
import timeit
from pathlib import Path


def _files(data: Path, n: int) -> list[str]:
    files = sorted(str(p) for p in data.rglob("*") if p.is_file())
    if len(files) < n:
        raise SystemExit(f"{data} holds {len(files)} files; --batch {n} needs at least that many")
    return files


def read_files_ms(files: list[str], batch: int, repeat: int) -> float:
    from chute.ops.readers import local_files as file_reader

    batches = [files[i : i + batch] for i in range(0, len(files) - batch + 1, batch)][:4]
    held: collections.deque = collections.deque(maxlen=6)
    count = [0]

    def step() -> None:
        held.append(file_reader.read_files(batches[count[0] % len(batches)]))
        count[0] += 1

    for _ in range(12):
        step()
    return 1e3 * statistics.median(timeit.repeat(step, number=10, repeat=repeat)) / 10


def epoch_plan_us(batch: int, repeat: int) -> float:
    from chute.ops.readers.sharding import EpochPlan

    plan = EpochPlan(32 * batch, batch, shuffle=True, seed=3)
    return 1e6 * min(timeit.repeat(lambda: plan.batch(0, 5), number=300, repeat=repeat)) / 300


def sample_counters_us(batch: int, repeat: int) -> float:
    from chute.runtime import philox

    metas = [{"sample_key": (7 * i, 0), "index": 7 * i} for i in range(batch)]
    timer = timeit.repeat(
        lambda: philox.sample_counters(1, 2, 0, 5, metas), number=300, repeat=repeat
    )
    return 1e6 * min(timer) / 300


def describe_inputs_us(batch: int, repeat: int) -> float:
    from chute.gpu import kernels
    from chute.gpu.codec_api import DeviceImage

    class NoCupy:  # a stand-in module: nothing here is a CuPy array
        class ndarray:
            pass

    images = [DeviceImage(None, 4096 * (i + 1), (300 + i % 200, 400, 3)) for i in range(batch)]
    timer = timeit.repeat(
        lambda: kernels._describe_inputs(NoCupy, images), number=300, repeat=repeat
    )
    return 1e6 * min(timer) / 300


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="a folder of files to read")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--json", type=Path)
    a = parser.parse_args(argv)
    files = _files(a.data, a.batch)
    result = {
        "read_files_ms": read_files_ms(files, a.batch, a.repeat),
        "epoch_plan_us": epoch_plan_us(a.batch, a.repeat),
        "sample_counters_us": sample_counters_us(a.batch, a.repeat),
        "describe_inputs_us": describe_inputs_us(a.batch, a.repeat),
    }
    if a.json:
        a.json.write_text(json.dumps({"args": {"batch": a.batch, "data": str(a.data)}, **result}))
    for name, value in result.items():
        print(f"{name:22} {value:10.2f}")
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
