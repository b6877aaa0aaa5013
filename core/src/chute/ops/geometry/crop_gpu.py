"""GPU backends of fn.crop, fn.pad, fn.paste and fn.flip.

crop and pad: the plans (``crop_plan``, ``pad_plan``, ``window_fill``) are plain
NumPy with the CPU backends' rules (crop_kernels), vectorized over the batch and
testable without a GPU; one window launch (chute.gpu.geometry_kernels.window_batch)
copies every sample's window, inventing the pixels outside it by border or fill.
paste is the same launch: the canvas is a window that starts before the image.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from chute.gpu.batches import gpu_batch, sample_shapes
from chute.gpu.geometry_kernels import BORDER_CODES, describe_batch, window_batch
from chute.ops.geometry._border import fill_tuple
from chute.ops.geometry._op_common import default_layout, per_distinct
from chute.ops.geometry.crop_kernels import axes_from
from chute.ops.geometry.window_any_gpu import (
    AnyImages,
    describe_any,
    kernel_reads,
    window_any,
)

__all__ = [
    "crop",
    "crop_plan",
    "flip",
    "pad",
    "pad_plan",
    "paste",
    "paste_plan",
    "round_half_away",
    "window_fill",
]


def crop(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.crop on the GPU: the CPU backend's windows, borders and fill, one launch."""
    (batch,) = inputs
    images = _describe(batch, args["dtype"])
    anchors, out_hw = crop_plan(
        images.shapes[:, :2],
        args.column("crop"),
        args.column("crop_h"),
        args.column("crop_w"),
        args.column("rel_crop"),
        args.column("crop_pos_x"),
        args.column("crop_pos_y"),
        args["rounding"],
        args["out_of_bounds_policy"],
    )
    fill = window_fill(args.column("fill_values"), images.channels, images.squeeze, images.dtype)
    out = _window(
        images, anchors, out_hw, args["border"], fill, args["dtype"] or images.dtype, ctx.stream
    )
    return gpu_batch(out, batch.layout() or "HWC", ctx)


