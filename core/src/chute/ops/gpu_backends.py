"""GPU backends of the ResNet-50 path: mixed decoding and batched resize / crop / normalize.

Each function is an operator's ``run_gpu``: it gets the whole batch (CPU
sample lists for "mixed" operators, TensorListGPU otherwise), computes the
per-sample parameters on the host (sizes, windows, flags — the same numbers
as the CPU backend, from the same random streams) and launches one kernel
for the batch on the context's stream (chute.gpu.kernels).

Decoded images stay nvImageCodec images inside a DecodedImages batch
(chute.gpu.batches: CuPy views only for a user who asks for a sample), crop
windows and resize sizes are computed for the whole batch in NumPy, and the
kernels read dense batches without a view per sample: at 256 samples a batch,
per-sample Python is what bounds the GPU path.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.gpu.batches import decoded_images, dense_array, gpu_batch, raw_samples, sample_shapes
from chute.gpu.batches import decoders as _decoders
from chute.types import to_dtype

__all__ = ["output_sizes", "random_crop_windows"]


def decode_mixed(inputs: list, args: Any, ctx: Any, windows: Any = None) -> Any:
    """Decode a batch of encoded samples to GPU HWC images.

    ``windows(shapes)`` gives each sample's region ``(y, x, h, w)`` from the headers'
    (h, w) (None: the whole image) and ``{sample: reason}`` for windows that do not fit.
    """
    encoded = inputs[0]
    out_type = str(args["output_type"])
    if to_dtype(args["dtype"] or np.uint8) != np.uint8:
        raise ValueError("device='mixed' decodes to uint8; cast afterwards for other types")
    if out_type not in ("RGB", "BGR", "GRAY"):
        raise ValueError(f"device='mixed' supports output_type RGB, BGR or GRAY, not {out_type}")
    region_resize = getattr(ctx.node, "region_resize", None)
    origins = None
    tuning = getattr(ctx.state, "tuning", None)  # the decoder's setup(): the build's Tuning
    with _decoders.use(ctx.device_id, args["hw_decoder_load"], tuning) as decoder:
        parsed = decoder.parse(list(encoded))
        rois, bad = windows(parsed.shapes) if windows is not None else (None, {})
        if region_resize is not None:  # only what a fused resize + crop reads
            from chute.ops.gpu_fusion import decode_regions

            turned = (parsed.streams.rotated != 0) | parsed.streams.flipped
            rois, origins = decode_regions(region_resize, parsed.shapes, turned)
        # Decode on the lane's own stream (the executor keeps it alive): two lanes
        # decode at once, and the kernels after this follow in stream order.
        result = decoder.decode(
            parsed,
            rois=rois,
            output_type=out_type,
            stream=ctx.stream,
            as_cupy=False,
            on_stream=True,
        )
    failed = {i: err for i, err in enumerate(result.errors) if err is not None}
    failed.update(bad)
    if failed and ctx.on_error == "raise":
        i, err = next(iter(failed.items()))
        path = (ctx.meta[i] or {}).get("source_info") if i < len(ctx.meta) else None
        raise ValueError(f"sample {i}{f' ({path})' if path else ''}: {err}")
    batch = decoded_images(result.images, result.shapes, ctx)
    batch.keepalive = result  # host staging buffers live until the stream has used them
    if origins is not None:  # images decoded as regions: where each lies in its image
        whole = np.array([r is None for r in rois])
        batch.origins = origins
        batch.full_shapes = np.where(whole[:, None], result.shapes[:, :2], parsed.shapes)
    batch.failed = failed  # on_error skip/warn: the executor replaces these samples
    return batch


def random_crop_windows(shapes: Any, args: Any, ctx: Any) -> list:
    """The windows of decoders.image_random_crop: the CPU backend's, from the same streams.

    Drawn for the whole batch at once (chute.runtime.philox: the same words as each
    sample's generator); the few samples that need more draws than that take the
    per-sample path. Shapes come from the code streams' headers (before EXIF
    orientation, which training JPEGs rarely carry).
    """
    from chute.runtime import philox

    area, ratio, attempts = args["random_area"], args["random_aspect_ratio"], args["num_attempts"]
    shapes = np.asarray(shapes, np.int64).reshape(-1, 2)
    n = len(shapes)
    meta = [ctx.meta[i] if i < len(ctx.meta) else None for i in range(n)]
    found: list = [None] * n
    if _vectorized_windows_ok() and n:
        key, ctr = philox.sample_counters(ctx.seed, ctx.node.id, ctx.epoch, ctx.iteration, meta)
        # valid shapes only: a 0 x 0 header makes the per-sample path raise as before
        valid = (shapes[:, 0] > 0) & (shapes[:, 1] > 0)
        words = philox.stream_words(key, ctr, 2)
        drawn = philox.random_crop_windows(shapes, words, tuple(area), tuple(ratio), attempts)
        found = [w if v else None for w, v in zip(drawn, valid.tolist())]
    for i in [i for i, w in enumerate(found) if w is None]:
        found[i] = _window(int(shapes[i, 0]), int(shapes[i, 1]), args, ctx.rng(i))
    return [tuple(w) for w in np.asarray(found, np.float64).reshape(n, 4).tolist()]


def _window(h: int, w: int, args: Any, rng: Any) -> tuple:
    from chute.runtime.crop_window import random_crop_window

    return random_crop_window(
        h,
        w,
        area=args["random_area"],
        aspect_ratio=args["random_aspect_ratio"],
        num_attempts=args["num_attempts"],
        rng=rng,
    )


_windows_check: list[bool] = []


def _vectorized_windows_ok() -> bool:
    """Whether the batch draw agrees with the per-sample one on this machine (checked once).

    The arithmetic is IEEE and ``math.exp`` is the scalar one, so it agrees wherever
    tested; a platform whose floating point differs falls back instead of drifting.
    """
    if not _windows_check:
        from chute.runtime import philox
        from chute.runtime.context import sample_generator
        from chute.runtime.crop_window import random_crop_window

        rng = np.random.default_rng(1)
        shapes = np.stack([rng.integers(64, 1024, 64), rng.integers(64, 1024, 64)], 1)
        meta = [{"sample_key": (i, 3)} for i in range(64)]
        key, ctr = philox.sample_counters(7, 5, 0, 0, meta)
        words = philox.stream_words(key, ctr, 2)
        drawn = philox.random_crop_windows(shapes, words, (0.08, 1.0), (0.75, 4 / 3), 10)
        ok = True
        for i, w in enumerate(drawn):
            ref = random_crop_window(
                int(shapes[i, 0]), int(shapes[i, 1]), rng=sample_generator(7, 5, 0, 0, i, meta[i])
            )
            ok &= w is None or tuple(w) == tuple(ref)
        _windows_check.append(ok)
    return _windows_check[0]


def image_random_crop_mixed(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    return decode_mixed(inputs, args, ctx, lambda s: (random_crop_windows(s, args, ctx), {}))


def image_window_mixed(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """decoders.image_crop / image_slice with device="mixed": each window decoded as an ROI."""

    def windows(shapes: np.ndarray) -> tuple[list, dict]:
        rois: list = [None] * len(shapes)
        bad: dict = {}
        for i, (h, w) in enumerate(shapes.tolist()):
            try:
                window = op.window(tuple(v[i] for v in inputs), args.sample(i))
                y0, x0, y1, x1 = window(h, w)
            except ValueError as e:  # the window leaves the image
                bad[i] = str(e)
                continue
            rois[i] = (y0, x0, y1 - y0, x1 - x0)
        return rois, bad

    return decode_mixed(inputs, args, ctx, windows)


def image_mixed(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    return decode_mixed(inputs, args, ctx)


def _filters(a: Any) -> dict:
    """The resampling arguments of kernels.resize_batch from fn.resize's arguments."""
    name = str(a["interp_type"] if a.given("interp_type") else "linear")
    return {
        "interp": {"nn": "nn", "linear": "linear", "cubic": "cubic"}.get(name, "linear"),
        "antialias": bool(a["antialias"]) if a.given("antialias") else True,
    }


