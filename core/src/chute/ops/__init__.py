"""Operators as classes (DALI's legacy API): ``ops.Resize(size=224)(images)``.

Constructor arguments are constants; calling the object on DataNodes (with
per-sample arguments as keywords) traces a node. The implementation modules
live in this package too (one family per module).
"""

from __future__ import annotations

from chute.ops import decoders, random, readers
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
from chute.ops.image.image_ops import CropMirrorNormalize, GaussianBlur, Normalize
from chute.ops.python import PythonFunction
from chute.ops.random import Choice, CoinFlip, Normal, Uniform
from chute.ops.tensor_ops import Cast, Cat, Copy, Reshape, Shapes, Stack, Transpose

__all__ = [
    "Brightness",
    "BrightnessContrast",
    "Cast",
    "Cat",
    "Choice",
    "CoinFlip",
    "ColorSpaceConversion",
    "ColorTwist",
    "Contrast",
    "Copy",
    "CropMirrorNormalize",
    "ExternalSource",
    "GaussianBlur",
    "Hsv",
    "Hue",
    "LookupTable",
    "Normal",
    "Normalize",
    "PeekImageShape",
    "PythonFunction",
    "Reshape",
    "Saturation",
    "Shapes",
    "Stack",
    "Transpose",
    "Uniform",
    "decoders",
    "random",
    "readers",
]
