"""Batched per-pixel color kernels over CuPy arrays: one launch per batch, ragged inputs.

Every launcher takes a batch as one contiguous (N, ...) CuPy array or a list of CuPy
samples of any shapes, builds a table of per-sample pointers and element counts plus
per-sample parameters (NumPy, uploaded with one copy) and launches one kernel of
``chute/kernels/color.cu`` over the whole batch. Outputs are one fresh buffer: a dense
array for a dense input, else a list of views into it.

The parameter builders (``color_twist_params``, ``brightness_contrast_params``,
``color_space_params``, ...) are plain NumPy, vectorized over the batch, and compute the
same float64 numbers as the CPU backends in :mod:`chute.ops.color.color_kernels`.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import numpy as np

from chute.gpu.runtime import require_gpu
from chute.ops.color.color_kernels import RGB_TO_YIQ, YIQ_TO_RGB
from chute.ops.image.convert_kernels import full_range, half_range

__all__ = [
    "FLAT_DTYPE",
    "KERNEL_DTYPES",
    "affine_batch",
    "brightness_contrast_params",
    "color_space_batch",
    "color_space_params",
    "color_twist_params",
    "flat_table",
    "hsv_params",
    "launch_blocks",
    "luma_params",
    "matrix_batch",
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


# ---- per-sample parameters (NumPy, vectorized over the batch) -------------------------


def _column(value: Any, n: int) -> np.ndarray:
    return np.broadcast_to(np.asarray(value, np.float64), (n,)).copy()


def brightness_contrast_params(
    n: int,
    in_dtype: Any,
    out_dtype: Any,
    brightness: Any = 1.0,
    brightness_shift: Any = 0.0,
    contrast: Any = 1.0,
    contrast_center: Any = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample (gain, offset) of brightness_contrast, as color_kernels.brightness_contrast."""
    b, shift, c = _column(brightness, n), _column(brightness_shift, n), _column(contrast, n)
    center = np.array(
        [half_range(in_dtype) if v is None else float(v) for v in _objects(contrast_center, n)]
    )
    out_range = full_range(out_dtype)
    norm = b * out_range / full_range(in_dtype)
    gain = norm * c
    offset = shift * out_range + norm * (center - c * center)
    return gain, offset


def _objects(value: Any, n: int) -> list:
    if isinstance(value, (list, tuple, np.ndarray)) and np.ndim(value) == 1:
        return list(value)
    return [value] * n


def hsv_matrices(hue: Any, saturation: Any, value: Any, n: int) -> np.ndarray:
    """(N, 3, 3) RGB matrices rotating hue (degrees), scaling saturation and value in YIQ."""
    h = np.radians(_column(hue, n))
    cos_h, sin_h = np.cos(h), np.sin(h)
    s = _column(saturation, n)
    yiq = np.zeros((n, 3, 3))
    yiq[:, 0, 0] = 1.0
    yiq[:, 1, 1] = yiq[:, 2, 2] = s * cos_h
    yiq[:, 1, 2] = s * sin_h
    yiq[:, 2, 1] = -s * sin_h
    return _column(value, n)[:, None, None] * (YIQ_TO_RGB @ yiq @ RGB_TO_YIQ)


def color_twist_params(
    n: int,
    brightness: Any = 1.0,
    contrast: Any = 1.0,
    hue: Any = 0.0,
    saturation: Any = 1.0,
    center: float = 0.5,
    bgr: bool = False,
) -> np.ndarray:
    """(N, 12) matrix_batch parameters (3x3 matrix, offset) of color_twist per sample."""
    b, c = _column(brightness, n), _column(contrast, n)
    matrix = (b * c)[:, None, None] * hsv_matrices(hue, saturation, 1.0, n)
    offset = np.repeat((b * (1.0 - c) * center)[:, None], 3, axis=1)
    return _matrix_params(matrix, offset, bgr)


def hsv_params(n: int, hue: Any = 0.0, saturation: Any = 1.0, value: Any = 1.0) -> np.ndarray:
    """(N, 12) matrix_batch parameters of fn.hsv per sample."""
    return _matrix_params(hsv_matrices(hue, saturation, value, n), np.zeros((n, 3)), False)


def _matrix_params(matrix: np.ndarray, offset: np.ndarray, bgr: bool) -> np.ndarray:
    if bgr:  # the same map with the channel order reversed on both sides
        matrix, offset = matrix[:, ::-1, ::-1], offset[:, ::-1]
    return np.concatenate([matrix.reshape(-1, 9), offset], axis=1)


