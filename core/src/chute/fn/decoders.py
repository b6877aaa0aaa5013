"""Image decoders: ``fn.decoders.image``, ``image_crop``, ``image_slice``, ``image_random_crop``."""

from __future__ import annotations

from chute.ops.audio import AudioDecoder
from chute.ops.decoders import Image, ImageCrop, ImageRandomCrop, ImageSlice
from chute.ops.video import VideoDecoder
from chute.runtime.operator import make_fn

__all__ = ["audio", "image", "image_crop", "image_random_crop", "image_slice", "video"]

image = make_fn(Image)
image_crop = make_fn(ImageCrop)
image_slice = make_fn(ImageSlice)
image_random_crop = make_fn(ImageRandomCrop)
audio = make_fn(AudioDecoder)
video = make_fn(VideoDecoder)
