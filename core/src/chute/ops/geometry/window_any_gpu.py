"""Crop / pad / paste windows on the GPU for element types the window kernel does not read.

The batched window launch (chute.gpu.geometry_kernels.window_batch) reads uint8 and
float32 images. Other types (int16, uint16, int32 masks, float64, ...) take this path:
per sample, the rows and columns the window reads, mapped by the border rule of
crop_kernels.border_index, gathered with CuPy (exact for every type), and the fill
value written where a constant border leaves the image.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from chute.gpu.runtime import require_gpu
from chute.ops.geometry.crop_kernels import border_index

__all__ = ["AnyImages", "describe_any", "kernel_reads", "saturate", "window_any"]

_KERNEL_IN = (np.dtype(np.uint8), np.dtype(np.float32))
_KERNEL_OUT = (np.dtype(np.uint8), np.dtype(np.float16), np.dtype(np.float32))


def kernel_reads(dtype: Any, out_dtype: Any = None) -> bool:
    """Whether the batched window kernel takes this input (and output) type."""
    out = np.dtype(out_dtype) if out_dtype is not None else np.dtype(dtype)
    return np.dtype(dtype) in _KERNEL_IN and out in _KERNEL_OUT


@dataclass
class AnyImages:
    """A batch's HWC / HW samples as CuPy arrays with the (n, 3) shapes the plans read."""

    samples: list
    shapes: np.ndarray  # (n, 3) int64: height, width, channels
    dtype: np.dtype
    squeeze: bool  # the samples are HW (no channel axis)

    @property
    def channels(self) -> int:
        return int(self.shapes[0, 2]) if len(self.shapes) else 1


def describe_any(batch: Any) -> AnyImages:
    """The samples of a GPU batch of HW or HWC images of any one numeric type."""
    samples = list(batch.samples())
    shapes = np.ones((len(samples), 3), np.int64)
    squeeze = bool(samples) and samples[0].ndim == 2
    for i, a in enumerate(samples):
        if a.ndim not in (2, 3) or (a.ndim == 2) != squeeze:
            raise ValueError(f"sample {i}: expected HW or HWC images alike, got shape {a.shape}")
        shapes[i, : a.ndim] = a.shape
    dtype = np.dtype(batch.dtype) if samples else np.dtype(np.uint8)
    return AnyImages(samples, shapes, dtype, squeeze)


def saturate(cupy: Any, values: Any, dtype: np.dtype) -> Any:
    """``values`` in ``dtype``: floats rounded to nearest and clipped into an integer type."""
    if values.dtype == dtype:
        return values
    if dtype.kind in "iu" and values.dtype.kind == "f":
        info = np.iinfo(dtype)
        values = cupy.clip(cupy.rint(values), info.min, info.max)
    return values.astype(dtype)


def window_any(
    images: AnyImages,
    anchors: np.ndarray,
    out_hw: np.ndarray,
    border: str,
    fill: np.ndarray,
    out_dtype: Any,
    stream: Any,
) -> list:
    """Each sample's (y, x) + out_hw window, extended by ``border`` (or ``fill``), as CuPy arrays."""
    cupy = require_gpu("GPU crop/pad windows")
    dt = np.dtype(out_dtype)
    c = images.channels
    out = []
    with stream:
        for i, image in enumerate(images.samples):
            h, w = (int(v) for v in images.shapes[i, :2])
            oh, ow = (int(v) for v in out_hw[i])
            y0, x0 = (int(v) for v in anchors[i])
            rows, cols = np.arange(y0, y0 + oh), np.arange(x0, x0 + ow)
            hwc = image if image.ndim == 3 else image[:, :, None]
            if border == "constant" or h == 0 or w == 0:
                inside_r, inside_c = (rows >= 0) & (rows < h), (cols >= 0) & (cols < w)
                values = cupy.asarray(fill[i, :c], dt).reshape(1, 1, c)
                res = cupy.empty((oh, ow, c), dt)
                res[...] = values
                r, q = rows[inside_r], cols[inside_c]
                if r.size and q.size:
                    part = hwc[int(r[0]) : int(r[-1]) + 1, int(q[0]) : int(q[-1]) + 1]
                    rs, cs = np.flatnonzero(inside_r), np.flatnonzero(inside_c)
                    res[int(rs[0]) : int(rs[-1]) + 1, int(cs[0]) : int(cs[-1]) + 1] = saturate(
                        cupy, part, dt
                    )
            else:
                r = cupy.asarray(border_index(rows, h, border))
                q = cupy.asarray(border_index(cols, w, border))
                res = saturate(cupy, hwc.take(r, axis=0).take(q, axis=1), dt)
            res = cupy.ascontiguousarray(res)
            out.append(res[:, :, 0] if images.squeeze else res)
    return out