def luma_params(params: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(gain, offset) per sample of a color matrix applied to 1-channel (gray) images.

    Gray stands for R = G = B; the output is the luma of the transformed pixel, as
    color_kernels._apply_color_matrix does.
    """
    luma = RGB_TO_YIQ[0]
    matrix = params[:, :9].reshape(-1, 3, 3)
    gain = (luma @ matrix) @ np.ones(3)
    return gain, params[:, 9:] @ luma


def identity_matrix_params(n: int) -> np.ndarray:
    """(N, 12) parameters of the identity color map (masked samples)."""
    return _matrix_params(np.tile(np.eye(3), (n, 1, 1)), np.zeros((n, 3)), False)


def color_space_params(src: str, dst: str, dtype: Any) -> tuple[int, int, int, int, np.ndarray]:
    """Return (in_c, out_c, src_hsv, dst_hsv, 24 float64 parameters) of color_space_batch.

    Without HSV the whole conversion is one affine map (A; B is the identity), as on the
    CPU; with HSV, A takes the input to RGB or B takes RGB to the output.
    """
    from chute.ops.color.color_space_kernels import from_rgb, image_type_channels, to_rgb

    mid = half_range(dtype)
    in_c, out_c = image_type_channels(src), image_type_channels(dst)
    identity = (np.eye(3), np.zeros(3))
    a, b = identity, identity
    if src == dst:
        pass  # a copy, as on the CPU
    elif "HSV" not in (src, dst):
        m_in, o_in = to_rgb(src, mid)
        m_out, o_out = from_rgb(dst, mid)
        a = (m_out @ m_in, m_out @ o_in + o_out)
    elif src == "HSV":
        b = from_rgb(dst, mid) if dst != "HSV" else identity
    else:
        a = to_rgb(src, mid)
    params = np.concatenate([_square(*a), _square(*b)])
    hsv = src != dst
    return in_c, out_c, int(hsv and src == "HSV"), int(hsv and dst == "HSV"), params


def _square(matrix: np.ndarray, offset: np.ndarray) -> np.ndarray:
    """A (rows x cols) matrix and offset padded to 3x3 + 3 (gray reads column 0)."""
    full = np.zeros((3, 3))
    full[: matrix.shape[0], : matrix.shape[1]] = matrix
    off = np.zeros(3)
    off[: len(offset)] = offset
    return np.concatenate([full.ravel(), off])


# ---- launchers -------------------------------------------------------------------------


class _Batch:
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
            self.samples = [cupy.ascontiguousarray(x) for x in batch]
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
        buf = cupy.empty(int(sizes.sum()), dtype)
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


def _channels(shape: tuple) -> int:
    return int(shape[-1]) if len(shape) >= 3 else 1


def _launch(
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
        b = _Batch(cupy, batch)
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
        _launch(cupy, "affine_batch", b.dtype, out_dtype, compute_double, table, params, extra, 4)
    return result


def matrix_batch(batch: Any, params: np.ndarray, out_dtype: Any, stream: Any = None) -> Any:
    """Per pixel ``rgb = M @ rgb + offset`` (alpha passes) with (N, 12) per-sample parameters."""
    cupy = require_gpu("matrix_batch")
    with stream or cupy.cuda.get_current_stream():
        b = _Batch(cupy, batch)
        out_ptrs, result = b.output(out_dtype)
        if not len(b):
            return result
        channels = {_channels(s) for s in b.shapes}
        if len(channels) != 1 or next(iter(channels)) not in (3, 4):
            raise ValueError(f"color matrices need 3 or 4 channels, got {sorted(channels)}")
        c = channels.pop()
        table = flat_table(b.ptrs, out_ptrs, b.counts // c)
        double = b.dtype == np.float64
        _launch(cupy, "matrix_batch", b.dtype, out_dtype, double, table, params, (c,), 2)
    return result


def color_space_batch(batch: Any, src: str, dst: str, stream: Any = None) -> Any:
    """Convert every HWC sample from color space ``src`` to ``dst``; the dtype is kept.

    HW samples count as one channel (GRAY).
    """
    cupy = require_gpu("color_space_batch")
    with stream or cupy.cuda.get_current_stream():
        b = _Batch(cupy, batch)
        if not len(b):
            return b.output(b.dtype or np.uint8)[1]
        dtype = b.dtype
        hsv = "HSV" in (src, dst)
        if hsv and dtype != np.uint8 and dtype.kind != "f":
            raise TypeError(f"HSV conversion needs uint8 or float input, got {dtype}")
        in_c, out_c, src_hsv, dst_hsv, params = color_space_params(src, dst, dtype)
        for s in b.shapes:
            if _channels(s) != in_c:
                raise ValueError(f"{src} images have {in_c} channel(s), got shape {s}")
        out_ptrs, result = b.output(dtype, out_c)
        table = flat_table(b.ptrs, out_ptrs, b.counts // in_c)
        # OpenCV rounds its own types half to even; the rest go through convert_saturate
        round_even = dtype in (np.uint8, np.uint16, np.int16)
        extra = (in_c, out_c, src_hsv, dst_hsv, int(hsv and dtype == np.uint8), int(round_even))
        double = dtype == np.float64
        _launch(cupy, "color_space_batch", dtype, dtype, double, table, params, extra, 2)
    return result
