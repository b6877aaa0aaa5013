"""Color operators: fn.color_twist, hsv, hue, saturation, brightness, contrast,
brightness_contrast, color_space_conversion and lookup_table (CPU, per sample).

The arithmetic lives in :mod:`chute.ops.color.color_kernels` and
:mod:`chute.ops.color.color_space_kernels`; these classes declare DALI's arguments and
route per-sample values to the kernels. Every numeric argument may be a per-sample DataNode.

The augmentations take a per-sample ``mask``: a sample whose mask is 0 is left unchanged,
only converted to the output ``dtype`` so that the batch keeps one dtype.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import REQUIRED, Arg, Schema
from chute.graph.spec import Spec
from chute.ops.color import color_kernels as kernels
from chute.ops.color.color_space_kernels import color_space_conversion, image_type_channels
from chute.ops.image.convert_kernels import convert_saturate
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

__all__ = [
    "Brightness",
    "BrightnessContrast",
    "ColorSpaceConversion",
    "ColorTwist",
    "Contrast",
    "Hsv",
    "Hue",
    "LookupTable",
    "Saturation",
]

_DTYPE = Arg("dtype", "dtype", None, "Output data type (default: the input's).", per_sample=False)
_MASK = Arg(
    "mask",
    "bool",
    True,
    "Apply to the sample only where true; other samples pass (converted to dtype) unchanged.",
)
_IMAGE_TYPE = Arg(
    "image_type",
    "str",
    "RGB",
    "Color space of the input and the output.",
    per_sample=False,
    choices=("RGB", "BGR"),
)
_COLOR_SPACES = ("RGB", "BGR", "GRAY", "YCbCr", "HSV")


def _check_image_spec(name: str, spec: Spec) -> None:
    if spec.ndim is not None and spec.ndim not in (2, 3, 4):
        raise ValueError(f"{name} expects HWC images (or FHWC sequences), got {spec.ndim} dims")
    if spec.layout and spec.layout[-1] != "C" and spec.ndim not in (None, 2):
        raise ValueError(f"{name} expects channel-last layouts (HWC, FHWC), got {spec.layout!r}")


class _ColorOp(Operator):
    """Shared plumbing: output dtype from ``dtype``, mask handling, HWC checks."""

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        _check_image_spec(self.schema.display_name, spec)
        dtype = node.arg("dtype")
        return [spec.with_(dtype=dtype) if dtype is not None else spec]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        image = inputs[0]
        dtype = args["dtype"]
        if not args["mask"]:
            if dtype is None or np.dtype(dtype) == image.dtype:
                return image
            return convert_saturate(image, dtype)
        return self.apply(image, args, dtype)

    def apply(self, image: np.ndarray, args: ArgView, dtype: Any) -> np.ndarray:
        raise NotImplementedError

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.color import color_gpu

        return color_gpu.color_matrix(self, inputs, args, ctx)


class _AffineColorOp(_ColorOp):
    """Brightness and contrast: an affine map of every element (GPU: one affine launch)."""

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.color import color_gpu

        return color_gpu.brightness_contrast(self, inputs, args, ctx)


@register
class ColorTwist(_ColorOp):
    """Adjusts hue, saturation, brightness and contrast of RGB/BGR images in one pass.

    Hue (degrees) and saturation act in YIQ space; contrast stretches around the input
    type's mid-gray (128 for uint8, 0.5 for floats); brightness multiplies.
    """

    schema = Schema(
        name="color_twist",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("brightness", "float", 1.0, "Brightness multiplier (0 = black)."),
            Arg("contrast", "float", 1.0, "Contrast multiplier (0 = uniform gray)."),
            Arg("hue", "float", 0.0, "Hue rotation in degrees."),
            Arg("saturation", "float", 1.0, "Saturation multiplier (0 = gray)."),
            _IMAGE_TYPE,
            _DTYPE,
            _MASK,
        ),
    )

    def apply(self, image: np.ndarray, args: ArgView, dtype: Any) -> np.ndarray:
        return kernels.color_twist(
            image,
            brightness=args["brightness"],
            contrast=args["contrast"],
            hue=args["hue"],
            saturation=args["saturation"],
            image_type=args["image_type"],
            dtype=dtype,
        )


@register
class Hsv(_ColorOp):
    """Shifts the hue (degrees) and scales saturation and value of RGB images, linearly in YIQ."""

    schema = Schema(
        name="hsv",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("hue", "float", 0.0, "Hue delta in degrees (wraps around 360)."),
            Arg("saturation", "float", 1.0, "Saturation multiplier."),
            Arg("value", "float", 1.0, "Value (brightness) multiplier."),
            _DTYPE,
            _MASK,
        ),
    )

    def apply(self, image: np.ndarray, args: ArgView, dtype: Any) -> np.ndarray:
        return kernels.hsv(
            image, hue=args["hue"], saturation=args["saturation"], value=args["value"], dtype=dtype
        )


@register
class Hue(_ColorOp):
    """Rotates the hue of RGB/BGR images by ``hue`` degrees."""

    schema = Schema(
        name="hue",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(Arg("hue", "float", 0.0, "Hue change in degrees."), _IMAGE_TYPE, _DTYPE, _MASK),
    )

    def apply(self, image: np.ndarray, args: ArgView, dtype: Any) -> np.ndarray:
        return kernels.hue(image, args["hue"], image_type=args["image_type"], dtype=dtype)


@register
class Saturation(_ColorOp):
    """Scales the saturation of RGB/BGR images (0 = gray, 1 = unchanged)."""

    schema = Schema(
        name="saturation",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("saturation", "float", 1.0, "Saturation multiplier."),
            _IMAGE_TYPE,
            _DTYPE,
            _MASK,
        ),
    )

    def apply(self, image: np.ndarray, args: ArgView, dtype: Any) -> np.ndarray:
        return kernels.saturation(
            image, args["saturation"], image_type=args["image_type"], dtype=dtype
        )


_BRIGHTNESS = Arg("brightness", "float", 1.0, "Brightness multiplier.")
_BRIGHTNESS_SHIFT = Arg(
    "brightness_shift",
    "float",
    0.0,
    "Shift in units of the output range (1.0 = the output type's max, or 1 for floats).",
)
_CONTRAST = Arg("contrast", "float", 1.0, "Contrast multiplier (0 = uniform gray).")
_CONTRAST_CENTER = Arg(
    "contrast_center",
    "float",
    None,
    "Input level unaffected by contrast (default: mid-gray, 128 for uint8, 0.5 for floats).",
)


@register
class BrightnessContrast(_AffineColorOp):
    """Adjusts brightness and contrast.

    ``out = brightness_shift * out_range + brightness * (contrast_center + contrast *
    (in - contrast_center))``, where ``out_range`` is the output type's max for integers and 1
    for floats; values are not rescaled between types (uint8 -> float keeps 0..255), as DALI.
    """

    schema = Schema(
        name="brightness_contrast",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(_BRIGHTNESS, _BRIGHTNESS_SHIFT, _CONTRAST, _CONTRAST_CENTER, _DTYPE, _MASK),
    )

    def apply(self, image: np.ndarray, args: ArgView, dtype: Any) -> np.ndarray:
        return kernels.brightness_contrast(
            image,
            brightness=args["brightness"],
            brightness_shift=args["brightness_shift"],
            contrast=args["contrast"],
            contrast_center=args["contrast_center"],
            dtype=dtype,
        )


@register
class Brightness(_AffineColorOp):
    """Adjusts brightness: ``out = brightness_shift * out_range + brightness * in``."""

    schema = Schema(
        name="brightness",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(_BRIGHTNESS, _BRIGHTNESS_SHIFT, _DTYPE, _MASK),
    )

    def apply(self, image: np.ndarray, args: ArgView, dtype: Any) -> np.ndarray:
        return kernels.brightness(image, args["brightness"], args["brightness_shift"], dtype=dtype)


@register
class Contrast(_AffineColorOp):
    """Adjusts contrast: ``out = contrast_center + contrast * (in - contrast_center)``."""

    schema = Schema(
        name="contrast",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(_CONTRAST, _CONTRAST_CENTER, _DTYPE, _MASK),
    )

    def apply(self, image: np.ndarray, args: ArgView, dtype: Any) -> np.ndarray:
        return kernels.contrast(image, args["contrast"], args["contrast_center"], dtype=dtype)


@register
class ColorSpaceConversion(Operator):
    """Converts HWC images between RGB, BGR, GRAY, YCbCr (BT.601 limited range, as DALI) and HSV."""

    schema = Schema(
        name="color_space_conversion",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg(
                "image_type",
                "str",
                REQUIRED,
                "Color space of the input.",
                per_sample=False,
                choices=_COLOR_SPACES,
            ),
            Arg(
                "output_type",
                "str",
                REQUIRED,
                "Color space of the output.",
                per_sample=False,
                choices=_COLOR_SPACES,
            ),
        ),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        _check_image_spec(self.schema.display_name, spec)
        hsv = "HSV" in (node.arg("image_type"), node.arg("output_type"))
        if hsv and spec.dtype is not None and spec.dtype != np.uint8 and spec.dtype.kind != "f":
            raise TypeError(f"HSV conversion needs uint8 or float input, got {spec.dtype}")
        return [spec]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        image = inputs[0]
        if image.ndim == 2 and image_type_channels(args["image_type"]) == 1:
            image = image[:, :, None]
        return color_space_conversion(image, args["image_type"], args["output_type"])

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.color import color_space_gpu

        return color_space_gpu.color_space_conversion(self, inputs, args, ctx)


@register
class LookupTable(Operator):
    """Maps integer values found in ``keys`` to the matching ``values``; others to ``default_value``."""

    schema = Schema(
        name="lookup_table",
        inputs=("input",),
        args=(
            Arg("keys", "int_list", (), "Input values to map."),
            Arg("values", "float_list", (), "Output value for each key."),
            Arg("default_value", "float", 0.0, "Output for values not in keys."),
            Arg(
                "dtype",
                "dtype",
                np.dtype(np.float32),
                "Output data type (DALI 2.4's default: FLOAT).",
                per_sample=False,
            ),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        keys, values = args.get("keys", ()), args.get("values", ())
        if "keys" not in arg_inputs and "values" not in arg_inputs and len(keys) != len(values):
            raise ValueError(
                f"fn.lookup_table: arguments 'keys' ({len(keys)}) and 'values' ({len(values)}) "
                "must have the same length"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        if spec.dtype is not None and spec.dtype.kind not in "uib":
            raise TypeError(f"lookup_table needs integer input, got {spec.dtype}")
        return [spec.with_(dtype=node.arg("dtype"))]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        return kernels.lookup_table(
            inputs[0], args["keys"], args["values"], args["default_value"], args["dtype"]
        )
