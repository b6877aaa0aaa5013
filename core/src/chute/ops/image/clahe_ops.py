"""fn.clahe: contrast limited adaptive histogram equalization of uint8 images.

The CPU kernel is :mod:`clahe_kernels` (OpenCV's CLAHE: what DALI 2.4's CPU backend runs,
equal to it pixel for pixel); the GPU backend is :mod:`clahe_gpu`. Images are HWC (or
HW) uint8 with 1 or 3 (RGB) channels. DALI 2.4 has fn.clahe, no fn.experimental.clahe.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import REQUIRED, Arg, Schema
from chute.graph.spec import Spec
from chute.ops.image import clahe_kernels
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

__all__ = ["Clahe", "check_clahe_args", "check_clahe_image"]

OP = "fn.clahe"


def check_clahe_args(args: Any) -> None:
    """DALI's rules for the constant arguments (tiles positive, bins a power of 2)."""
    for name in ("tiles_x", "tiles_y"):
        value = args.get(name)
        if value is not None and value < 1:
            raise ValueError(f"{OP}: argument '{name}' must be positive, got {value}")
    bins = args.get("bins")
    if bins is not None and (bins < 1 or bins & (bins - 1)):
        raise ValueError(f"{OP}: argument 'bins' must be a power of 2, got {bins}")


def check_clahe_image(image: Any) -> None:
    """uint8, HW or HWC with 1 or 3 channels."""
    if np.dtype(image.dtype) != np.uint8:
        raise TypeError(f"{OP}: takes uint8 images, got {np.dtype(image.dtype)}")
    if image.ndim not in (2, 3) or (image.ndim == 3 and image.shape[2] not in (1, 3)):
        raise ValueError(f"{OP}: takes HWC images of 1 or 3 channels (or HW), got {image.shape}")


@register
class Clahe(Operator):
    """Contrast Limited Adaptive Histogram Equalization: each tile's histogram is clipped
    and equalized, and pixels blend the four nearest tiles' tables bilinearly (OpenCV's
    algorithm). RGB images are equalized on Lab's L only (``luma_only``) or per channel."""

    schema = Schema(
        name="clahe",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("tiles_x", "int", REQUIRED, "Tiles across the width (positive).", per_sample=False),
            Arg("tiles_y", "int", REQUIRED, "Tiles down the height (positive).", per_sample=False),
            Arg(
                "clip_limit",
                "float",
                REQUIRED,
                "Clip at clip_limit * tile_area / bins counts per bin (<= 0: no clipping).",
                per_sample=False,
            ),
            Arg(
                "bins",
                "int",
                256,
                "Histogram bins, a power of 2 (uint8 images use 256, as DALI's CPU does).",
                per_sample=False,
            ),
            Arg(
                "luma_only",
                "bool",
                True,
                "RGB images: equalize the luminance (Lab's L) only, else each channel.",
                per_sample=False,
            ),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        check_clahe_args(args)

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        if spec.dtype is not None and np.dtype(spec.dtype) != np.uint8:
            raise TypeError(f"{OP}: takes uint8 images, got {np.dtype(spec.dtype)}")
        if spec.layout and spec.layout not in ("HWC", "HW"):
            raise ValueError(f"{OP}: expected layout HWC (or HW), got {spec.layout!r}")
        if spec.ndim is not None and spec.ndim not in (2, 3):
            raise ValueError(f"{OP}: expected HWC (or HW) images, got {spec.ndim} dims")
        return [spec]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        image = inputs[0]
        check_clahe_image(image)
        return clahe_kernels.clahe(
            image, args["tiles_x"], args["tiles_y"], args["clip_limit"], args["luma_only"]
        )

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.image import clahe_gpu

        return clahe_gpu.clahe(inputs, args, ctx)
