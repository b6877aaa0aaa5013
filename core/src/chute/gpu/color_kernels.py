"""Batched per-element kernels of ``chute/kernels/color.cu`` over CuPy arrays: one launch per batch.

Every launcher takes a batch as one contiguous (N, ...) CuPy array or a list of CuPy
samples of any shapes, builds a table of per-sample pointers and element counts plus
per-sample parameters (NumPy, uploaded with one copy) and launches one kernel of
``chute/kernels/color.cu`` over the whole batch. Outputs are one fresh buffer: a dense
array for a dense input, else a list of views into it.

``affine_batch`` (``out = in * gain + offset`` per channel) serves the color operators,
fn.normalize and fn.cast; ``matrix_batch`` a 3x3 color matrix plus offset per sample.
The operators compute their parameters themselves (chute.ops.color.color_gpu,
color_space_gpu); ``ElementBatch`` and ``launch`` let them launch color.cu's other
kernels.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from chute.gpu.runtime import device_empty, require_gpu

__all__ = [
    "FLAT_DTYPE",
    "KERNEL_DTYPES",
    "ElementBatch",
    "affine_batch",
    "affine_rows",
    "flat_table",
    "launch",
    "launch_blocks",
    "matrix_batch",
    "sample_channels",
]

_SOURCE = Path(__file__).resolve().parent.parent / "kernels" / "color.cu"
_THREADS = 256
_MAX_BLOCKS_X = 1 << 16

# Element types color.cu reads and writes (IN_KIND / OUT_KIND codes).
KERNEL_DTYPES = {
    np.dtype(t): k
    for k, t in enumerate(
        (
            np.uint8,
            np.int8,
            np.uint16,
            np.int16,
            np.int32,
            np.uint32,
            np.float16,
            np.float32,
            np.float64,
        )
    )
}

# Mirrors struct FlatDesc in kernels/color.cu.
FLAT_DTYPE = np.dtype({"names": ["in_ptr", "out_ptr", "count"], "formats": ["<u8", "<u8", "<i8"]})


@functools.cache
def _module(in_kind: int, out_kind: int, compute_double: bool, device_id: int) -> Any:
    cupy = require_gpu("chute's color kernels")
    options = (
        "-std=c++14",
        f"-DIN_KIND={in_kind}",
        f"-DOUT_KIND={out_kind}",
        f"-DCOMPUTE_DOUBLE={int(compute_double)}",
    )
    with cupy.cuda.Device(device_id):
        return cupy.RawModule(code=_SOURCE.read_text(), options=options)


def _kind(dtype: Any, what: str) -> int:
    try:
        return KERNEL_DTYPES[np.dtype(dtype)]
    except KeyError:
        names = ", ".join(str(d) for d in KERNEL_DTYPES)
        raise TypeError(f"{what} must be one of {names} on the GPU; got {dtype}") from None


def flat_table(in_ptrs: Any, out_ptrs: Any, counts: Any) -> np.ndarray:
    """Return the FLAT_DTYPE table (one row per sample) the kernels read."""
    counts = np.asarray(counts, np.int64).reshape(-1)
    table = np.zeros(len(counts), FLAT_DTYPE)
    table["in_ptr"] = np.asarray(in_ptrs, np.uint64).reshape(-1)
    table["out_ptr"] = np.asarray(out_ptrs, np.uint64).reshape(-1)
    table["count"] = counts
    return table


def launch_blocks(counts: np.ndarray, per_thread: int = 4) -> int:
    """Blocks along x for the largest sample (each thread strides over a few elements)."""
    most = int(np.max(counts)) if len(counts) else 0
    return int(min(max(-(-most // (_THREADS * per_thread)), 1), _MAX_BLOCKS_X))


# ---- batches and launches -------------------------------------------------------------------------


class ElementBatch:
    """A batch as the kernels see it: contiguous samples, pointers, shapes, element counts."""

    def __init__(self, cupy: Any, batch: Any):
        self.cupy = cupy
        if isinstance(batch, cupy.ndarray):
            self.dense = cupy.ascontiguousarray(batch)
            n = self.dense.shape[0]
            self.samples = [self.dense]
            self.shapes = [tuple(self.dense.shape[1:])] * n
            self.counts = np.full(n, self.dense[0].size if n else 0, np.int64)
            self.ptrs = _strided_ptrs(self.dense.data.ptr, n, self.counts[:1], self.dense.dtype)
        else:
            self.dense = None
            samples = batch.samples() if hasattr(batch, "samples") else batch
            self.samples = [cupy.ascontiguousarray(x) for x in samples]
            self.shapes = [tuple(x.shape) for x in self.samples]
            self.counts = np.array([x.size for x in self.samples], np.int64)
            self.ptrs = np.array([x.data.ptr for x in self.samples], np.uint64)
        first = self.dense if self.dense is not None else (self.samples or [None])[0]
        self.dtype = None if first is None else np.dtype(first.dtype)

    def __len__(self) -> int:
        return len(self.counts)

    def output(self, dtype: Any, channels: int | None = None) -> tuple[np.ndarray, Any]:
        """(per-sample output pointers, result) of a fresh output buffer.

        ``channels`` replaces the last extent of every sample (HW samples gain one).
        """
        cupy, dtype = self.cupy, np.dtype(dtype)
        n = len(self)
        if self.dense is not None:
            shape = _with_channels(tuple(self.dense.shape[1:]), channels)
            out = cupy.empty((n, *shape), dtype)
            size = np.array([int(np.prod(shape, dtype=np.int64))], np.int64)
            return _strided_ptrs(out.data.ptr, n, size, dtype), out
        shapes = [_with_channels(s, channels) for s in self.shapes]
        sizes = np.array([int(np.prod(s, dtype=np.int64)) for s in shapes], np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
        buf = device_empty(cupy, int(sizes.sum()), dtype)
        ptrs = buf.data.ptr + offsets.astype(np.uint64) * np.uint64(dtype.itemsize)
        views = [buf[o : o + k].reshape(s) for o, k, s in zip(offsets.tolist(), sizes, shapes)]
        return ptrs, views


def _strided_ptrs(base: int, n: int, size: np.ndarray, dtype: Any) -> np.ndarray:
    step = np.uint64(int(size[0]) * np.dtype(dtype).itemsize) if n else np.uint64(0)
    return base + np.arange(n, dtype=np.uint64) * step


def _with_channels(shape: tuple, channels: int | None) -> tuple:
    if channels is None:
        return shape
    return (*shape[:-1], channels) if len(shape) >= 3 else (*shape, channels)


def sample_channels(shape: tuple) -> int:
    """Channels of a sample shape (HW samples have one)."""
    return int(shape[-1]) if len(shape) >= 3 else 1


def launch(
    cupy: Any,
    name: str,
    in_dtype: np.dtype,
    out_dtype: np.dtype,
    compute_double: bool,
    table: np.ndarray,
    params: Any,
    extra: tuple,
    per_thread: int,
) -> None:
    """Launch color.cu's kernel ``name`` over a FLAT_DTYPE ``table`` with (N, k) ``params``.

    ``extra`` holds the kernel's trailing int arguments; each thread strides over
    ``per_thread`` elements.
    """
    n = len(table)
    if n == 0 or int(table["count"].max()) == 0:
        return
    if n > 65535:
        raise ValueError(f"batch of {n} samples is larger than one launch allows (65535)")
    kernel = _module(
        _kind(in_dtype, "input dtype"),
        _kind(out_dtype, "output dtype"),
        compute_double,
        cupy.cuda.Device().id,
    ).get_function(name)
    raw = table.view(np.uint8).reshape(-1)
    if isinstance(params, np.ndarray):
        # table and parameters travel in one copy; the parameters start 8-byte aligned
        host = np.ascontiguousarray(params, np.float64).view(np.uint8).reshape(-1)
        blob = cupy.asarray(np.concatenate([raw, host]))
        table_dev, params_dev = blob[: raw.size], blob[raw.size :]
    else:
        table_dev, params_dev = cupy.asarray(raw), params
    grid = (launch_blocks(table["count"], per_thread), n, 1)
    kernel(grid, (_THREADS, 1, 1), (table_dev, params_dev, *(np.int32(x) for x in extra)))


def affine_rows(gain: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """(N, 8) affine_batch parameters: the same gain and offset for every channel."""
    params = np.empty((len(gain), 8))
    params[:, :4] = np.asarray(gain, np.float64)[:, None]
    params[:, 4:] = np.asarray(offset, np.float64)[:, None]
    return params


def affine_batch(
    batch: Any,
    params: Any,
    channels: int,
    out_dtype: Any,
    compute_double: bool | None = None,
    round_even: bool = False,
    whole: bool = False,
    stream: Any = None,
) -> Any:
    """``out = in * gain[c] + offset[c]`` for every element (c = element index % channels).

    ``params`` is (N, 8) float64 (gain[4], offset[4]) per sample, as a NumPy array or
    already on the device. ``compute_double`` defaults to the CPU backends' choice:
    double for uint8 (their float64 lookup tables) and float64 inputs, else float32.
    ``whole=True`` treats a dense batch as one run of elements (``params`` has one row).
    """
    cupy = require_gpu("affine_batch")
    if not 1 <= channels <= 4:
        raise ValueError(f"channels must be 1 to 4, got {channels}")
    with stream or cupy.cuda.get_current_stream():
        b = ElementBatch(cupy, batch)
        out_ptrs, result = b.output(out_dtype)
        if not len(b):
            return result
        if compute_double is None:
            compute_double = b.dtype in (np.uint8, np.float64)
        if whole and b.dense is not None:
            table = flat_table(b.ptrs[:1], out_ptrs[:1], [b.dense.size])
        else:
            table = flat_table(b.ptrs, out_ptrs, b.counts)
        extra = (channels, int(round_even))
        launch(cupy, "affine_batch", b.dtype, out_dtype, compute_double, table, params, extra, 4)
    return result


def matrix_batch(batch: Any, params: np.ndarray, out_dtype: Any, stream: Any = None) -> Any:
    """Per pixel ``rgb = M @ rgb + offset`` (alpha passes) with (N, 12) per-sample parameters."""
    cupy = require_gpu("matrix_batch")
    with stream or cupy.cuda.get_current_stream():
        b = ElementBatch(cupy, batch)
        out_ptrs, result = b.output(out_dtype)
        if not len(b):
            return result
        channels = {sample_channels(s) for s in b.shapes}
        if len(channels) != 1 or next(iter(channels)) not in (3, 4):
            raise ValueError(f"color matrices need 3 or 4 channels, got {sorted(channels)}")
        c = channels.pop()
        table = flat_table(b.ptrs, out_ptrs, b.counts // c)
        double = b.dtype == np.float64
        launch(cupy, "matrix_batch", b.dtype, out_dtype, double, table, params, (c,), 2)
    return result
