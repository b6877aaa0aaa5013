"""GPU image batches as the per-image kernels read them: pointers, row strides, sizes.

Shared by the batched GPU backends of the filters, distortions, CLAHE, debayer and remap:
``FrameImages`` describes a batch (the frames of FHWC sequences flattened into images),
``sample_table`` builds the per-image table of the kernels' ``FSample`` struct
(``SAMPLE_DTYPE``), ``host_samples`` brings a small input (filters, fill values) to the host.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.gpu.batches import raw_samples
from chute.gpu.runtime import require_gpu

__all__ = ["SAMPLE_DTYPE", "FrameImages", "batch_layout", "host_samples", "sample_table"]

# Mirrors struct FSample of the kernels in filters_gpu (and distortion_gpu).
SAMPLE_DTYPE = np.dtype(
    {
        "names": [
            "in_ptr",
            "in_row",
            "out_off",
            "k_off",
            "h",
            "w",
            "out_h",
            "out_w",
            "kh",
            "kw",
            "ay",
            "ax",
            "fill",
        ],
        "formats": [np.uint64, np.int64, np.int64, np.int64] + [np.int32] * 8 + [np.float32],
        "offsets": [0, 8, 16, 24, 32, 36, 40, 44, 48, 52, 56, 60, 64],
        "itemsize": 72,
    }
)


class FrameImages:
    """A batch's images (frames of FHWC samples flattened) as the kernels read them."""

    def __init__(self, batch: Any, op: str, layout: str | None = None) -> None:
        """``layout``: the input's build-time layout (the node's ``ctx.state``), else the batch's."""
        cupy = require_gpu(op)
        self.keepalive: list = []
        ptrs, rows, hw = [], [], []
        self.frames: list[int] | None = None
        self.channels, self.squeeze = 1, False
        dtypes, ndims, chans = set(), set(), set()
        frames = []
        layout = layout or batch_layout(batch)
        if layout.endswith("CHW"):
            raise ValueError(f"{op}: on the GPU samples must be channels-last, got {layout}")
        seq = layout.startswith("F")
        samples = list(batch) if isinstance(batch, (list, tuple)) else raw_samples(batch)
        for i, a in enumerate(samples):
            if not isinstance(a, cupy.ndarray):
                a = cupy.asarray(a)
            if a.ndim not in (2, 3, 4):
                raise ValueError(f"{op}: sample {i}: expected HW, HWC or FHWC, got {a.shape}")
            ndims.add(a.ndim)
            a = cupy.ascontiguousarray(a)
            self.keepalive.append(a)
            dtypes.add(a.dtype)
            images = list(a) if a.ndim == 4 or (seq and a.ndim == 3) else [a]
            frames.append(len(images))
            for img in images:
                c = img.shape[2] if img.ndim == 3 else 1
                chans.add(c)
                ptrs.append(img.data.ptr)
                rows.append(img.shape[1] * c)
                hw.append(img.shape[:2])
        if len(dtypes) > 1 or len(chans) > 1 or len(ndims) > 1:
            raise ValueError(f"{op}: samples of a batch must share dtype, rank and channels")
        self.dtype = np.dtype(dtypes.pop()) if dtypes else np.dtype(np.uint8)
        self.channels = chans.pop() if chans else 1
        self.squeeze = ndims == {2} or (seq and ndims == {3})
        if ndims == {4} or (seq and ndims == {3}):
            self.frames = frames
        self.sample_frames = frames
        self.ptrs = np.asarray(ptrs, np.uint64)
        self.rows = np.asarray(rows, np.int64)
        self.hw = np.asarray(hw, np.int64).reshape(-1, 2)

    def per_image(self, values: list) -> list:
        """Per-sample values repeated for each frame of the sample."""
        return [v for v, f in zip(values, self.sample_frames) for _ in range(f)]


def sample_table(
    ptrs: np.ndarray,
    rows: np.ndarray,
    hw: np.ndarray,
    out_hw: np.ndarray,
    out_offsets: np.ndarray,
    windows: np.ndarray,
    anchors: np.ndarray,
    k_offsets: Any = 0,
    fill: Any = 0.0,
) -> np.ndarray:
    """The per-image SAMPLE_DTYPE table; ``windows``/``anchors`` are (n, 2) as (y, x)."""
    n = len(hw)
    table = np.zeros(n, SAMPLE_DTYPE)
    table["in_ptr"], table["in_row"], table["out_off"] = ptrs, rows, out_offsets
    table["k_off"] = k_offsets
    table["h"], table["w"] = hw[:, 0], hw[:, 1]
    table["out_h"], table["out_w"] = out_hw[:, 0], out_hw[:, 1]
    table["kh"], table["kw"] = windows[:, 0], windows[:, 1]
    table["ay"], table["ax"] = anchors[:, 0], anchors[:, 1]
    table["fill"] = fill
    return table


def host_samples(batch: Any) -> list[np.ndarray]:
    """A small input's samples (filters, fill values) in host memory.

    The batch is a TensorList (CPU or GPU) or a plain list of samples: a CPU node's
    output (host arrays) or a GPU source's (CuPy arrays).
    """
    if isinstance(batch, (list, tuple)):
        return [np.asarray(s.get()) if hasattr(s, "get") else np.asarray(s) for s in batch]
    host = batch.as_cpu() if hasattr(batch, "as_cpu") else batch
    return [np.asarray(host.at(i)) for i in range(len(host))]


def batch_layout(batch: Any) -> str:
    """The layout a batch carries ("" for a plain list of samples)."""
    return (batch.layout() if callable(getattr(batch, "layout", None)) else "") or ""
