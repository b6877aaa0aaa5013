"""GPU backends of fn.warp_affine and fn.rotate: per-sample matrices, one warp launch.

The plans (``warp_plan``, ``rotate_plan``, ``affines``) are plain NumPy: they turn a
batch's arguments into the warp kernel's per-sample table with the CPU backends'
arithmetic (warp_kernels), testable without a GPU. The launch is
chute.gpu.geometry_kernels.warp_affine_batch. Masked-out samples ride along in the
same launch as identity warps, so they come back unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from chute.gpu.batches import gpu_batch, sample_shapes
from chute.gpu.geometry_kernels import BORDER_CODES, INTERP_CODES, describe_batch, warp_affine_batch
from chute.ops.geometry._border import fill_tuple
from chute.ops.geometry._op_common import per_distinct
from chute.ops.geometry.resize_kernels import interp_name
from chute.ops.geometry.warp_kernels import as_affine, resolve_border
from chute.ops.geometry.warp_ops import output_size

__all__ = ["affines", "rotate", "rotate_plan", "warp_affine", "warp_plan"]


def _mask(args: Any, n: int) -> np.ndarray:
    if "mask" not in args.node.schema.arg_index:
        return np.ones(n, bool)
    return np.asarray([bool(m) for m in args.column("mask")], bool).reshape(n)


def _host_samples(value: Any) -> list:
    """The samples of a (CPU or GPU) batch input as host arrays (small ones: matrices)."""
    if hasattr(value, "as_cpu"):
        value = value.as_cpu()
    if hasattr(value, "at"):
        return [np.asarray(value.at(i)) for i in range(len(value))]
    return [np.asarray(v) for v in value]


def _sizes(args: Any, n: int) -> list:
    if args.is_per_sample("size"):
        return [output_size(v) for v in args.column("size")]
    return [output_size(args["size"])] * n


def _run_warp(batch: Any, matrices: np.ndarray, sizes: list, inverse: bool, args: Any, ctx: Any):
    images = describe_batch(batch)
    n = len(images.shapes)
    plan = warp_plan(
        images.shapes[:, :2],
        matrices,
        sizes,
        inverse,
        args.column("interp_type"),
        args.column("fill_value"),
        args["border"],
        _mask(args, n),
        images.channels,
        images.dtype,
    )
    out = warp_affine_batch(
        images,
        plan["matrices"],
        plan["out_hw"],
        plan["interp"],
        plan["border"],
        plan["fill"],
        ctx.stream,
    )
    return gpu_batch(out, batch.layout() or "HWC", ctx)


def warp_affine(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.warp_affine on the GPU: per-sample matrices and sizes, one launch."""
    batch = inputs[0]
    n = len(batch)
    if len(inputs) > 1:
        matrices = _host_samples(inputs[1])
    elif args.is_per_sample("matrix"):
        matrices = [np.asarray(v) for v in args.columns["matrix"]]
    else:
        if args["matrix"] is None:
            raise ValueError("give the 2x3 'matrix' as an argument or as the second input")
        one = affines([args["matrix"]])
        return _run_warp(
            batch, np.repeat(one, n, 0), _sizes(args, n), args["inverse_map"], args, ctx
        )
    return _run_warp(batch, affines(matrices), _sizes(args, n), args["inverse_map"], args, ctx)


def rotate(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.rotate on the GPU: the CPU backend's canvas sizes and matrices, one warp launch."""
    batch = inputs[0]
    n = len(batch)
    in_hw = sample_shapes(batch)[:, :2]
    out_hw, matrices = rotate_plan(
        in_hw, args.column("angle"), bool(args["keep_size"]), _sizes(args, n)
    )
    sizes = [tuple(s) for s in out_hw.tolist()]
    return _run_warp(batch, matrices, sizes, True, args, ctx)


def affines(matrices: Sequence[Any]) -> np.ndarray:
    """(n, 2, 3) float64 from 2x3, 3x3 or flat 6-element matrices (warp_kernels.as_affine)."""
    return np.stack([as_affine(m) for m in matrices]) if len(matrices) else np.zeros((0, 2, 3))


def _invert(m: np.ndarray) -> np.ndarray:
    full = np.concatenate([m, np.broadcast_to([[[0.0, 0.0, 1.0]]], (len(m), 1, 3))], axis=1)
    return np.linalg.inv(full)[:, :2]


def _to_opencv(m: np.ndarray) -> np.ndarray:
    # pixel centres at +0.5 (DALI) -> at integers (OpenCV): M_cv(p) = M(p + 0.5) - 0.5
    out = m.copy()
    out[:, :, 2] += out[:, :, :2].sum(axis=2) * 0.5 - 0.5
    return out


def _interp_code(name: Any) -> int:
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
    codes = np.array(per_distinct(interp, _interp_code), np.int32).reshape(n)
    borders = np.array(
        per_distinct(fill, lambda f: BORDER_CODES[resolve_border(border, f)]), np.int32
    ).reshape(n)
    fills = np.zeros((n, 4), np.float64)
    fills[:, :channels] = np.asarray(
        per_distinct(fill, lambda f: fill_tuple(f, channels)), np.float64
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
