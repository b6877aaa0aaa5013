"""Batched geometry kernels over CuPy arrays: warps, windows (crop / pad), Gaussian blur.

Every launcher here takes a batch of HWC (or HW) images of any sizes, ``uint8`` or
``float32``, with up to 4 channels (a TensorListGPU, a list of CuPy arrays or one
(N, H, W, C) array), builds a NumPy table of per-sample parameters (pointer, shape,
row stride, output offset and size, matrix or window, border, fill), uploads it with
one copy and launches one kernel over the whole batch (the blur: two, rows then
columns). Outputs of one size come back as one (N, H, W, C) array, others as views
into one buffer. The CUDA sources are ``chute/kernels/warp.cu`` and ``filter.cu``
behind ``geometry_common.cu``, compiled at run time with NVRTC (``cupy.RawModule``).

The table builders are plain NumPy (no CuPy), so their arithmetic is testable anywhere.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from chute.gpu.runtime import device_empty, require_gpu

__all__ = [
    "BLUR_DTYPE",
    "BORDER_CODES",
    "GEOM_DTYPE",
    "INTERP_CODES",
    "ImageBatch",
    "blur_table",
    "describe_batch",
    "gaussian_blur_batch",
    "gaussian_taps",
    "geom_table",
    "output_offsets",
    "warp_affine_batch",
    "window_batch",
]

_KERNEL_DIR = Path(__file__).resolve().parent.parent / "kernels"
_BLOCK = (32, 8, 1)
_MAX_CHANNELS = 4

#: Border names -> the BORDER_* codes of geometry_common.cu.
BORDER_CODES = {"constant": 0, "replicate": 1, "reflect": 2, "reflect_101": 3, "wrap": 4}
#: Interpolation names -> the warp kernel's codes ("gaussian" samples linearly, as on the CPU).
INTERP_CODES = {"nn": 0, "linear": 1, "triangular": 1, "gaussian": 1, "cubic": 2}

_IN_KIND = {np.dtype(np.uint8): 0, np.dtype(np.float32): 2}
_OUT_KIND = {np.dtype(np.uint8): 0, np.dtype(np.float16): 1, np.dtype(np.float32): 2}

# Mirrors struct GeomSample in kernels/warp.cu.
GEOM_DTYPE = np.dtype(
    {
        "names": [
            "in_ptr",
            "in_row_stride",
            "out_offset",
            "in_h",
            "in_w",
            "out_h",
            "out_w",
            "interp",
            "border",
            "win_y",
            "win_x",
            "m",
            "fill",
        ],
        "formats": [
            np.uint64,
            np.int64,
            np.int64,
            np.int32,
            np.int32,
            np.int32,
            np.int32,
            np.int32,
            np.int32,
            np.int32,
            np.int32,
            (np.float64, 6),
            (np.float32, 4),
        ],
        "offsets": [0, 8, 16, 24, 28, 32, 36, 40, 44, 48, 52, 56, 104],
        "itemsize": 120,
    }
)

# Mirrors struct BlurSample in kernels/filter.cu.
BLUR_DTYPE = np.dtype(
    {
        "names": [
            "in_ptr",
            "in_row_stride",
            "offset",
            "h",
            "w",
            "rad_y",
            "rad_x",
            "taps_y",
            "taps_x",
            "border",
            "fill",
        ],
        "formats": [
            np.uint64,
            np.int64,
            np.int64,
            np.int32,
            np.int32,
            np.int32,
            np.int32,
            np.int32,
            np.int32,
            np.int32,
            np.float32,
        ],
        "offsets": [0, 8, 16, 24, 28, 32, 36, 40, 44, 48, 52],
        "itemsize": 56,
    }
)


@dataclass
class ImageBatch:
    """A batch's samples as the kernels read them: pointers, (n, 3) shapes, row strides."""

    keepalive: list  # arrays that own the memory until the launch is queued
    ptrs: np.ndarray  # (n,) uint64
    shapes: np.ndarray  # (n, 3) int64: height, width, channels
    row_strides: np.ndarray  # (n,) int64, in elements
    dtype: np.dtype
    squeeze: bool  # the samples are HW (no channel axis)

    @property
    def channels(self) -> int:
        return int(self.shapes[0, 2]) if len(self.shapes) else 1


def _in_kind(dtype: Any) -> int:
    try:
        return _IN_KIND[np.dtype(dtype)]
    except KeyError:
        raise TypeError(f"on the GPU the input must be uint8 or float32, got {dtype}") from None


def out_kind(dtype: Any) -> int:
    try:
        return _OUT_KIND[np.dtype(dtype)]
    except KeyError:
        raise TypeError(
            f"on the GPU the output must be uint8, float16 or float32, got {dtype}"
        ) from None


