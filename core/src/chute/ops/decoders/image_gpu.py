"""GPU ("mixed") backends of the image decoders: encoded samples in, GPU HWC images out.

Each backend gets the batch's encoded samples and decodes them with nvImageCodec
(chute.gpu.batches lends a BatchDecoder) on the context's stream. Crop windows come
from the headers' shapes before decoding, so only each window is decoded: the CPU
backend's windows from the same random streams (image_random_crop, drawn for the
whole batch at once), or the operator's own window (image_crop, image_slice).

Decoded images stay nvImageCodec images inside a DecodedImages batch
(chute.gpu.batches: CuPy views only for a user who asks for a sample): at 256
samples a batch, per-sample Python is what bounds the GPU path.
"""

from __future__ import annotations

import functools
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import numpy as np

from chute.gpu.batches import decoded_images
from chute.gpu.batches import decoders as _decoders
from chute.ops.decoders import image_codec, turbo
from chute.ops.decoders.entropy_check import CheckedFiles, check_entropy_enabled
from chute.ops.decoders.image_codec import MAX_IMAGE_PIXELS
from chute.ops.decoders.image_headers import DecodeError, check_pixels
from chute.ops.decoders.jpeg_structure import structure_errors
from chute.runtime import native, philox
from chute.runtime.context import sample_generator
from chute.runtime.crop_window import centre_crop_window, random_crop_window
from chute.types import to_dtype

__all__ = [
    "decode_mixed",
    "image_mixed",
    "image_random_crop_mixed",
    "image_window_mixed",
    "random_crop_windows",
]


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
    region = getattr(ctx.state, "decode_region", None)  # the decoder's settings (setup)
    origins = None
    tuning = getattr(ctx.state, "tuning", None)  # the decoder's setup(): the build's Tuning
    encoded = list(encoded)
    refused = refuse_before_parse(encoded)
    with _decoders.use(ctx.device_id, args["hw_decoder_load"], tuning) as decoder:
        parsed = decoder.parse(encoded)
        refused.update(refuse_sizes(parsed.shapes, parsed.streams.handles, refused))
        # the entropy check runs beside the GPU decode; its refusals join the failures after
        corrupt = refuse_corrupt(encoded, refused, args["check_entropy"], ctx)
        shapes = parsed.shapes.copy()
        shapes[list(refused)] = 0  # no window is drawn for a refused sample
        rois, bad = windows(shapes) if windows is not None else (None, {})
        refused.update({i: why for i, why in bad.items() if i not in refused})
        if region is not None:  # only what a fused resize + crop reads
            from chute.ops.geometry.gpu_fusion import decode_regions

            turned = (parsed.streams.rotated != 0) | parsed.streams.flipped
            rois, origins = decode_regions(region.fused, parsed.shapes, turned)
        # Decode on the lane's own stream (the executor keeps it alive): two lanes
        # decode at once, and the kernels after this follow in stream order.
        result = decoder.decode(
            parsed,
            rois=rois,
            output_type=out_type,
            stream=ctx.stream,
            as_cupy=False,
            on_stream=True,
            reject=refused,
            cpu_decode=_cpu_decode,
            cpu_regions=_cpu_regions,
        )
    failed = {i: err for i, err in enumerate(result.errors) if err is not None}
    if corrupt is not None:
        failed.update({i: why for i, why in corrupt.result().items() if i not in failed})
        failed = dict(sorted(failed.items()))
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


_CHECK_THREADS = 4  # native threads for a batch's structure check (~0.4 ms for 256 files)


def refuse_before_parse(encoded: list) -> dict[int, str]:
    """Samples refused from their bytes alone, as the CPU decoder refuses them: {i: reason}.

    Empty samples, and JPEGs whose structure is broken (truncated, no EOI, bytes where a
    marker belongs: chute.ops.decoders.jpeg_structure), which a GPU decoder would decode
    into an image with grey or garbage rows. The check reads every byte (~5 us for a
    100 KB file): one call that holds no GIL and splits the batch over a few native
    threads (a Python pool would hand the GIL back and forth per chunk).
    """
    faults = structure_errors(encoded, True, _CHECK_THREADS)
    return {
        i: fault if fault.startswith("empty") else f"jpeg: {fault}"
        for i, fault in enumerate(faults)
        if fault is not None
    }


def refuse_corrupt(
    encoded: list, refused: dict[int, str], check: bool | None, ctx: Any
) -> Future | None:
    """The JPEGs whose entropy-coded data the CPU decoder refuses, where the check is on
    (chute.ops.decoders.entropy_check): a future of {i: the CPU decoder's reason}, or None.

    Started after the size check (a refused sample's coefficients are never allocated)
    and run beside the GPU decode, on the pipeline's thread count of native threads
    without the GIL; the GPU would decode these files into damaged blocks without an
    error, so they fail afterwards.
    """
    if not check_entropy_enabled(check, ctx.on_error):
        return None
    todo = [i for i in range(len(encoded)) if i not in refused]
    threads = getattr(ctx.pool, "num_threads", 1) or 1
    metas = [ctx.meta[i] if i < len(ctx.meta) else None for i in todo]
    checked = getattr(ctx.state, "checked", None) or CheckedFiles()  # by index, once a file

    def check_todo() -> dict[int, str]:
        faults = checked.corrupt([encoded[i] for i in todo], metas, threads)
        return {todo[j]: reason for j, reason in faults.items()}

    return _checker().submit(check_todo)