def resize_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.resize on the GPU: DALI's size rules per sample, one resampling launch."""
    from chute.gpu import kernels
    from chute.ops.geometry.resize_kernels import resize_output_size
    from chute.ops.geometry.resize_ops import _size_kwargs

    (batch,) = inputs
    first = args.sample(0)
    if getattr(ctx.node, "fused_crop", None) is not None:  # the crop resamples (gpu_fusion)
        from chute.ops.gpu_fusion import pending_resize

        dtype = first["dtype"] or batch.dtype
        return pending_resize(batch, ctx.node, _filters(first), dtype, ctx)
    dense = dense_array(batch)
    samples = dense if dense is not None else raw_samples(batch)
    shapes = sample_shapes(batch)
    n = len(shapes)
    if not args.columns:
        # constant arguments: one size per distinct input size, no per-sample arguments
        sizes = output_sizes(shapes[:, :2], _size_kwargs(first))
        window = _roi_window(first, 1, 1)
        windows = None
        if window is not None:
            windows = [_roi_window(first, int(h), int(w)) for h, w in shapes[:, :2].tolist()]
    else:
        sizes, windows = np.zeros((n, 2), np.int64), []
        for i, (h, w) in enumerate(shapes[:, :2].tolist()):
            a = args.sample(i)
            sizes[i] = resize_output_size(h, w, **_size_kwargs(a))
            windows.append(_roi_window(a, h, w))
        if all(w is None for w in windows):
            windows = None
    uniform = n > 0 and bool(np.all(sizes == sizes[0]))
    out = kernels.resize_batch(
        samples,
        tuple(int(v) for v in sizes[0]) if uniform else sizes,
        **_filters(first),
        windows=None if windows is None else _fill_windows(windows, shapes),
        dtype=to_dtype(first["dtype"] or batch.dtype),
        stream=ctx.stream,
    )
    return gpu_batch(out, batch.layout() or "HWC", ctx)


