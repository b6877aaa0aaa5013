"""The schema arguments every image decoder takes (fn.decoders.image, image_crop, ...)."""

from __future__ import annotations

import numpy as np

from chute.graph.schema import Arg
from chute.ops.decoders.image_codec import OUTPUT_TYPES

__all__ = ["DALI_TUNING_ARGS", "DECODE_ARGS"]

DECODE_ARGS = (
    Arg(
        "output_type",
        "str",
        "RGB",
        "Color space of the output: RGB, BGR, GRAY, YCbCr (BT.601 limited range) or "
        "ANY_DATA (the image's own channels).",
        per_sample=False,
        choices=OUTPUT_TYPES,
    ),
    Arg(
        "dtype",
        "dtype",
        np.dtype(np.uint8),
        "Output type: uint8, uint16 or float32 (float in [0, 1]).",
        per_sample=False,
    ),
    Arg(
        "adjust_orientation",
        "bool",
        True,
        "Turn the image upright by its EXIF orientation.",
        per_sample=False,
    ),
    Arg(
        "dct_scaling",
        "bool",
        False,
        "CPU, JPEG: when the only reader of the output is fn.resize to a fixed size "
        "(resize_x and resize_y, or size), decode at 1/2, 1/4 or 1/8 scale wherever the "
        "region stays at least that large, and let the resize do the rest. Several times "
        "faster on large photos; pixels differ slightly from a full-scale decode and "
        "resize. No effect in debug mode, which runs operators one at a time.",
        per_sample=False,
    ),
    Arg(
        "check_entropy",
        "bool",
        None,
        "JPEG, mixed and region decoders: decode each file's entropy-coded data on the CPU "
        "(libjpeg-turbo, no pixels) before decoding it, and refuse a file with corrupt "
        "data as the full CPU decoder does, instead of decoding it into damaged blocks (the "
        "GPU) or decoding it only down to the window (a region). The same files are then "
        "skipped on every device and for every crop window. Default (None): on under "
        "on_error='skip' or 'warn', off under 'raise'. Costs about two thirds of a CPU "
        "decode per JPEG, spread over the pipeline's threads without the GIL, once per file: "
        "later epochs reuse each file's verdict (by the reader's index and the file's size).",
        per_sample=False,
    ),
)
# DALI tuning knobs that have no meaning for chute's CPU decoder; accepted so
# that DALI pipelines port unchanged.
DALI_TUNING_ARGS = tuple(
    Arg(name, "any", None, "Accepted for DALI compatibility; no effect.", per_sample=False)
    for name in (
        "hw_decoder_load",
        "hybrid_huffman_threshold",
        "device_memory_padding",
        "device_memory_padding_jpeg2k",
        "host_memory_padding",
        "host_memory_padding_jpeg2k",
        "preallocate_height_hint",
        "preallocate_width_hint",
        "memory_stats",
        "use_fast_idct",
        "jpeg_fancy_upsampling",
        "affine",
        "split_stages",
        "use_chunk_allocator",
        "cache_size",
        "cache_type",
        "cache_threshold",
        "cache_debug",
        "cache_batch_copy",
    )
)
