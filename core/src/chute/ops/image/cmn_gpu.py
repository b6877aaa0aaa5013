"""GPU backend of fn.crop_mirror_normalize: crop + mirror + normalize + layout + cast, one launch.

The crop windows, mirror flags and folded mean / std are computed on the host for the
whole batch; chute.gpu.kernels launches one kernel for it. After a fused resize
(chute.ops.geometry.gpu_fusion) the crops are resampled straight from the resize's input.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.gpu.batches import dense_array, gpu_batch, raw_samples, sample_shapes
from chute.gpu.kernels import crop_mirror_normalize_batch, resize_crop_mirror_normalize
from chute.types import to_dtype

__all__ = ["crop_mirror_normalize"]


def _value(args: Any, name: str, i: int) -> Any:
    return args.sample(i)[name] if args.is_per_sample(name) else args[name]


def _mean_std(args: Any, n: int, channels: int) -> tuple[np.ndarray, np.ndarray]:
    """crop_mirror_normalize's mean and std folded with scale and shift: (C,) or (N, C)."""
    per_sample = any(args.is_per_sample(k) for k in ("mean", "std", "scale", "shift"))
    mean, std = [], []
    for i in range(n) if per_sample else range(1):
        m = np.asarray(_value(args, "mean", i), np.float32)
        s = np.asarray(_value(args, "std", i), np.float32) / _value(args, "scale", i)
        # (x - m) / s * scale + shift == (x - m') / s' with s' = s / scale, m' = m - shift * s'
        mean.append(np.broadcast_to(m - _value(args, "shift", i) * s, (channels,)))
        std.append(np.broadcast_to(s, (channels,)))
    return (np.stack(mean), np.stack(std)) if per_sample else (mean[0], std[0])


def crop_mirror_normalize(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.crop_mirror_normalize on the GPU: crop + mirror + normalize + layout + cast, one launch."""
    from chute.ops.geometry.gpu_fusion import PendingResize

    (batch,) = inputs
    if isinstance(batch, PendingResize):  # a fused resize: resample the crops from its input
        fused = _resize_crop(batch, args, ctx)
        if fused is not None:
            return fused
        batch = batch.materialize()  # a crop leaves some image: the unfused way
    dense = dense_array(batch)
    samples = dense if dense is not None else raw_samples(batch)
    shapes = sample_shapes(batch)
    n = len(shapes)
    channels = int(shapes[0, 2]) if n else 3
    per_sample = any(args.is_per_sample(k) for k in ("crop", "crop_h", "crop_w"))
    crops = set()
    for i in range(n) if per_sample else range(min(n, 1)):
        h, w = (int(v) for v in shapes[i, :2])
        crop = _value(args, "crop", i)
        ch = crop[0] if crop else (_value(args, "crop_h", i) or h)
        cw = crop[1] if crop else (_value(args, "crop_w", i) or w)
        crops.add((round(ch), round(cw)))
    if len(crops) > 1:
        raise ValueError(
            f"on the GPU every sample needs the same crop size, got {sorted(crops)[:4]}"
        )
    crop_hw = crops.pop() if crops else (0, 0)
    if args["out_of_bounds_policy"] == "error":
        outside = (shapes[:, 0] < crop_hw[0]) | (shapes[:, 1] < crop_hw[1])
        if outside.any():
            i = int(np.argmax(outside))
            raise ValueError(
                f"sample {i}: crop window {crop_hw} leaves the {shapes[i, 0]}x{shapes[i, 1]} "
                "image; set out_of_bounds_policy='pad'"
            )
    pos = np.stack(
        [
            np.asarray(args.column("crop_pos_y"), np.float64),
            np.asarray(args.column("crop_pos_x"), np.float64),
        ],
        axis=1,
    )
    fill = np.asarray(_value(args, "fill_values", 0), np.float32)
    mean, std = _mean_std(args, n, channels)
    out = crop_mirror_normalize_batch(
        samples,
        crop_hw,
        crop_pos=pos,
        mirror=np.asarray(args.column("mirror"), bool),
        mean=mean,
        std=std,
        dtype=to_dtype(args["dtype"]),
        layout=args["output_layout"],
        fill=float(fill[0]) if fill.size == 1 else fill,
        out_channels=4 if args["pad_output"] else None,
        stream=ctx.stream,
    )
    return gpu_batch(out, args["output_layout"], ctx)


def _resize_crop(batch: Any, args: Any, ctx: Any) -> Any:
    """A resize and this crop in one resampling launch; None where a crop leaves its image."""
    from chute.ops.geometry.gpu_fusion import crop_size

    windows, fits = batch.crop_windows(ctx.node)
    if not fits:
        return None
    source = batch.source
    dense = dense_array(source)
    shapes = sample_shapes(source)
    mean, std = _mean_std(args, len(shapes), int(shapes[0, 2]) if len(shapes) else 3)
    out = resize_crop_mirror_normalize(
        dense if dense is not None else raw_samples(source),
        windows,
        crop_size(ctx.node),
        mirror=np.asarray(args.column("mirror"), bool),
        mean=mean,
        std=std,
        dtype=to_dtype(args["dtype"]),
        layout=args["output_layout"],
        stream=ctx.stream,
        **batch.filters,
    )
    return gpu_batch(out, args["output_layout"], ctx)
