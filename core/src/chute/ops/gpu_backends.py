"""GPU backends of the ResNet-50 path: mixed decoding and batched resize / crop / normalize.

Each function is an operator's ``run_gpu``: it gets the whole batch (CPU
sample lists for "mixed" operators, TensorListGPU otherwise), computes the
per-sample parameters on the host (sizes, windows, flags — the same numbers
as the CPU backend, from the same random streams) and launches one kernel
for the batch on the pipeline's stream (chute.gpu.kernels).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from chute.types import to_dtype

_decoders: dict[tuple[int, int], Any] = {}
_decoders_lock = threading.Lock()

# Measured on an H100 (bench/gpu_path.py): hardware decoder share of the GPU-decoded
# samples; the rest go to nvJPEG's CUDA decoder.
DEFAULT_HW_LOAD = 0.9


def _decoder(device_id: int, hw_load: float | None) -> Any:
    from chute.gpu.jpeg import BatchDecoder

    load = DEFAULT_HW_LOAD if hw_load is None else float(hw_load)
    key = (device_id, round(load * 100))
    with _decoders_lock:
        if key not in _decoders:
            _decoders[key] = BatchDecoder(device_id, hw_decoder_load=load)
        return _decoders[key]


def _gpu_list(samples: list, layout: str, ctx: Any) -> Any:
    from chute.tensors.gpu import TensorListGPU

    return TensorListGPU(samples, layout, ctx.stream, ctx.device_id)


def decode_mixed(inputs: list, args: Any, ctx: Any, random_crop: bool = False) -> Any:
    """Decode a batch of encoded samples to GPU HWC images (random crops with ``random_crop``)."""
    (encoded,) = inputs
    out_type = str(args["output_type"])
    if to_dtype(args["dtype"] or np.uint8) != np.uint8:
        raise ValueError("device='mixed' decodes to uint8; cast afterwards for other types")
    if out_type not in ("RGB", "BGR", "GRAY"):
        raise ValueError(f"device='mixed' supports output_type RGB, BGR or GRAY, not {out_type}")
    decoder = _decoder(ctx.device_id, args["hw_decoder_load"])
    parsed = decoder.parse(list(encoded))
    rois = random_crop_windows(parsed.shapes, args, ctx) if random_crop else None
    result = decoder.decode(parsed, rois=rois, output_type=out_type, stream=ctx.stream)
    for i, err in enumerate(result.errors):
        if err is not None:
            path = (ctx.meta[i] or {}).get("source_info") if i < len(ctx.meta) else None
            raise ValueError(f"sample {i}{f' ({path})' if path else ''}: {err}")
    batch = _gpu_list(result.images, "HWC", ctx)
    batch.keepalive = result  # host staging buffers live until the stream has used them
    return batch


def random_crop_windows(shapes: Any, args: Any, ctx: Any) -> list:
    """The windows of decoders.image_random_crop: the CPU backend's, from the same streams.

    Shapes come from the code streams' headers (before EXIF orientation, which
    training JPEGs rarely carry).
    """
    from chute.ops.decoders.crop_window import random_crop_window

    area, ratio, attempts = args["random_area"], args["random_aspect_ratio"], args["num_attempts"]
    return [
        tuple(
            float(v)
            for v in random_crop_window(
                int(h), int(w), area=area, aspect_ratio=ratio, num_attempts=attempts, rng=ctx.rng(i)
            )
        )
        for i, (h, w) in enumerate(shapes)
    ]


def image_random_crop_mixed(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    return decode_mixed(inputs, args, ctx, random_crop=True)


def image_mixed(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    return decode_mixed(inputs, args, ctx)


def _interp(a: Any) -> str:
    name = str(a["interp_type"] if a.given("interp_type") else "linear")
    return {"nn": "nn", "linear": "linear", "cubic": "cubic"}.get(name, "linear")


def resize_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.resize on the GPU: DALI's size rules per sample, one resampling launch."""
    from chute.gpu import kernels
    from chute.ops.geometry.resize_kernels import resize_output_size
    from chute.ops.geometry.resize_ops import _size_kwargs

    (batch,) = inputs
    samples = batch.samples()
    sizes = []
    windows = []
    constant = not args.columns
    cache: dict[tuple[int, int], tuple[int, int]] = {}
    first = args.sample(0)
    for i, x in enumerate(samples):
        a = first if constant else args.sample(i)
        h, w = x.shape[:2]
        if not constant or (h, w) not in cache:
            cache[(h, w)] = resize_output_size(h, w, **_size_kwargs(a))
        sizes.append(cache[(h, w)])
        windows.append(_roi_window(a, h, w))
    uniform = len({tuple(s) for s in sizes}) == 1
    out = kernels.resize_batch(
        samples,
        sizes[0] if uniform else np.asarray(sizes),
        interp=_interp(first),
        antialias=bool(first["antialias"]) if first.given("antialias") else True,
        windows=None if all(w is None for w in windows) else _fill_windows(windows, samples),
        dtype=to_dtype(first["dtype"] or batch.dtype),
        stream=ctx.stream,
    )
    return _wrap(out, batch.layout() or "HWC", ctx)