def output_sizes(hw: np.ndarray, kwargs: dict) -> np.ndarray:
    """resize_output_size(h, w, **kwargs) for every (h, w) row, for constant arguments.

    Without a ROI, sizes given on both axes ("default"/"stretch" mode) do not depend on
    the input, and resize_shorter / resize_longer scale each image by one factor: both
    are computed for the batch at once with the operations (and float32 roundings)
    of resize_kernels.resize_plan. Anything else goes per distinct input size.
    """
    from chute.ops.geometry.resize_kernels import resize_output_size

    n = len(hw)
    if n == 0:
        return np.zeros((0, 2), np.int64)
    mode = kwargs.get("mode") or "default"
    requested = kwargs.get("size")
    if requested is None and ("resize_x" in kwargs or "resize_y" in kwargs):
        requested = (kwargs.get("resize_y") or 0.0, kwargs.get("resize_x") or 0.0)
    req = np.asarray(requested, np.float64).reshape(-1) if requested is not None else None
    if (
        req is not None
        and req.size == 2
        and mode in ("default", "stretch")
        and np.all(req != 0)
        and np.all(hw > 0)
        and kwargs.get("roi_start") is None
    ):
        size = resize_output_size(int(hw[0, 0]), int(hw[0, 1]), **kwargs)
        return np.tile(np.asarray(size, np.int64), (n, 1))
    shorter, longer = kwargs.get("resize_shorter"), kwargs.get("resize_longer")
    if (
        (shorter is None) != (longer is None)
        and requested is None
        and (shorter or longer)
        and kwargs.get("mode") is None
        and kwargs.get("max_size") is None
        and kwargs.get("roi_start") is None
        and np.all(hw > 0)
    ):
        return _scaled_sizes(hw, float(shorter or longer), shorter is not None)
    unique, inverse = np.unique(hw, axis=0, return_inverse=True)
    sizes = [resize_output_size(int(h), int(w), **kwargs) for h, w in unique.tolist()]
    return np.asarray(sizes, np.int64).reshape(-1, 2)[inverse.reshape(-1)]


