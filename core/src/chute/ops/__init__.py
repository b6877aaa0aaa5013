"""Operators as classes (DALI's legacy API): ``ops.Resize(size=224)(images)``.

Constructor arguments are constants; calling the object on DataNodes (with
per-sample arguments as keywords) traces a node. The implementation modules
live in this package too (one family per module).
"""

from __future__ import annotations

from chute.ops import arithmetic, decoders, random, readers, transfer  # noqa: F401
from chute.ops.audio import (
    MFCC,
    AudioResample,
    MelFilterBank,
    NonsilentRegion,
    PreemphasisFilter,
    Spectrogram,
    ToDecibels,
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
from chute.ops.geometry import transform_ops as transforms
from chute.ops.geometry.crop_ops import Crop, Erase, Flip, Pad, Paste, Slice
from chute.ops.geometry.resize_ops import RandomResizedCrop, Resize, ResizeCropMirror
from chute.ops.geometry.transform_ops import CoordFlip, CoordTransform
from chute.ops.geometry.warp_ops import Jitter, Rotate, Sphere, WarpAffine, Water
from chute.ops.image.image_ops import CropMirrorNormalize, GaussianBlur, Normalize
from chute.ops.python import PythonFunction
from chute.ops.random import Choice, CoinFlip, Normal, Uniform
from chute.ops.tensor_ops import Cast, Cat, Copy, Reshape, Shapes, Stack, Transpose

__all__ = [
    "AudioResample",
    "Brightness",
    "BrightnessContrast",
    "Cast",
    "Cat",
    "Choice",
    "CoinFlip",
    "ColorSpaceConversion",
    "ColorTwist",
    "Contrast",
    "CoordFlip",
    "CoordTransform",
    "Copy",
    "Crop",
    "CropMirrorNormalize",
    "Erase",
    "ExternalSource",
    "Flip",
    "GaussianBlur",
    "Hsv",
    "Hue",
    "Jitter",
    "LookupTable",
    "MFCC",
    "MelFilterBank",
    "NonsilentRegion",
    "Normal",
    "Normalize",
    "Pad",
    "Paste",
    "PeekImageShape",
    "PreemphasisFilter",
    "PythonFunction",
    "RandomResizedCrop",
    "Reshape",
    "Resize",
    "ResizeCropMirror",
    "Rotate",
    "Saturation",
    "Shapes",
    "Slice",
    "Spectrogram",
    "Sphere",
    "Stack",
    "ToDecibels",
    "Transpose",
    "Uniform",
    "WarpAffine",
    "Water",
    "decoders",
    "random",
    "readers",
    "transforms",
]
