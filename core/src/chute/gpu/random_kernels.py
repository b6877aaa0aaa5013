"""Random draws on the GPU from chute's per-sample Philox streams: one launch per batch.

Each sample gets a row of a table (RAND_SAMPLE: its stream's Philox key and counter, as
chute.runtime.context keys the CPU backend's generator, its input and output pointers,
element count and parameters), uploaded with one copy; ``kernels/philox_random.cu``
draws every sample's elements in one launch (grid: element blocks x samples). Uniform
draws (range or values), coin flips and salt-and-pepper masks are bit-equal to the CPU
backends'; normal, Gaussian-noise and shot-noise draws follow the same distributions
with GPU algorithms (see the .cu file).

The table builders are plain NumPy, testable without a GPU.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from chute.gpu.runtime import require_gpu
from chute.runtime.philox import sample_counters

__all__ = [
    "DTYPE_CODES",
    "RAND_SAMPLE",
    "launch_elements",
    "launch_per_sample",
    "sample_table",
]

_KERNEL = Path(__file__).resolve().parent.parent / "kernels" / "philox_random.cu"
_THREADS = 256
_MAX_BLOCKS_X = 1024

#: dtype -> the K_* code of philox_random.cu
DTYPE_CODES = {
    np.dtype(t): code
    for code, t in enumerate(
        (
            np.bool_,
            np.int8,
            np.uint8,
            np.int16,
            np.uint16,
            np.int32,
            np.uint32,
            np.int64,
            np.uint64,
            np.float16,
            np.float32,
            np.float64,
        )
    )
}

# Mirrors struct RandSample in kernels/philox_random.cu.
RAND_SAMPLE = np.dtype(
    {
        "names": ["key", "ctr", "in_ptr", "out_ptr", "n", "inner", "a", "b", "c", "salt", "pepper"],
        "formats": [
            (np.uint64, 2),
            (np.uint64, 4),
            np.uint64,
            np.uint64,
            np.int64,
            np.int64,
            np.float64,
            np.float64,
            np.float64,
            np.uint64,
            np.uint64,
        ],
        "offsets": [0, 16, 48, 56, 64, 72, 80, 88, 96, 104, 112],
        "itemsize": 120,
    }
)


def dtype_code(op: str, dtype: Any) -> int:
    """The kernel's code of ``dtype``; a TypeError naming the operator for others."""
    try:
        return DTYPE_CODES[np.dtype(dtype)]
    except (KeyError, TypeError):
        raise TypeError(f"{op}: no GPU backend for data of type {dtype}") from None


def sample_table(ctx: Any, counts: list[int]) -> np.ndarray:
    """A RAND_SAMPLE row per sample: the stream of each (keyed as its CPU generator) and its
    element count; pointers and parameters are the caller's to fill."""
    n = len(counts)
    meta = [ctx.meta[i] if i < len(ctx.meta) else None for i in range(n)]
    key, ctr = sample_counters(ctx.seed, ctx.node.id, ctx.epoch, ctx.iteration, meta)
    table = np.zeros(n, RAND_SAMPLE)
    if n:
        table["key"] = key
        table["ctr"] = ctr
        table["n"] = np.asarray(counts, np.int64)
    return table


@functools.cache
def _function(name: str, device: int) -> Any:
    cupy = require_gpu("chute's GPU random kernels")
    with cupy.cuda.Device(device):
        module = cupy.RawModule(code=_KERNEL.read_text(), options=("-std=c++14",))
        return module.get_function(name)


def launch_elements(name: str, table: np.ndarray, code: int, per_thread: int, ctx: Any) -> None:
    """Launch kernel ``name`` over (element blocks, samples): ``per_thread`` elements a thread."""
    cupy = require_gpu("chute's GPU random kernels", device_id=ctx.device_id)
    n = len(table)
    if n == 0 or int(table["n"].max()) == 0:
        return
    if n > 65535:
        raise ValueError(f"batch of {n} samples is larger than one launch allows (65535)")
    threads_needed = -(-int(table["n"].max()) // per_thread)
    blocks_x = min(_MAX_BLOCKS_X, -(-threads_needed // _THREADS))
    kernel = _function(name, cupy.cuda.Device().id)
    dev = cupy.asarray(table.view(np.uint8))
    kernel((blocks_x, n), (_THREADS,), (dev, np.int32(code)))


def launch_per_sample(name: str, table: np.ndarray, code: int, ctx: Any) -> None:
    """Launch kernel ``name`` with one thread per sample (sequential draws within a sample)."""
    cupy = require_gpu("chute's GPU random kernels", device_id=ctx.device_id)
    n = len(table)
    if n == 0:
        return
    kernel = _function(name, cupy.cuda.Device().id)
    dev = cupy.asarray(table.view(np.uint8))
    kernel((-(-n // 64),), (64,), (dev, np.int32(n), np.int32(code)))