def _roi_window(a: Any, h: int, w: int) -> tuple | None:
    start, end = a["roi_start"], a["roi_end"]
    if start is None:
        return None
    if a["roi_relative"]:
        start = (start[0] * h, start[1] * w)
        end = (end[0] * h, end[1] * w)
    return (start[0], start[1], end[0] - start[0], end[1] - start[1])


def _fill_windows(windows: list, samples: list) -> np.ndarray:
    return np.array(
        [w if w is not None else (0, 0, *x.shape[:2]) for w, x in zip(windows, samples)],
        np.float32,
    )


def _wrap(out: Any, layout: str, ctx: Any) -> Any:
    from chute.tensors.gpu import TensorListGPU

    return TensorListGPU(out, layout, ctx.stream, ctx.device_id)


def random_resized_crop_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.random_resized_crop on the GPU: the CPU backend's windows, one resampling launch."""
    from chute.gpu import kernels
    from chute.ops.decoders.crop_window import random_crop_window

    (batch,) = inputs
    samples = batch.samples()
    windows = []
    for i, x in enumerate(samples):
        a = args.sample(i)
        windows.append(
            random_crop_window(
                x.shape[0],
                x.shape[1],
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
        interp=_interp(first),
        antialias=bool(first["antialias"]) if first.given("antialias") else True,
        windows=np.asarray(windows, np.float32),
        dtype=to_dtype(first["dtype"] or batch.dtype),
        stream=ctx.stream,
    )
    return _wrap(out, batch.layout() or "HWC", ctx)


def _value(args: Any, name: str, i: int) -> Any:
    return args.sample(i)[name] if args.is_per_sample(name) else args[name]


def crop_mirror_normalize_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.crop_mirror_normalize on the GPU: crop + mirror + normalize + layout + cast, one launch."""
    from chute.gpu import kernels

    (batch,) = inputs
    samples = batch.samples()
    n = len(samples)
    channels = samples[0].shape[2] if n else 3
    per_sample = any(
        args.is_per_sample(k) for k in ("crop", "crop_h", "crop_w", "mean", "std", "scale", "shift")
    )
    rows = range(n) if per_sample else range(min(n, 1))
    crops, mean, std = [], [], []
    for i in rows:
        h, w = samples[i].shape[:2]
        crop = _value(args, "crop", i)
        ch = crop[0] if crop else (_value(args, "crop_h", i) or h)
        cw = crop[1] if crop else (_value(args, "crop_w", i) or w)
        crops.append((round(ch), round(cw)))
        m = np.asarray(_value(args, "mean", i), np.float32)
        s = np.asarray(_value(args, "std", i), np.float32) / _value(args, "scale", i)
        # (x - m) / s * scale + shift == (x - m') / s' with s' = s / scale, m' = m - shift * s'
        mean.append(np.broadcast_to(m - _value(args, "shift", i) * s, (channels,)))
        std.append(np.broadcast_to(s, (channels,)))
    if len(set(crops)) > 1:
        raise ValueError(
            f"on the GPU every sample needs the same crop size, got {sorted(set(crops))[:4]}"
        )
    if not crops:
        crops = [(0, 0)]
    if args["out_of_bounds_policy"] == "error":
        for i, x in enumerate(samples):
            if crops[0][0] > x.shape[0] or crops[0][1] > x.shape[1]:
                raise ValueError(
                    f"sample {i}: crop window {crops[0]} leaves the {x.shape[0]}x{x.shape[1]} "
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
    out = kernels.crop_mirror_normalize_batch(
        samples,
        crops[0],
        crop_pos=pos,
        mirror=np.asarray(args.column("mirror"), bool),
        mean=np.stack(mean) if per_sample else mean[0],
        std=np.stack(std) if per_sample else std[0],
        dtype=to_dtype(args["dtype"]),
        layout=args["output_layout"],
        fill=float(fill[0]) if fill.size == 1 else fill,
        out_channels=4 if args["pad_output"] else None,
        stream=ctx.stream,
    )
    return _wrap(out, args["output_layout"], ctx)


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
    return _gpu_list(out, batch.layout(), ctx)
