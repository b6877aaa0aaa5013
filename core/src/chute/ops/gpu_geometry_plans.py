"""Per-sample parameters of the geometry operators' GPU backends, from their CPU rules.

Plain NumPy (no CuPy): each ``*_plan`` turns a batch's argument values into the
arrays the GPU kernels' tables hold (chute.ops.gpu_geometry launches them), with the
CPU backends' arithmetic, vectorized over the batch where the rules allow.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from chute.ops.geometry._border import fill_tuple
from chute.ops.geometry.resize_kernels import interp_name

__all__ = [
    "blur_plan",
    "crop_mirror_windows",
    "crop_plan",
    "pad_plan",
    "rotate_plan",
    "round_half_away",
    "warp_plan",
    "window_fill",
]


def round_half_away(values: Any) -> np.ndarray:
    """Round to integers, halves away from zero (crop_kernels.round_half_away, vectorized)."""
    v = np.asarray(values, np.float64)
    return np.copysign(np.floor(np.abs(v) + 0.5), v).astype(np.int64)


def affines(matrices: Sequence[Any]) -> np.ndarray:
    """(n, 2, 3) float64 from 2x3, 3x3 or flat 6-element matrices (warp_kernels.as_affine)."""
    from chute.ops.geometry.warp_kernels import as_affine

    return np.stack([as_affine(m) for m in matrices]) if len(matrices) else np.zeros((0, 2, 3))


def _invert(m: np.ndarray) -> np.ndarray:
    full = np.concatenate([m, np.broadcast_to([[[0.0, 0.0, 1.0]]], (len(m), 1, 3))], axis=1)
    return np.linalg.inv(full)[:, :2]


def _to_opencv(m: np.ndarray) -> np.ndarray:
    # pixel centres at +0.5 (DALI) -> at integers (OpenCV): M_cv(p) = M(p + 0.5) - 0.5
    out = m.copy()
    out[:, :, 2] += out[:, :, :2].sum(axis=2) * 0.5 - 0.5
    return out


def _each(values: Sequence[Any], func: Any) -> list:
    """``[func(v) for v in values]``, calling ``func`` once per distinct (hashable) value."""
    done: dict = {}
    out = []
    for v in values:
        key = (type(v), v) if not isinstance(v, np.ndarray) else (v.dtype.str, v.shape, v.tobytes())
        if key not in done:
            done[key] = func(v)
        out.append(done[key])
    return out


def _interp_code(name: Any) -> int:
    from chute.gpu.geometry_kernels import INTERP_CODES

    kind = interp_name(name)
    if kind not in INTERP_CODES:
        raise ValueError(f"interp_type {kind!r} is not supported on the GPU (nn, linear, cubic)")
    return INTERP_CODES[kind]


def warp_plan(
    in_hw: np.ndarray,
    matrices: np.ndarray,
    sizes: Sequence[Any],
    inverse_map: bool,
    interp: Sequence[Any],
    fill: Sequence[Any],
    border: str | None,
    mask: np.ndarray,
    channels: int,
    dtype: Any,
) -> dict[str, np.ndarray]:
    """Per-sample warp parameters: OpenCV-convention matrices, sizes, codes and fill values.

    ``matrices`` (n, 2, 3) follow DALI's convention (output->input unless
    ``inverse_map`` is false); ``sizes`` hold (h, w) or None (the input's); ``interp``
    and ``fill`` hold each sample's interp_type and fill_value. Samples whose ``mask``
    is false get the identity (nearest neighbour at the input size).
    """
    from chute.gpu.geometry_kernels import BORDER_CODES
    from chute.ops.geometry.warp_kernels import resolve_border

    n = len(in_hw)
    m = np.asarray(matrices, np.float64).reshape(n, 2, 3)
    if not inverse_map:
        m = _invert(m)
    m = _to_opencv(m)
    out_hw = np.array([in_hw[i] if s is None else s for i, s in enumerate(sizes)], np.int64)
    out_hw = out_hw.reshape(n, 2)
    if np.any(out_hw <= 0):
        i = int(np.argmax(np.any(out_hw <= 0, axis=1)))
        raise ValueError(f"sample {i}: output size must be positive, got {tuple(out_hw[i])}")
    # per distinct value, not per sample: constant arguments repeat one value n times
    codes = np.array(_each(interp, _interp_code), np.int32).reshape(n)
    borders = np.array(
        _each(fill, lambda f: BORDER_CODES[resolve_border(border, f)]), np.int32
    ).reshape(n)
    fills = np.zeros((n, 4), np.float64)
    fills[:, :channels] = np.asarray(
        _each(fill, lambda f: fill_tuple(f, channels)), np.float64
    ).reshape(n, channels)
    if np.dtype(dtype) == np.uint8:
        fills = np.clip(np.rint(fills), 0, 255)  # OpenCV converts the border value to uint8
    off = ~np.asarray(mask, bool)
    m[off] = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]
    out_hw[off] = in_hw[off]
    codes[off] = 0
    borders[off] = BORDER_CODES["replicate"]
    return {"matrices": m, "out_hw": out_hw, "interp": codes, "border": borders, "fill": fills}


def rotate_plan(
    in_hw: np.ndarray, angles: Sequence[float], keep_size: bool, sizes: Sequence[Any]
) -> tuple[np.ndarray, np.ndarray]:
    """Output sizes (n, 2) and DALI-convention matrices (n, 2, 3) of fn.rotate, as its CPU
    backend computes them (warp_kernels.rotated_canvas_size and rotation_matrix)."""
    n = len(in_hw)
    h = in_hw[:, 0].astype(np.float64)
    w = in_hw[:, 1].astype(np.float64)
    # the scalar math functions, so the sizes and matrices are the CPU backend's bit for bit
    radians = [math.radians(float(a)) for a in angles]
    cos = np.array([math.cos(r) for r in radians], np.float64)
    sin = np.array([math.sin(r) for r in radians], np.float64)
    c, s = np.abs(cos), np.abs(sin)
    eps = 1e-2
    out_w = np.ceil(c * w + s * h - eps).astype(np.int64)
    out_h = np.ceil(c * h + s * w - eps).astype(np.int64)
    hi, wi = in_hw[:, 0].astype(np.int64), in_hw[:, 1].astype(np.int64)
    parity_w = np.where(s <= c, wi % 2, hi % 2)
    parity_h = np.where(s <= c, hi % 2, wi % 2)
    out_w += (out_w % 2) ^ parity_w
    out_h += (out_h % 2) ^ parity_h
    out_hw = np.stack([out_h, out_w], 1)
    if keep_size:
        out_hw = in_hw.astype(np.int64).copy()
    for i, size in enumerate(sizes):
        if size is not None:
            out_hw[i] = size
    ocx, ocy = out_hw[:, 1] * 0.5, out_hw[:, 0] * 0.5
    icx, icy = w * 0.5, h * 0.5
    m = np.zeros((n, 2, 3), np.float64)
    m[:, 0, 0], m[:, 0, 1] = cos, -sin
    m[:, 1, 0], m[:, 1, 1] = sin, cos
    m[:, 0, 2] = icx - (cos * ocx + -sin * ocy)
    m[:, 1, 2] = icy - (sin * ocx + cos * ocy)
    return out_hw, m


def _optional(values: Sequence[Any], width: int) -> np.ndarray:
    """(n, width) float64 from per-sample scalars / tuples, NaN where a value is None."""

    def row(v: Any) -> np.ndarray:
        if v is None:
            return np.full(width, np.nan)
        return np.broadcast_to(np.asarray(v, np.float64).ravel(), (width,))

    rows = _each(values, row)
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


def crop_mirror_windows(
    in_hw: np.ndarray, sample_args: Sequence[Any]
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list]:
    """Per-sample resampling windows (y, x, h, w), output sizes, mirror flags and filters
    of fn.resize_crop_mirror, from the CPU backend's resize plan and crop window."""
    from chute.ops.geometry.crop_kernels import crop_window
    from chute.ops.geometry.resize_kernels import axis_filters, resize_plan
    from chute.ops.geometry.resize_ops import size_kwargs

    n = len(in_hw)
    windows = np.zeros((n, 4), np.float64)
    out_hw = np.zeros((n, 2), np.int64)
    mirror = np.zeros(n, bool)
    filters = []
    for i, a in enumerate(sample_args):
        h, w = (int(v) for v in in_hw[i])
        plan = resize_plan(h, w, **size_kwargs(a))
        y0, x0, ch, cw = crop_window(
            plan.out_h,
            plan.out_w,
            a["crop"],
            a["crop_h"],
            a["crop_w"],
            None,
            a["crop_pos_x"],
            a["crop_pos_y"],
        )
        (ry0, ry1), (rx0, rx1) = plan.roi_y, plan.roi_x
        step_y, step_x = (ry1 - ry0) / plan.out_h, (rx1 - rx0) / plan.out_w
        roi_y = (ry0 + y0 * step_y, ry0 + (y0 + ch) * step_y)
        roi_x = (rx0 + x0 * step_x, rx0 + (x0 + cw) * step_x)
        if roi_y[0] > roi_y[1]:
            raise ValueError(
                f"sample {i}: vertical flips (negative sizes) are not supported on the GPU"
            )
        mirror[i] = bool(a["mirror"]) != (roi_x[0] > roi_x[1])
        windows[i] = (roi_y[0], min(roi_x), roi_y[1] - roi_y[0], abs(roi_x[1] - roi_x[0]))
        out_hw[i] = ch, cw
        filters.append(axis_filters(plan, a["interp_type"], a["min_filter"], a["mag_filter"]))
    return windows, out_hw, mirror, filters


def blur_plan(
    sigmas: Sequence[Any], windows: Sequence[Any], mask: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per-sample (sigma, window) of each axis, (n, 2) as (y, x), by gaussian_blur's rules;
    masked-out samples get window 1 (a copy)."""
    from chute.ops.image.filter_kernels import gaussian_window, sigma_pair

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
