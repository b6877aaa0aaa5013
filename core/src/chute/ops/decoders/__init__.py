"""Image decoders: ``ops.decoders.Image``, ``ImageCrop``, ``ImageSlice``, ``ImageRandomCrop``.

The pure codec layer lives in :mod:`chute.ops.decoders.image_codec` (decode,
decode_scaled, decode_resized, peek_shape) and
:mod:`chute.ops.decoders.crop_window` (random, anchored and sliced windows).
"""

from __future__ import annotations

from chute.ops.decoders.image_decoders import (
    Image,
    ImageCrop,
    ImageRandomCrop,
    ImageSlice,
    PeekImageShape,
)

__all__ = ["Image", "ImageCrop", "ImageRandomCrop", "ImageSlice", "PeekImageShape"]