def pad(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.pad on the GPU: the end of H and W padded with a border or fill, one launch."""
    (batch,) = inputs
    n = len(batch)
    if n == 0:
        return batch
    ndim = len(batch.shape()[0])
    layout = default_layout(ndim, ctx.state)
    if ndim not in (2, 3) or (layout and not layout.startswith("HW")):
        raise ValueError(f"on the GPU fn.pad takes HWC or HW images, got layout {layout!r}")
    chosen = axes_from(ndim, args["axes"], args["axis_names"], layout, range(ndim))
    shapes = sample_shapes(batch)[:, :ndim]
    padded = pad_plan(shapes, chosen, args.column("shape"), args.column("align"))
    if ndim == 3 and np.any(padded[:, 2] != shapes[:, 2]):
        raise ValueError("on the GPU fn.pad pads height and width, not channels")
    images = _describe(batch)
    fill = np.zeros((n, 4))
    fill[:, : images.channels] = fill_tuple(args["fill_value"], images.channels)
    if images.dtype.kind in "iu":  # saturated into the type, as the CPU backend does
        info = np.iinfo(images.dtype)
        fill = np.clip(np.rint(fill), info.min, info.max)
    out = _window(
        images,
        np.zeros((n, 2), np.int64),
        padded[:, :2],
        args["border"],
        fill,
        images.dtype,
        ctx.stream,
    )
    return gpu_batch(out, batch.layout(), ctx)


def paste(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.paste on the GPU: each canvas is a window from (-y0, -x0) filled outside the image."""
    (batch,) = inputs
    n = len(batch)
    if n == 0:
        return batch
    images = _describe(batch)
    mask = np.ones(n, bool)
    if "mask" in op.schema.arg_index:
        mask = np.asarray([bool(m) for m in args.column("mask")], bool).reshape(n)
    anchors, out_hw = paste_plan(
        images.shapes[:, :2],
        args.column("ratio"),
        args.column("paste_x"),
        args.column("paste_y"),
        args.column("min_canvas_size"),
        mask,
    )
    fill = window_fill(args.column("fill_value"), images.channels, images.squeeze, images.dtype)
    out = _window(images, anchors, out_hw, "constant", fill, images.dtype, ctx.stream)
    return gpu_batch(out, batch.layout() or "HWC", ctx)


def _describe(batch: Any, out_dtype: Any = None) -> Any:
    """The batch as the window kernel reads it, or as CuPy samples for other types."""
    if len(batch) and not kernel_reads(batch.dtype, out_dtype):
        return describe_any(batch)
    return describe_batch(batch)


def _window(
    images: Any,
    anchors: np.ndarray,
    out_hw: np.ndarray,
    border: str,
    fill: np.ndarray,
    out_dtype: Any,
    stream: Any,
) -> Any:
    """One window launch for the kernel's types; a CuPy gather per sample for the others."""
    if isinstance(images, AnyImages):
        return window_any(images, anchors, out_hw, border, fill, out_dtype, stream)
    return window_batch(images, anchors, out_hw, BORDER_CODES[border], fill, out_dtype, stream)


def paste_plan(
    hw: np.ndarray,
    ratio: Sequence[float],
    paste_x: Sequence[float],
    paste_y: Sequence[float],
    min_canvas_size: Sequence[float],
    mask: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(n, 2) window anchors (y, x) and canvas sizes, with crop_kernels.paste's rules."""
    hw = np.asarray(hw, np.int64).reshape(-1, 2)
    n = len(hw)
    anchors = np.zeros((n, 2), np.int64)
    out_hw = hw.copy()
    for i in range(n):  # a few scalars per sample: the plan, not the pixels
        if not mask[i]:
            continue
        r, px, py = float(ratio[i]), float(paste_x[i]), float(paste_y[i])
        if r < 1.0:
            raise ValueError(f"ratio must be >= 1, got {r}")
        if not (0.0 <= px <= 1.0 and 0.0 <= py <= 1.0):
            raise ValueError(f"paste_x/paste_y must lie in [0, 1], got {px}, {py}")
        h, w = int(hw[i, 0]), int(hw[i, 1])
        out_h = max(int(r * h), int(min_canvas_size[i]))
        out_w = max(int(r * w), int(min_canvas_size[i]))
        anchors[i] = (-int(py * (out_h - h)), -int(px * (out_w - w)))
        out_hw[i] = (out_h, out_w)
    return anchors, out_hw


def flip(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.flip on the GPU (CuPy views copied per sample; one launch per sample)."""
    cp = __import__("cupy")
    (batch,) = inputs
    out = []
    with cp.cuda.Device(ctx.device_id), ctx.stream:
        for i, x in enumerate(batch.samples()):
            a = args.sample(i)
            if a.given("mask") and not a["mask"]:
                out.append(x)
                continue
            y = x[:, ::-1] if a["horizontal"] else x
            y = y[::-1] if a["vertical"] else y
            out.append(cp.ascontiguousarray(y))
    return gpu_batch(out, batch.layout(), ctx)


def round_half_away(values: Any) -> np.ndarray:
    """Round to integers, halves away from zero (crop_kernels.round_half_away, vectorized)."""
    v = np.asarray(values, np.float64)
    return np.copysign(np.floor(np.abs(v) + 0.5), v).astype(np.int64)


def _optional(values: Sequence[Any], width: int) -> np.ndarray:
    """(n, width) float64 from per-sample scalars / tuples, NaN where a value is None."""

    def row(v: Any) -> np.ndarray:
        if v is None:
            return np.full(width, np.nan)
        return np.broadcast_to(np.asarray(v, np.float64).ravel(), (width,))

    rows = per_distinct(values, row)
    return np.stack(rows) if rows else np.zeros((0, width))


def crop_plan(
    in_hw: np.ndarray,
    crop: Sequence[Any],
    crop_h: Sequence[Any],
    crop_w: Sequence[Any],
    rel_crop: Sequence[Any],
    pos_x: Sequence[float],
    pos_y: Sequence[float],
    rounding: str,
    policy: str,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample crop anchors (y, x) and sizes (h, w): crop_kernels.crop_window and the
    out_of_bounds_policy, vectorized over the batch."""
    in_hw = np.asarray(in_hw, np.int64).reshape(-1, 2)
    in_h, in_w = in_hw[:, 0], in_hw[:, 1]
    rel = _optional(rel_crop, 2)
    sizes = _optional(crop, 2)
    ch, cw = _optional(crop_h, 1)[:, 0], _optional(crop_w, 1)[:, 0]
    ch = np.where(np.isnan(ch), sizes[:, 0], ch)
    cw = np.where(np.isnan(cw), sizes[:, 1], cw)
    use_rel = ~np.isnan(rel[:, 0])
    whole_h = np.isnan(ch) | (ch == 0)
    whole_w = np.isnan(cw) | (cw == 0)
    h = np.where(whole_h, in_h, round_half_away(np.nan_to_num(ch)))
    w = np.where(whole_w, in_w, round_half_away(np.nan_to_num(cw)))
    h = np.where(use_rel, round_half_away(np.nan_to_num(rel[:, 0]) * in_h), h)
    w = np.where(use_rel, round_half_away(np.nan_to_num(rel[:, 1]) * in_w), w)
    bad = (h <= 0) | (w <= 0)
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(f"sample {i}: crop size must be positive, got {h[i]}x{w[i]} (HxW)")
    px, py = np.asarray(pos_x, np.float64), np.asarray(pos_y, np.float64)
    bad = ~((px >= 0) & (px <= 1) & (py >= 0) & (py <= 1))
    if bad.any():
        i = int(np.argmax(bad))
        raise ValueError(
            f"sample {i}: crop_pos_x/crop_pos_y must lie in [0, 1], got {px[i]}, {py[i]}"
        )
    # DALI holds the positions as float32 (0.7 is 0.69999999), as crop_kernels.crop_window
    px, py = px.astype(np.float32).astype(np.float64), py.astype(np.float32).astype(np.float64)
    if rounding == "round":
        y0, x0 = round_half_away(py * (in_h - h)), round_half_away(px * (in_w - w))
    elif rounding == "truncate":
        y0, x0 = (
            np.trunc(py * (in_h - h)).astype(np.int64),
            np.trunc(px * (in_w - w)).astype(np.int64),
        )
    else:
        raise ValueError(f"rounding must be 'round' or 'truncate', got {rounding!r}")
    outside = (y0 < 0) | (x0 < 0) | (y0 + h > in_h) | (x0 + w > in_w)
    if policy == "error" and outside.any():
        i = int(np.argmax(outside))
        raise ValueError(
            f"sample {i}: window (y={y0[i]}, x={x0[i]}, h={h[i]}, w={w[i]}) is outside the "
            f"{in_h[i]}x{in_w[i]} input; use out_of_bounds_policy='pad' or 'trim_to_shape'"
        )
    if policy == "trim_to_shape":
        y1, x1 = y0 + h, x0 + w
        y0, x0 = np.clip(y0, 0, in_h), np.clip(x0, 0, in_w)
        h = np.minimum(np.maximum(y1, y0), in_h) - y0
        w = np.minimum(np.maximum(x1, x0), in_w) - x0
    elif policy not in ("pad", "error"):
        raise ValueError(f"out_of_bounds_policy must be error, pad or trim_to_shape: {policy!r}")
    return np.stack([y0, x0], 1), np.stack([h, w], 1)


def window_fill(fills: Sequence[Any], channels: int, squeeze: bool, dtype: Any) -> np.ndarray:
    """(n, 4) fill values as crop_kernels.extract_window writes them (cast to the input type)."""
    out = np.zeros((len(fills), 4), np.float64)
    for i, f in enumerate(fills):
        values = np.asarray(f, np.float64).ravel()
        if values.size == 1 or squeeze:
            values = np.full(channels, values[0])
        else:
            values = np.asarray(fill_tuple(values, channels))
        out[i, :channels] = values.astype(dtype)
    return out


def pad_plan(
    shapes: np.ndarray,
    axes: Sequence[int],
    wanted: Sequence[Any],
    aligns: Sequence[Any],
) -> np.ndarray:
    """(n, ndim) padded extents of fn.pad: each chosen axis up to the batch's largest extent
    (or ``wanted``, -1 = the largest) and up to a multiple of its alignment."""
    shapes = np.asarray(shapes, np.int64)
    n = len(shapes)
    axes = list(axes)
    k = len(axes)
    largest = shapes[:, axes].max(axis=0) if n else np.zeros(k, np.int64)
    target = np.tile(largest, (n, 1))
    for i, w in enumerate(wanted):
        if w is not None:
            w = np.asarray(w, np.int64).ravel()
            if w.size != k:
                raise ValueError(f"shape needs {k} values (one per padded axis)")
            target[i] = np.where(w < 0, largest, w)
    step = np.ones((n, k), np.int64)
    for i, a in enumerate(aligns):
        if a is not None:
            step[i] = np.maximum(np.broadcast_to(np.asarray(a, np.int64).ravel(), (k,)), 1)
    extent = np.maximum(shapes[:, axes], target)
    out = shapes.copy()
    out[:, axes] = -(-extent // step) * step
    return out
