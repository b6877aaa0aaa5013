"""Operators as functions: ``fn.resize(images, size=224)`` traces one operator node.

Each function has its operator's real signature and docstring
(``help(chute.fn.python_function)``). Sub-namespaces follow DALI:
``fn.random``, ``fn.math``.
"""

from __future__ import annotations

from chute.fn import decoders, io, math, random, readers, transforms
from chute.fn.audio_video import (
    audio_resample,
    mel_filter_bank,
    mfcc,
    nonsilent_region,
    preemphasis_filter,
    spectrogram,
    to_decibels,
)
from chute.ops.color.color_ops import (
    Brightness,
    BrightnessContrast,
    ColorSpaceConversion,
    ColorTwist,
    Contrast,
    Hsv,
    Hue,
    LookupTable,
    Saturation,
)
from chute.ops.decoders import PeekImageShape
from chute.ops.external_source import ExternalSource
from chute.ops.geometry.crop_ops import Crop, Erase, Flip, Pad, Paste, Slice
from chute.ops.geometry.resize_ops import RandomResizedCrop, Resize, ResizeCropMirror
from chute.ops.geometry.transform_ops import CoordFlip, CoordTransform
from chute.ops.geometry.warp_ops import Jitter, Rotate, Sphere, WarpAffine, Water
from chute.ops.image.image_ops import CropMirrorNormalize, GaussianBlur, Normalize
from chute.ops.io import GetProperty
from chute.ops.python import PythonFunction
from chute.ops.tensor_ops import Cast, Cat, Copy, Reshape, Shapes, Stack, Transpose
from chute.runtime.operator import make_fn

__all__ = [
    "audio_resample",
    "brightness",
    "brightness_contrast",
    "cast",
    "cat",
    "color_space_conversion",
    "color_twist",
    "contrast",
    "coord_flip",
    "coord_transform",
    "copy",
    "crop",
    "crop_mirror_normalize",
    "decoders",
    "erase",
    "external_source",
    "flip",
    "get_property",
    "io",
    "gaussian_blur",
    "hsv",
    "hue",
    "jitter",
    "lookup_table",
    "math",
    "mel_filter_bank",
    "mfcc",
    "nonsilent_region",
    "normalize",
    "pad",
    "paste",
    "peek_image_shape",
    "preemphasis_filter",
    "python_function",
    "random",
    "random_resized_crop",
    "readers",
    "reshape",
    "resize",
    "resize_crop_mirror",
    "rotate",
    "saturation",
    "shapes",
    "slice",
    "spectrogram",
    "sphere",
    "stack",
    "to_decibels",
    "transforms",
    "transpose",
    "warp_affine",
    "water",
]

external_source = make_fn(ExternalSource)
get_property = make_fn(GetProperty)
python_function = make_fn(PythonFunction)
cast = make_fn(Cast)
cat = make_fn(Cat)
copy = make_fn(Copy)
reshape = make_fn(Reshape)
shapes = make_fn(Shapes)
stack = make_fn(Stack)
transpose = make_fn(Transpose)
brightness = make_fn(Brightness)
brightness_contrast = make_fn(BrightnessContrast)
color_space_conversion = make_fn(ColorSpaceConversion)
color_twist = make_fn(ColorTwist)
contrast = make_fn(Contrast)
crop_mirror_normalize = make_fn(CropMirrorNormalize)
gaussian_blur = make_fn(GaussianBlur)
hsv = make_fn(Hsv)
hue = make_fn(Hue)
lookup_table = make_fn(LookupTable)
normalize = make_fn(Normalize)
saturation = make_fn(Saturation)
peek_image_shape = make_fn(PeekImageShape)
coord_flip = make_fn(CoordFlip)
coord_transform = make_fn(CoordTransform)
crop = make_fn(Crop)
erase = make_fn(Erase)
flip = make_fn(Flip)
jitter = make_fn(Jitter)
pad = make_fn(Pad)
paste = make_fn(Paste)
random_resized_crop = make_fn(RandomResizedCrop)
resize = make_fn(Resize)
resize_crop_mirror = make_fn(ResizeCropMirror)
rotate = make_fn(Rotate)
slice = make_fn(Slice)
sphere = make_fn(Sphere)
warp_affine = make_fn(WarpAffine)
water = make_fn(Water)
