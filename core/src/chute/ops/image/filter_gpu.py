"""GPU backend of fn.gaussian_blur: per-sample kernels, rows then columns (two launches).

``blur_plan`` is plain NumPy: each sample's (sigma, window) per axis by the CPU
backend's rules (filter_kernels), testable without a GPU. The launches are
chute.gpu.geometry_kernels.gaussian_blur_batch; masked-out samples get a one-tap
kernel in the same launch, so they come back unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from chute.gpu.batches import gpu_batch
from chute.gpu.geometry_kernels import describe_batch, gaussian_blur_batch
from chute.ops.image.filter_kernels import gaussian_window, sigma_pair

__all__ = ["blur_plan", "gaussian_blur"]


def _mask(args: Any, n: int) -> np.ndarray:
    if "mask" not in args.node.schema.arg_index:
        return np.ones(n, bool)
    return np.asarray([bool(m) for m in args.column("mask")], bool).reshape(n)


def gaussian_blur(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.gaussian_blur on the GPU: per-sample kernels, rows then columns (two launches)."""
    (batch,) = inputs
    n = len(batch)
    frames = None
    source: Any = batch
    if n and len(batch.shape()[0]) == 4:
        # FHWC sequences: every frame is a row of the table, blurred alike
        frames = [int(s[0]) for s in batch.shape()]
        data = getattr(batch, "_dense", None)
        if data is not None and data.ndim == 5:
            source = data.reshape(-1, *data.shape[2:])
        else:
            source = [x[f] for x in batch.samples() for f in range(x.shape[0])]
    images = describe_batch(source)
    sig, win = blur_plan(args.column("sigma"), args.column("window_size"), _mask(args, n))
    in_dtype = images.dtype
    out_dtype = np.dtype(args["dtype"] or in_dtype)
    # the CPU backend pads in its working type: float when a float output comes from ints
    work = np.float32 if (out_dtype.kind == "f" and in_dtype.kind != "f") else in_dtype
    fill = np.array([float(v) for v in args.column("fill_value")], np.float64).astype(work)
    if frames is not None:
        sig, win = np.repeat(sig, frames, axis=0), np.repeat(win, frames, axis=0)
        fill = np.repeat(fill, frames)
    border = args["border"]
    out = gaussian_blur_batch(images, sig, win, border, fill, out_dtype, ctx.stream, frames)
    return gpu_batch(out, batch.layout() or "HWC", ctx)


def blur_plan(
    sigmas: Sequence[Any], windows: Sequence[Any], mask: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample (sigma, window) of each axis, (n, 2) as (y, x), by gaussian_blur's rules;
    masked-out samples get window 1 (a copy)."""
    n = len(sigmas)
    sig = np.zeros((n, 2), np.float64)
    win = np.ones((n, 2), np.int64)
    cache: dict = {}
    for i, (s, w) in enumerate(zip(sigmas, windows)):
        if not mask[i]:
            continue
        key = (tuple(np.ravel(s).tolist()), tuple(np.ravel(w).tolist()))
        if key not in cache:
            sh, sw = sigma_pair(s, "sigma")
            wh, ww = (int(v) for v in sigma_pair(w, "window_size"))
            if sh == 0 and wh == 0 and sw == 0 and ww == 0:
                raise ValueError("gaussian_blur needs a sigma or a window_size")
            sh, wh = gaussian_window(sh, wh) if (sh or wh) else (0.0, 1)
            sw, ww = gaussian_window(sw, ww) if (sw or ww) else (0.0, 1)
            cache[key] = (sh, sw), (wh, ww)
        sig[i], win[i] = cache[key]
    return sig, win