def _scaled_sizes(hw: np.ndarray, side: float, shorter: bool) -> np.ndarray:
    """resize_plan's "not_smaller" / "not_larger" sizes for one requested side, vectorized."""
    in_size = hw.astype(np.float64)
    scale = side / in_size
    # DALI compares the scales in float32 and keeps sizes in float32
    scale32 = np.abs(scale).astype(np.float32).astype(np.float64)
    final = scale32.max(axis=1) if shorter else scale32.min(axis=1)
    out = np.where(
        np.abs(scale) != final[:, None], in_size * np.copysign(final[:, None], scale), side
    )
    exact = out.astype(np.float32).astype(np.float64)
    return np.maximum(1, np.floor(np.abs(exact) + 0.5)).astype(np.int64)


def _roi_window(a: Any, h: int, w: int) -> tuple | None:
    start, end = a["roi_start"], a["roi_end"]
    if start is None:
        return None
    if a["roi_relative"]:
        start = (start[0] * h, start[1] * w)
        end = (end[0] * h, end[1] * w)
    return (start[0], start[1], end[0] - start[0], end[1] - start[1])


def _fill_windows(windows: list, shapes: np.ndarray) -> np.ndarray:
    return np.array(
        [w if w is not None else (0, 0, *s[:2]) for w, s in zip(windows, shapes.tolist())],
        np.float32,
    )


def random_resized_crop_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.random_resized_crop on the GPU: the CPU backend's windows, one resampling launch."""
    from chute.gpu import kernels
    from chute.runtime.crop_window import random_crop_window

    (batch,) = inputs
    dense = dense_array(batch)
    samples = dense if dense is not None else raw_samples(batch)
    windows = []
    for i, (h, w) in enumerate(sample_shapes(batch)[:, :2].tolist()):
        a = args.sample(i)
        windows.append(
            random_crop_window(
                h,
                w,
                area=a["random_area"],
                aspect_ratio=a["random_aspect_ratio"],
                num_attempts=a["num_attempts"],
                rng=ctx.rng(i),
            )
        )
    first = args.sample(0)
    size = first["size"]
    size = (size[0], size[0]) if len(size) == 1 else size
    out = kernels.resize_batch(
        samples,
        (int(size[0]), int(size[1])),
        **_filters(first),
        windows=np.asarray(windows, np.float32),
        dtype=to_dtype(first["dtype"] or batch.dtype),
        stream=ctx.stream,
    )
    return gpu_batch(out, batch.layout() or "HWC", ctx)


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


def crop_mirror_normalize_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.crop_mirror_normalize on the GPU: crop + mirror + normalize + layout + cast, one launch."""
    from chute.gpu import kernels
    from chute.ops.gpu_fusion import PendingResize

    (batch,) = inputs
    if isinstance(batch, PendingResize):  # a fused resize: resample the crops from its input
        fused = _resize_crop_gpu(batch, args, ctx)
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
    out = kernels.crop_mirror_normalize_batch(
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


def _resize_crop_gpu(batch: Any, args: Any, ctx: Any) -> Any:
    """A resize and this crop in one resampling launch; None where a crop leaves its image."""
    from chute.gpu import kernels
    from chute.ops.gpu_fusion import crop_size

    windows, fits = batch.crop_windows(ctx.node)
    if not fits:
        return None
    source = batch.source
    dense = dense_array(source)
    shapes = sample_shapes(source)
    mean, std = _mean_std(args, len(shapes), int(shapes[0, 2]) if len(shapes) else 3)
    out = kernels.resize_crop_mirror_normalize(
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


def flip_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
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
