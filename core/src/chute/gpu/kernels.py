"""Batched image kernels over CuPy arrays: one launch per batch, ragged inputs.

Every function here takes a list of HWC ``uint8`` CuPy arrays of any sizes (views with
padded rows are fine, e.g. crops of a bigger image; objects with a
``__cuda_array_interface__``, such as nvImageCodec's images, are read without wrapping),
builds a table of per-sample parameters (pointer, shape, row stride, window, mirror
flag, mean, 1/std, fill, output offset), uploads it with one copy and launches one
kernel over the whole batch. The CUDA sources live in ``chute/kernels/*.cu`` and are
compiled at run time with NVRTC through ``cupy.RawModule`` (cached in memory and by
CuPy on disk).

Windows are ``(y, x, h, w)`` in input pixels and may be fractional; resampling follows
Pillow's definitions (pixel centres at ``i + 0.5``; triangle / Keys cubic filters
stretched by the scale when shrinking, i.e. antialiased), so ``Image.resize(...,
box=...)`` is the CPU reference.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from chute.gpu.codec_api import DeviceImage
from chute.gpu.runtime import device_empty, require_gpu

__all__ = [
    "SAMPLE_DTYPE",
    "build_sample_table",
    "crop_mirror_normalize_batch",
    "kernel_function",
    "resize_batch",
    "resize_crop_mirror_normalize",
    "sizes_for_shorter_side",
]

_KERNEL_DIR = Path(__file__).resolve().parent.parent / "kernels"
_BLOCK = (32, 8, 1)

# Mirrors struct SampleDesc in kernels/image_batch_common.cu.
SAMPLE_DTYPE = np.dtype(
    {
        "names": [
            "in_ptr",
            "in_row_stride",
            "in_h",
            "in_w",
            "in_c",
            "mirror",
            "window",
            "mean",
            "inv_std",
            "fill",
            "out_offset",
            "out_h",
            "out_w",
        ],
        "formats": [
            np.uint64,
            np.int64,
            np.int32,
            np.int32,
            np.int32,
            np.int32,
            (np.float32, 4),
            (np.float32, 4),
            (np.float32, 4),
            (np.float32, 4),
            np.int64,
            np.int32,
            np.int32,
        ],
        "offsets": [0, 8, 16, 20, 24, 28, 32, 48, 64, 80, 96, 104, 108],
        "itemsize": 112,
    }
)

_OUT_KIND = {np.dtype(np.uint8): 0, np.dtype(np.float16): 1, np.dtype(np.float32): 2}
_INTERP = {
    "nn": 0,
    "nearest": 0,
    "linear": 1,
    "bilinear": 1,
    "triangular": 1,
    "cubic": 2,
    "bicubic": 2,
}


def _interp_code(interp: Any) -> int:
    name = str(getattr(interp, "name", interp)).lower().removeprefix("interp_")
    try:
        return _INTERP[name]
    except KeyError:
        raise ValueError(f"interp must be one of nn, linear, cubic; got {interp!r}") from None


def _out_kind(dtype: Any) -> int:
    try:
        return _OUT_KIND[np.dtype(dtype)]
    except (KeyError, TypeError):
        raise ValueError(f"dtype must be uint8, float16 or float32; got {dtype!r}") from None


def _layout_chw(layout: str) -> int:
    if layout not in ("CHW", "HWC"):
        raise ValueError(f"layout must be 'CHW' or 'HWC'; got {layout!r}")
    return int(layout == "CHW")


@functools.cache
def kernel_function(source: str, name: str, out_kind: int, device_id: int) -> Any:
    """Kernel ``name`` of ``source`` (after image_batch_common.cu), compiled once per device."""
    cupy = require_gpu("chute's GPU kernels")
    code = (_KERNEL_DIR / "image_batch_common.cu").read_text() + (_KERNEL_DIR / source).read_text()
    with cupy.cuda.Device(device_id):
        module = cupy.RawModule(code=code, options=("-std=c++14", f"-DOUT_KIND={out_kind}"))
        return module.get_function(name)


def _per_sample(value: Any, n: int, c: int, name: str) -> np.ndarray:
    """Broadcast a scalar, a per-channel (c,) or a per-sample (n, c) value to (n, 4)."""
    a = np.asarray(value, dtype=np.float32)
    if a.ndim == 0:
        a = np.full((n, c), a, np.float32)
    elif a.ndim == 1 and a.shape[0] in (1, c):
        a = np.broadcast_to(a, (n, c))
    elif a.shape != (n, c):
        raise ValueError(f"{name} must be a scalar, ({c},) or ({n}, {c}); got shape {a.shape}")
    out = np.zeros((n, 4), np.float32)
    out[:, :c] = a
    return out


def build_sample_table(
    ptrs: Sequence[int],
    shapes: np.ndarray,
    row_strides: Sequence[int],
    windows: np.ndarray,
    out_hw: np.ndarray,
    out_offsets: np.ndarray,
    mirror: Any = None,
    mean: Any = 0.0,
    std: Any = 1.0,
    fill: Any = 0.0,
    out_channels: int | None = None,
) -> np.ndarray:
    """Return the per-sample parameter table (a SAMPLE_DTYPE array) the kernels read."""
    n = len(ptrs)
    shapes = np.asarray(shapes, np.int64).reshape(n, 3)
    c = int(shapes[0, 2]) if n else 1
    oc = out_channels or c
    std_a = _per_sample(std, n, c, "std")
    if np.any(std_a[:, :c] == 0):
        raise ValueError("std must be nonzero")
    table = np.zeros(n, SAMPLE_DTYPE)
    table["in_ptr"] = np.asarray(ptrs, np.uint64)
    table["in_row_stride"] = np.asarray(row_strides, np.int64)
    table["in_h"], table["in_w"], table["in_c"] = shapes[:, 0], shapes[:, 1], shapes[:, 2]
    # booleans flip horizontally; resample.cu also reads bit 2 (vertical)
    flips = 0 if mirror is None else np.asarray(mirror).astype(np.int32)
    table["mirror"] = flips if mirror is None else np.broadcast_to(flips, (n,))
    table["window"] = np.asarray(windows, np.float32).reshape(n, 4)
    table["mean"] = _per_sample(mean, n, c, "mean")
    inv = np.zeros((n, 4), np.float32)
    inv[:, :c] = 1.0 / std_a[:, :c]
    table["inv_std"] = inv
    table["fill"] = _per_sample(fill, n, oc, "fill") if oc <= 4 else 0
    table["out_offset"] = out_offsets
    table["out_h"], table["out_w"] = out_hw[:, 0], out_hw[:, 1]
    return table


def _describe_inputs(
    cupy: Any, inputs: Sequence[Any]
) -> tuple[list[Any], list[int], np.ndarray, list[int]]:
    """Return (arrays kept alive, pointers, (n, 3) shapes, row strides), checking layout.

    ``inputs`` is a sequence of HWC images or one (N, H, W, C) CuPy array, whose table
    is computed without a view per sample.
    """
    if isinstance(inputs, cupy.ndarray) and inputs.ndim == 4:
        return _describe_dense(cupy, inputs)
    # a decoder's batch (contiguous rows): the table at once, not a row per sample
    if len(inputs) and all(type(a) is DeviceImage for a in inputs):
        shapes = np.array([a.shape for a in inputs], np.int64).reshape(-1, 3)
        if shapes[:, 2].max() <= 4:
            if np.any(shapes[:, 2] != shapes[0, 2]):
                raise ValueError("all samples of a batch must have the same number of channels")
            ptrs = [a.ptr for a in inputs]
            return list(inputs), ptrs, shapes, (shapes[:, 1] * shapes[:, 2]).tolist()
    arrays, ptrs, strides = [], [], []
    shapes = np.empty((len(inputs), 3), np.int64)
    for i, a in enumerate(inputs):
        if type(a) is DeviceImage:  # a decoder's image: contiguous rows, no wrapping needed
            h, w, c = a.shape
            if c <= 4:
                arrays.append(a)
                ptrs.append(a.ptr)
                strides.append(w * c)
                shapes[i] = (h, w, c)
                continue
        if not isinstance(a, cupy.ndarray):
            cai = getattr(a, "__cuda_array_interface__", None)
            if cai is not None and cai["typestr"] == "|u1" and len(cai["shape"]) in (2, 3):
                # read pointer and layout without wrapping (decoders' images; the caller
                # orders their producer's stream before ours)
                shape = tuple(cai["shape"])
                c = shape[2] if len(shape) == 3 else 1
                row = (cai.get("strides") or (shape[1] * c,))[0]
                if c <= 4 and (
                    cai.get("strides") is None
                    or tuple(cai["strides"][1:]) == ((c, 1) if len(shape) == 3 else (1,))
                ):
                    arrays.append(a)
                    ptrs.append(int(cai["data"][0]))
                    strides.append(int(row))
                    shapes[i] = (shape[0], shape[1], c)
                    continue
            a = cupy.asarray(a)
        if a.dtype != np.uint8 or a.ndim not in (2, 3):
            raise TypeError(f"sample {i}: expected an HWC uint8 array, got {a.dtype} {a.shape}")
        c = 1 if a.ndim == 2 else a.shape[2]
        if c > 4:
            raise ValueError(f"sample {i}: at most 4 channels are supported, got {c}")
        # the kernels step c bytes per pixel and row_stride bytes per row
        if (
            a.strides[1] != c
            or (a.ndim == 3 and a.strides[2] != 1)
            or a.strides[0] < a.shape[1] * c
        ):
            a = cupy.ascontiguousarray(a)
        arrays.append(a)
        ptrs.append(a.data.ptr)
        strides.append(a.strides[0])
        shapes[i] = (a.shape[0], a.shape[1], c)
    if len(inputs) and np.any(shapes[:, 2] != shapes[0, 2]):
        raise ValueError("all samples of a batch must have the same number of channels")
    return arrays, ptrs, shapes, strides


def _describe_dense(cupy: Any, batch: Any) -> tuple[list[Any], Any, np.ndarray, Any]:
    n, h, w, c = batch.shape
    if batch.dtype != np.uint8:
        raise TypeError(f"expected a uint8 (N, H, W, C) batch, got {batch.dtype} {batch.shape}")
    if c > 4:
        raise ValueError(f"at most 4 channels are supported, got {c}")
    if (
        batch.strides[2] != c
        or batch.strides[3] != 1
        or batch.strides[1] < w * c
        or batch.strides[0] <= 0
    ):
        batch = cupy.ascontiguousarray(batch)
    ptrs = batch.data.ptr + np.arange(n, dtype=np.uint64) * np.uint64(batch.strides[0])
    shapes = np.tile(np.array([[h, w, c]], np.int64), (n, 1))
    return [batch], ptrs, shapes, np.full(n, batch.strides[1], np.int64)


def _launch(
    cupy: Any,
    source: str,
    name: str,
    table: np.ndarray,
    out: Any,
    out_c: int,
    extra: tuple,
    stream: Any,
) -> None:
    n = len(table)
    if n == 0:
        return
    if n > 65535:
        raise ValueError(f"batch of {n} samples is larger than one launch allows (65535)")
    max_h, max_w = int(table["out_h"].max()), int(table["out_w"].max())
    if max_h == 0 or max_w == 0:
        return
    grid = (-(-max_w // _BLOCK[0]), -(-max_h // _BLOCK[1]), n)
    with stream:
        kernel = kernel_function(source, name, _OUT_KIND[out.dtype], cupy.cuda.Device().id)
        table_dev = cupy.asarray(table.view(np.uint8))
        kernel(grid, _BLOCK, (table_dev, out, np.int32(out_c), *(np.int32(x) for x in extra)))


def _windows(windows: Any, shapes: np.ndarray) -> np.ndarray:
    n = len(shapes)
    if windows is None:
        w = np.zeros((n, 4), np.float32)
        w[:, 2], w[:, 3] = shapes[:, 0], shapes[:, 1]
        return w
    w = np.asarray(windows, np.float32)
    if w.shape != (n, 4):
        raise ValueError(f"windows must have shape ({n}, 4) as (y, x, h, w); got {w.shape}")
    if np.any(w[:, 2:] <= 0):
        raise ValueError("window heights and widths must be positive")
    return w


def resize_crop_mirror_normalize(
    inputs: Sequence[Any],
    windows: Any,
    out_hw: tuple[int, int],
    mirror: Any = None,
    mean: Any = 0.0,
    std: Any = 1.0,
    dtype: Any = np.float16,
    layout: str = "CHW",
    interp: Any = "linear",
    antialias: bool = True,
    fill: Any = 0.0,
    out: Any = None,
    stream: Any = None,
) -> Any:
    """Resample a window of each image to ``out_hw``, flip, normalize, cast: one launch.

    The random-resized-crop path of ImageNet training. ``windows`` is (N, 4) float
    ``(y, x, h, w)`` in input pixels (None: the whole image); ``mirror`` is (N,) bool;
    ``mean``/``std`` are scalars, per channel or per sample (N, C); ``fill`` is written
    as is (output units) where a sample point falls outside the image. Returns one
    contiguous (N, C, H, W) or (N, H, W, C) CuPy array (or fills ``out``).
    """
    cupy = require_gpu("resize_crop_mirror_normalize")
    stream = stream or cupy.cuda.get_current_stream()
    n = len(inputs)
    h, w = (int(v) for v in out_hw)
    chw = _layout_chw(layout)
    out_kind = _out_kind(dtype)
    arrays, ptrs, shapes, strides = _describe_inputs(cupy, inputs)
    c = int(shapes[0, 2]) if n else 3
    shape = (n, c, h, w) if chw else (n, h, w, c)
    dt = np.dtype(dtype)
    if out is None:
        with stream:
            out = cupy.empty(shape, dt)
    elif out.shape != shape or out.dtype != dt or not out.flags.c_contiguous:
        raise ValueError(f"out must be a contiguous {dt} array of shape {shape}")
    assert _OUT_KIND[dt] == out_kind
    table = build_sample_table(
        ptrs,
        shapes,
        strides,
        _windows(windows, shapes),
        np.tile(np.array([[h, w]], np.int32), (n, 1)),
        np.arange(n, dtype=np.int64) * (c * h * w),
        mirror,
        mean,
        std,
        fill,
    )
    _launch(
        cupy,
        "resample.cu",
        "resample_batch",
        table,
        out,
        c,
        (chw, _interp_code(interp), int(antialias)),
        stream,
    )
    del arrays  # kept alive until the launch is queued; later reuse is stream-ordered
    return out


def sizes_for_shorter_side(shapes: Any, size: int, max_size: int | None = None) -> np.ndarray:
    """Return (N, 2) output sizes that scale each (h, w[, c]) so its shorter side is ``size``."""
    s = np.array([tuple(x)[:2] for x in shapes], np.float64).reshape(-1, 2)
    scale = size / s.min(axis=1)
    if max_size is not None:
        scale = np.minimum(scale, max_size / s.max(axis=1))
    return np.maximum(np.floor(s * scale[:, None] + 0.5), 1).astype(np.int32)


def resize_batch(
    inputs: Sequence[Any],
    sizes: Any,
    interp: Any = "linear",
    antialias: bool = True,
    windows: Any = None,
    dtype: Any = np.uint8,
    stream: Any = None,
) -> Any:
    """Resize each HWC image (or its window) to its size; one launch for the batch.

    ``sizes`` is one ``(h, w)`` for all samples, which returns a dense (N, h, w, C)
    array, or (N, 2) per-sample sizes, which returns a list of HWC views into one
    contiguous buffer.
    """
    cupy = require_gpu("resize_batch")
    stream = stream or cupy.cuda.get_current_stream()
    n = len(inputs)
    arrays, ptrs, shapes, strides = _describe_inputs(cupy, inputs)
    c = int(shapes[0, 2]) if n else 3
    sz = np.asarray(sizes, np.int64)
    uniform = sz.shape == (2,)
    out_hw = np.tile(sz, (n, 1)) if uniform else sz.reshape(n, 2)
    if np.any(out_hw <= 0):
        raise ValueError("output sizes must be positive")
    counts = out_hw[:, 0] * out_hw[:, 1] * c
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64) if n else counts
    dt = np.dtype(dtype)
    _out_kind(dt)
    with stream:
        buf = device_empty(cupy, int(counts.sum()), dt, exact=uniform)
    table = build_sample_table(ptrs, shapes, strides, _windows(windows, shapes), out_hw, offsets)
    _launch(
        cupy,
        "resample.cu",
        "resample_batch",
        table,
        buf,
        c,
        (0, _interp_code(interp), int(antialias)),
        stream,
    )
    del arrays
    if uniform:
        return buf.reshape(n, int(sz[0]), int(sz[1]), c)
    return [
        buf[o : o + k].reshape(int(hh), int(ww), c)
        for o, k, (hh, ww) in zip(offsets.tolist(), counts.tolist(), out_hw.tolist())
    ]


def crop_mirror_normalize_batch(
    inputs: Sequence[Any],
    crop_hw: tuple[int, int],
    crop_pos: Any = (0.5, 0.5),
    mirror: Any = None,
    mean: Any = 0.0,
    std: Any = 1.0,
    dtype: Any = np.float16,
    layout: str = "CHW",
    fill: Any = 0.0,
    out_channels: int | None = None,
    anchors: Any = None,
    out: Any = None,
    stream: Any = None,
) -> Any:
    """Crop ``crop_hw`` from each image, flip, normalize, cast and lay out: one launch.

    The validation path after a resize. The crop anchor is ``round(crop_pos * (in -
    crop))`` per axis, ``crop_pos`` being ``(y, x)`` in [0, 1] for all samples or (N, 2)
    per sample, unless integer ``anchors`` (N, 2) are given. Pixels outside the image
    and channels beyond the input's (``out_channels=4`` pads RGB) get ``fill``, written
    as is.
    """
    cupy = require_gpu("crop_mirror_normalize_batch")
    stream = stream or cupy.cuda.get_current_stream()
    n = len(inputs)
    h, w = (int(v) for v in crop_hw)
    chw = _layout_chw(layout)
    arrays, ptrs, shapes, strides = _describe_inputs(cupy, inputs)
    c = int(shapes[0, 2]) if n else 3
    oc = out_channels or c
    if not c <= oc <= 4:
        raise ValueError(f"out_channels must be between {c} and 4; got {oc}")
    if anchors is None:
        pos = np.broadcast_to(np.asarray(crop_pos, np.float64), (n, 2))
        anchors = np.floor(pos * (shapes[:, :2] - np.array([h, w])) + 0.5)
    windows = np.zeros((n, 4), np.float32)
    windows[:, :2] = np.asarray(anchors, np.float32).reshape(n, 2)
    windows[:, 2], windows[:, 3] = h, w
    dt = np.dtype(dtype)
    _out_kind(dt)
    shape = (n, oc, h, w) if chw else (n, h, w, oc)
    if out is None:
        with stream:
            out = cupy.empty(shape, dt)
    elif out.shape != shape or out.dtype != dt or not out.flags.c_contiguous:
        raise ValueError(f"out must be a contiguous {dt} array of shape {shape}")
    table = build_sample_table(
        ptrs,
        shapes,
        strides,
        windows,
        np.tile(np.array([[h, w]], np.int32), (n, 1)),
        np.arange(n, dtype=np.int64) * (oc * h * w),
        mirror,
        mean,
        std,
        fill,
        out_channels=oc,
    )
    _launch(
        cupy,
        "crop_mirror_normalize.cu",
        "crop_mirror_normalize_batch",
        table,
        out,
        oc,
        (chw,),
        stream,
    )
    del arrays
    return out
