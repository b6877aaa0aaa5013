"""Image decoders: ``ops.decoders.Image``, ``ImageCrop``, ``ImageSlice``, ``ImageRandomCrop``.

The pure codec layer lives in :mod:`chute.ops.decoders.image_codec` (decode,
decode_scaled, decode_resized, peek_shape) and
:mod:`chute.runtime.crop_window` (random, anchored and sliced windows).

As in every family, each operator module has its backends beside it
(``<topic>_ops.py`` / ``<topic>_kernels.py`` / ``<topic>_gpu.py``): here
``image_decoders.py`` declares the decoders (``decoder_base.py`` what they share), the
codec modules above decode on the CPU and ``image_gpu.py`` holds their GPU ("mixed")
backends.
"""

from __future__ import annotations

from chute.ops.decoders.image_decoders import (
    Image,
    ImageCrop,
    ImageRandomCrop,
    ImageSlice,
    PeekImageShape,
)

__all__ = [
    "Audio",
    "Image",
    "ImageCrop",
    "ImageRandomCrop",
    "ImageSlice",
    "PeekImageShape",
    "Video",
]


def __getattr__(name: str):
    # audio and video decoders live in their own packages; import them on first use
    if name == "Audio":
        from chute.ops.audio.audio_ops import AudioDecoder

        return AudioDecoder
    if name == "Video":
        from chute.ops.video.decoder import VideoDecoder

        return VideoDecoder
    raise AttributeError(name)
