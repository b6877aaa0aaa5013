"""The schema arguments every image decoder takes (fn.decoders.image, image_crop, ...)."""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.schema import Arg
from chute.ops.decoders.image_codec import OUTPUT_TYPES

__all__ = ["DALI_TUNING_ARGS", "DECODE_ARGS", "MIXED_ARGS", "mixed_decoder_options"]

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
# DALI's settings of the mixed decoders' GPU decoding; the CPU decoders accept and ignore
# them (a DALI pipeline moved between devices keeps its arguments)
MIXED_ARGS = (
    Arg(
        "hw_decoder_load",
        "float",
        None,
        "Mixed: the share of each batch's JPEGs decoded on the hardware JPEG decoder (A100, "
        "H100 and later); the rest go to nvJPEG's CUDA decoder. Default (None): the engine's "
        "Tuning.hw_load, 1.0: every JPEG on the hardware decoder (on an H100 host DALI itself "
        "ran 1.2x faster with 1.0 than with its default, 0.65; bench/README.md, session 16). "
        "Ignored on the CPU.",
        per_sample=False,
    ),
    Arg(
        "hybrid_huffman_threshold",
        "int",
        None,
        "Mixed: of the JPEGs decoded by nvJPEG's CUDA decoder, those with more pixels than "
        "this have their Huffman decoding done on the GPU, the others on the CPU (None: "
        "nvImageCodec's default, 1,000,000, as DALI's). Ignored on the CPU.",
        per_sample=False,
    ),
    Arg(
        "preallocate_width_hint",
        "int",
        None,
        "Mixed: the image width the hardware decoder's resources are made for when the "
        "decoder is made, with preallocate_height_hint (None or 0: sized by the first "
        "batches). Ignored on the CPU.",
        per_sample=False,
    ),
    Arg(
        "preallocate_height_hint",
        "int",
        None,
        "Mixed: the image height the hardware decoder's resources are made for (see "
        "preallocate_width_hint). Ignored on the CPU.",
        per_sample=False,
    ),
)

# Every DALI tuning argument of the image decoders: the mixed decoders' settings above and
# knobs with no meaning for chute's decoders, accepted so that DALI pipelines port unchanged.
DALI_TUNING_ARGS = MIXED_ARGS + tuple(
    Arg(name, "any", None, "Accepted for DALI compatibility; no effect.", per_sample=False)
    for name in (
        "device_memory_padding",
        "device_memory_padding_jpeg2k",
        "host_memory_padding",
        "host_memory_padding_jpeg2k",
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


def mixed_decoder_options(node: Any) -> dict[str, int]:
    """The BatchDecoder settings a mixed decoder node's own arguments ask for (those given)."""
    load = node.arg("hw_decoder_load")
    if load is not None and not 0.0 <= load <= 1.0:
        raise ValueError(
            f"{node.schema.display_name}: argument 'hw_decoder_load' must be in [0, 1], got {load}"
        )
    out = {}
    for name in ("hybrid_huffman_threshold", "preallocate_width_hint", "preallocate_height_hint"):
        value = node.arg(name)
        if value is not None:
            if value < 0:
                raise ValueError(
                    f"{node.schema.display_name}: argument '{name}' must be >= 0, got {value}"
                )
            out[name] = int(value)
    return out