@functools.cache
def _checker() -> ThreadPoolExecutor:
    """The thread that starts the entropy checks (their work runs on native threads)."""
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="chute-entropy")


def refuse_sizes(shapes: Any, handles: Any, refused: dict[int, str]) -> dict[int, str]:
    """Parsed samples whose header claims an empty size or more than MAX_IMAGE_PIXELS.

    Checked before anything is allocated for them (a mutated header can claim 65535 x
    65535 pixels), with the CPU decoder's limit and message.
    """
    out: dict[int, str] = {}
    h = np.asarray(shapes[:, 0], np.int64)
    w = np.asarray(shapes[:, 1], np.int64)
    parsed = np.asarray(handles) != 0
    suspect = parsed & ((h <= 0) | (w <= 0) | (h * w > MAX_IMAGE_PIXELS))
    for i in np.flatnonzero(suspect).tolist():
        if i in refused:
            continue
        try:
            check_pixels(int(h[i]), int(w[i]), MAX_IMAGE_PIXELS)
        except DecodeError as exc:
            out[i] = str(exc)
    return out


def _cpu_regions(items: list[tuple], threads: int) -> list[str | None]:
    """The GPU decoder's "turbo" CPU group: chute's libjpeg-turbo decode of whole batches
    (the CPU decoder's very code), GIL-free on ``threads`` native threads."""
    decoder = turbo.load()
    if decoder is None or decoder.native is None:
        return ["chute's compiled libjpeg-turbo decoder is not built"] * len(items)
    return decoder.native.jpeg_decode_batch(items, threads)


def _cpu_decode(data: Any, roi: Any, out_type: str) -> np.ndarray:
    """The CPU decoder of the samples no GPU backend takes: chute's, with its rules."""
    region = None
    if roi is not None:
        y, x, h, w = (int(v) for v in roi)
        region = (y, x, y + h, x + w)
    return image_codec.decode(data, output_type=out_type, roi=region)


def random_crop_windows(shapes: Any, args: Any, ctx: Any) -> list:
    """The windows of decoders.image_random_crop: the CPU backend's, from the same streams.

    Drawn for the whole batch at once (chute.runtime.philox: the same words as each
    sample's generator); the few samples that need more draws than that take the
    per-sample path. Shapes come from the code streams' headers (before EXIF
    orientation, which training JPEGs rarely carry).
    """
    area, ratio, attempts = args["random_area"], args["random_aspect_ratio"], args["num_attempts"]
    shapes = np.ascontiguousarray(np.asarray(shapes, np.int64).reshape(-1, 2))
    n = len(shapes)
    meta = [ctx.meta[i] if i < len(ctx.meta) else None for i in range(n)]
    found: list = [None] * n
    if native.random_crop_windows is not None and n:
        # compiled: the batch's draws in one call without the GIL, each sample's from its
        # own stream (exact with the per-sample path whatever the attempts); -1 rows: no
        # attempt fit (the centre crop below) or an empty shape
        key, ctr = philox.sample_counters(ctx.seed, ctx.node.id, ctx.epoch, ctx.iteration, meta)
        drawn = np.empty((n, 4), np.int64)
        native.random_crop_windows(shapes, *area, *ratio, attempts, key, ctr, drawn)
        missed = drawn[:, 2] <= 0
        for i in np.flatnonzero(missed & (shapes[:, 0] > 0) & (shapes[:, 1] > 0)).tolist():
            drawn[i] = centre_crop_window(int(shapes[i, 0]), int(shapes[i, 1]), tuple(ratio))
        return [
            tuple(w) if w[2] > 0 and w[3] > 0 else None for w in drawn.astype(np.float64).tolist()
        ]
    if _vectorized_windows_ok() and n:  # without the compiled module: NumPy's Philox rounds
        key, ctr = philox.sample_counters(ctx.seed, ctx.node.id, ctx.epoch, ctx.iteration, meta)
        # valid shapes only: a 0 x 0 header makes the per-sample path raise as before
        valid = (shapes[:, 0] > 0) & (shapes[:, 1] > 0)
        words = philox.stream_words(key, ctr, 2)
        drawn = philox.random_crop_windows(shapes, words, tuple(area), tuple(ratio), attempts)
        found = [w if v else None for w, v in zip(drawn, valid.tolist())]
    for i in [i for i, w in enumerate(found) if w is None]:
        h, w = int(shapes[i, 0]), int(shapes[i, 1])
        # an empty shape: a sample refused or not parsed; the whole image (whatever decodes)
        found[i] = _window(h, w, args, ctx.rng(i)) if h > 0 and w > 0 else (0, 0, 0, 0)
    out = [tuple(w) for w in np.asarray(found, np.float64).reshape(n, 4).tolist()]
    return [None if w[2] <= 0 or w[3] <= 0 else w for w in out]


def _window(h: int, w: int, args: Any, rng: Any) -> tuple:
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
    def windows(shapes: np.ndarray) -> tuple[list, dict]:
        rois = random_crop_windows(shapes, args, ctx)
        unknown = "the image size could not be read from its header"
        return rois, {i: unknown for i, roi in enumerate(rois) if roi is None}

    return decode_mixed(inputs, args, ctx, windows)


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
