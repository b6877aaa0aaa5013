"""chute's GPU building blocks: batch JPEG decoding and batched image kernels over CuPy.

Importing this package imports neither CuPy nor nvImageCodec; they load on first use,
and :func:`~chute.gpu.runtime.require_gpu` says what to install when they are missing.
"""

from __future__ import annotations

from chute.gpu.batches import decode_batch
from chute.gpu.jpeg import BatchDecoder, DecodedBatch, ParsedBatch, decode_cpu
from chute.gpu.kernels import (
    crop_mirror_normalize_batch,
    resize_batch,
    resize_crop_mirror_normalize,
    sizes_for_shorter_side,
)
from chute.gpu.runtime import gpu_available, require_gpu, stream_for

__all__ = [
    "BatchDecoder",
    "DecodedBatch",
    "ParsedBatch",
    "crop_mirror_normalize_batch",
    "decode_batch",
    "decode_cpu",
    "gpu_available",
    "require_gpu",
    "resize_batch",
    "resize_crop_mirror_normalize",
    "sizes_for_shorter_side",
    "stream_for",
]