def describe_batch(batch: Any) -> ImageBatch:
    """Describe a GPU batch of HWC / HW images for the kernels (no copies of tight images)."""
    cupy = require_gpu("chute's GPU geometry kernels")
    from chute.gpu.batches import dense_array, raw_samples

    dense = batch if isinstance(batch, cupy.ndarray) else dense_array(batch)
    if dense is not None and dense.ndim == 4 and len(dense):
        n, h, w, c = dense.shape
        item = dense.dtype.itemsize
        if dense.strides[3] != item or dense.strides[2] != c * item or dense.strides[1] % item:
            dense = cupy.ascontiguousarray(dense)
        _check_channels(c)
        _in_kind(dense.dtype)
        ptrs = np.uint64(dense.data.ptr) + np.arange(n, dtype=np.uint64) * np.uint64(
            dense.strides[0]
        )
        shapes = np.tile(np.array([[h, w, c]], np.int64), (n, 1))
        rows = np.full(n, dense.strides[1] // item, np.int64)
        return ImageBatch([dense], ptrs, shapes, rows, dense.dtype, False)
    samples = list(batch) if isinstance(batch, (list, tuple)) else raw_samples(batch)
    arrays, ptrs, rows = [], [], []
    shapes = np.ones((len(samples), 3), np.int64)
    ndims = set()
    for i, a in enumerate(samples):
        if not isinstance(a, cupy.ndarray):
            a = cupy.asarray(a)  # decoders' images: wrapped through __cuda_array_interface__
        if a.ndim not in (2, 3):
            raise ValueError(f"sample {i}: expected an HWC or HW image, got shape {a.shape}")
        c = a.shape[2] if a.ndim == 3 else 1
        item = a.dtype.itemsize
        # the kernels step c elements per pixel and row_stride elements per row
        if (
            a.strides[1] != c * item
            or (a.ndim == 3 and a.strides[2] != item)
            or a.strides[0] % item
            or a.strides[0] < a.shape[1] * c * item
        ):
            a = cupy.ascontiguousarray(a)
        arrays.append(a)
        ptrs.append(a.data.ptr)
        rows.append(a.strides[0] // item)
        shapes[i, :2] = a.shape[:2]
        shapes[i, 2] = c
        ndims.add(a.ndim)
    dtypes = {a.dtype for a in arrays}
    if len(dtypes) > 1:
        raise TypeError(f"all samples must have one dtype, got {sorted(map(str, dtypes))}")
    dtype = arrays[0].dtype if arrays else np.dtype(np.uint8)
    _in_kind(dtype)
    if len(samples):
        if np.any(shapes[:, 2] != shapes[0, 2]):
            raise ValueError("all samples of a batch must have the same number of channels")
        _check_channels(int(shapes[0, 2]))
    return ImageBatch(
        arrays,
        np.asarray(ptrs, np.uint64),
        shapes,
        np.asarray(rows, np.int64),
        np.dtype(dtype),
        ndims == {2},
    )


def _check_channels(c: int) -> None:
    if not 1 <= c <= _MAX_CHANNELS:
        raise ValueError(f"the GPU geometry kernels take 1 to 4 channels, got {c}")


def output_offsets(out_hw: np.ndarray, channels: int) -> tuple[np.ndarray, int]:
    """(n,) element offsets of each sample in one output buffer, and the buffer's size."""
    counts = out_hw[:, 0].astype(np.int64) * out_hw[:, 1] * channels
    if not len(counts):
        return counts, 0
    offsets = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    return offsets, int(counts.sum())


def geom_table(
    images: ImageBatch,
    out_hw: np.ndarray,
    offsets: np.ndarray,
    matrices: Any = None,
    anchors: Any = None,
    interp: Any = 0,
    border: Any = 0,
    fill: Any = 0.0,
) -> np.ndarray:
    """The per-sample GEOM_DTYPE table of the warp and window kernels.

    ``matrices`` (n, 2, 3) map output pixels to input points in OpenCV's coordinates
    (centres at integers); ``anchors`` (n, 2) are integer window corners (y, x);
    ``interp`` / ``border`` are codes, scalars or (n,); ``fill`` a scalar, (4,) or (n, 4).
    """
    n = len(images.shapes)
    table = np.zeros(n, GEOM_DTYPE)
    table["in_ptr"] = images.ptrs
    table["in_row_stride"] = images.row_strides
    table["out_offset"] = offsets
    table["in_h"], table["in_w"] = images.shapes[:, 0], images.shapes[:, 1]
    table["out_h"], table["out_w"] = out_hw[:, 0], out_hw[:, 1]
    table["interp"] = interp
    table["border"] = border
    if anchors is not None:
        anchors = np.asarray(anchors, np.int64).reshape(n, 2)
        table["win_y"], table["win_x"] = anchors[:, 0], anchors[:, 1]
    if matrices is not None:
        table["m"] = np.asarray(matrices, np.float64).reshape(n, 6)
    table["fill"] = np.broadcast_to(np.asarray(fill, np.float32), (n, 4)) if n else 0
    return table


@functools.cache
def _function(source: str, name: str, in_kind: int, out_kind: int, round_away: int, device: int):
    cupy = require_gpu("chute's GPU geometry kernels")
    code = (_KERNEL_DIR / "geometry_common.cu").read_text() + (_KERNEL_DIR / source).read_text()
    options = (
        "-std=c++14",
        f"-DIN_KIND={in_kind}",
        f"-DOUT_KIND={out_kind}",
        f"-DROUND_AWAY={round_away}",
    )
    with cupy.cuda.Device(device):
        return cupy.RawModule(code=code, options=options).get_function(name)


def launch(kernel: Any, n: int, out_hw: np.ndarray, args: tuple) -> None:
    """Launch ``kernel`` over (x tiles, y tiles, n samples) covering the largest output."""
    if n == 0:
        return
    if n > 65535:
        raise ValueError(f"batch of {n} samples is larger than one launch allows (65535)")
    max_h, max_w = int(out_hw[:, 0].max()), int(out_hw[:, 1].max())
    if max_h == 0 or max_w == 0:
        return
    grid = (-(-max_w // _BLOCK[0]), -(-max_h // _BLOCK[1]), n)
    kernel(grid, _BLOCK, args)


def _one_size(out_hw: np.ndarray) -> bool:
    """Whether every sample has the same output size (a dense batch: no rounding needed)."""
    return bool(len(out_hw) and np.all(out_hw == out_hw[0]))


def batch_outputs(
    buf: Any, out_hw: np.ndarray, offsets: np.ndarray, c: int, squeeze: bool = False
) -> Any:
    """One (N, H, W[, C]) array when all sizes agree, else a list of views into ``buf``."""
    n = len(out_hw)
    if _one_size(out_hw):
        h, w = (int(v) for v in out_hw[0])
        return buf.reshape((n, h, w) if squeeze else (n, h, w, c))
    views = []
    for o, (h, w) in zip(offsets.tolist(), out_hw.tolist()):
        v = buf[o : o + h * w * c]
        views.append(v.reshape((h, w) if squeeze else (h, w, c)))
    return views


def _run_geom(
    name: str,
    images: ImageBatch,
    out_hw: np.ndarray,
    out_dtype: Any,
    stream: Any,
    round_away: bool = False,
    **table_args: Any,
) -> Any:
    cupy = require_gpu("chute's GPU geometry kernels")
    out_hw = np.asarray(out_hw, np.int64).reshape(-1, 2)
    c = images.channels
    offsets, total = output_offsets(out_hw, c)
    table = geom_table(images, out_hw, offsets, **table_args)
    dt = np.dtype(out_dtype)
    kernel_args = (_in_kind(images.dtype), out_kind(dt), int(round_away))
    with stream:
        buf = device_empty(cupy, total, dt, exact=_one_size(out_hw))
        if len(table):
            kernel = _function("warp.cu", name, *kernel_args, cupy.cuda.Device().id)
            table_dev = cupy.asarray(table.view(np.uint8))
            launch(kernel, len(table), out_hw, (table_dev, buf, np.int32(c)))
    # the inputs (images.keepalive) live until here, past the launch; CuPy's pool reuses
    # freed memory in stream order
    return batch_outputs(buf, out_hw, offsets, c, images.squeeze)


def warp_affine_batch(
    images: ImageBatch,
    matrices: np.ndarray,
    out_hw: np.ndarray,
    interp: Any,
    border: Any,
    fill: Any,
    stream: Any,
) -> Any:
    """Warp each image by its (n, 2, 3) output->input matrix (OpenCV coordinates): one launch.

    Returns samples shaped as the inputs (HWC, or HW when ``images.squeeze``).
    """
    return _run_geom(
        "warp_affine_batch",
        images,
        out_hw,
        images.dtype,
        stream,
        matrices=matrices,
        interp=interp,
        border=border,
        fill=fill,
    )


def window_batch(
    images: ImageBatch,
    anchors: np.ndarray,
    out_hw: np.ndarray,
    border: Any,
    fill: Any,
    out_dtype: Any,
    stream: Any,
) -> Any:
    """Copy the (y, x) + out_hw window of each image, extended by its border: one launch."""
    return _run_geom(
        "window_batch",
        images,
        out_hw,
        out_dtype,
        stream,
        anchors=anchors,
        border=border,
        fill=fill,
    )


def gaussian_taps(
    sigmas: np.ndarray, windows: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Kernels for (sigma, window) pairs: (float32 weights, (n,) first-tap offsets, (n,) radii).

    Each distinct pair is sampled once with ``cv2.getGaussianKernel`` (what the CPU
    backend blurs with) and stored once; window 1 is the identity.
    """
    import cv2

    pairs = np.stack([np.asarray(sigmas, np.float64), np.asarray(windows, np.float64)], 1)
    unique, inverse = np.unique(pairs.reshape(-1, 2), axis=0, return_inverse=True)
    kernels, starts, at = [], [], 0
    for sigma, window in unique.tolist():
        k = cv2.getGaussianKernel(int(window), float(sigma), ktype=cv2.CV_64F).ravel()
        kernels.append(k.astype(np.float32))
        starts.append(at)
        at += len(k)
    weights = np.concatenate(kernels) if kernels else np.zeros(1, np.float32)
    inverse = inverse.reshape(-1)
    offsets = np.asarray(starts, np.int64)[inverse] if len(starts) else np.zeros(0, np.int64)
    radii = (np.asarray(windows, np.int64).reshape(-1) - 1) // 2
    return weights, offsets, radii


def blur_table(
    images: ImageBatch,
    offsets: np.ndarray,
    rad: np.ndarray,
    taps: np.ndarray,
    border: int,
    fill: Any,
) -> np.ndarray:
    """The per-sample BLUR_DTYPE table; ``rad`` and ``taps`` are (n, 2) as (y, x), ``fill``
    a scalar or (n,)."""
    n = len(images.shapes)
    table = np.zeros(n, BLUR_DTYPE)
    table["in_ptr"] = images.ptrs
    table["in_row_stride"] = images.row_strides
    table["offset"] = offsets
    table["h"], table["w"] = images.shapes[:, 0], images.shapes[:, 1]
    table["rad_y"], table["rad_x"] = rad[:, 0], rad[:, 1]
    table["taps_y"], table["taps_x"] = taps[:, 0], taps[:, 1]
    table["border"] = border
    table["fill"] = fill
    return table


def gaussian_blur_batch(
    images: ImageBatch,
    sigmas: np.ndarray,
    windows: np.ndarray,
    border: str,
    fill: Any,
    out_dtype: Any,
    stream: Any,
    frames: Sequence[int] | None = None,
) -> Any:
    """Blur each image with its (sigma, window) per axis, (n, 2) as (y, x): two launches.

    ``fill`` (scalar or (n,)) is read outside the image with border "constant".
    ``frames`` groups consecutive rows of ``images`` into samples (FHWC sequences):
    sample i is the next ``frames[i]`` images, returned as one (F, H, W, C) view.
    """
    cupy = require_gpu("gaussian_blur_batch")
    n = len(images.shapes)
    c = images.channels
    hw = images.shapes[:, :2]
    offsets, total = output_offsets(hw, c)
    sigmas = np.asarray(sigmas, np.float64).reshape(n, 2)
    windows = np.asarray(windows, np.int64).reshape(n, 2)
    weights, starts, radii = gaussian_taps(sigmas.reshape(-1), windows.reshape(-1))
    table = blur_table(
        images,
        offsets,
        radii.reshape(n, 2),
        starts.reshape(n, 2),
        BORDER_CODES[border],
        fill,
    )
    dt = np.dtype(out_dtype)
    kinds = (_in_kind(images.dtype), out_kind(dt), 1)
    dense = _one_size(hw)
    with stream:
        out = device_empty(cupy, total, dt, exact=dense)
        if n:
            device = cupy.cuda.Device().id
            scratch = device_empty(cupy, total, np.float32, exact=dense)
            table_dev = cupy.asarray(table.view(np.uint8))
            weights_dev = cupy.asarray(weights)
            rows = _function("filter.cu", "blur_rows", *kinds, device)
            cols = _function("filter.cu", "blur_cols", *kinds, device)
            launch(rows, n, hw, (table_dev, weights_dev, scratch, np.int32(c)))
            launch(cols, n, hw, (table_dev, weights_dev, scratch, out, np.int32(c)))
    if frames is None:
        return batch_outputs(out, hw, offsets, c, images.squeeze)
    result, row = [], 0
    for f in frames:
        h, w = (int(v) for v in hw[row]) if f else (0, 0)
        start = int(offsets[row]) if f else 0
        result.append(out[start : start + f * h * w * c].reshape(f, h, w, c))
        row += f
    return result
