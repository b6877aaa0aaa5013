"""fn.random_crop_generator: a random crop window (anchor and shape) from an image shape.

The window is the one fn.random_resized_crop and decoders.image_random_crop draw (area
fraction ~ U(random_area), log-uniform aspect ratio, up to num_attempts draws, then a
centred window narrowed to the aspect-ratio range), from the sample's own random stream.
Its two outputs feed fn.slice, decoders.image_slice or anything taking a region:

    anchor, shape = fn.random_crop_generator(fn.shapes(images))
    crops = fn.slice(images, anchor, shape, axes=[0, 1])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.runtime.crop_window import random_crop_window
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

__all__ = ["RandomCropGenerator"]


@register
class RandomCropGenerator(Operator):
    """A random crop window of each input shape (HW or HWC): outputs anchor (y, x) and
    shape (h, w), int64, for fn.slice(..., axes=[0, 1])."""

    schema = Schema(
        name="random_crop_generator",
        inputs=("input",),
        num_outputs=2,
        args=(
            Arg("random_area", "float_pair", (0.08, 1.0), "Range of the window's area fraction."),
            Arg("random_aspect_ratio", "float_pair", (0.75, 1.333333), "Range of width / height."),
            Arg(
                "num_attempts",
                "int",
                10,
                "Draws before falling back to a centred window.",
                per_sample=False,
            ),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        if int(args.get("num_attempts", 10)) < 1:
            raise ValueError(
                f"fn.random_crop_generator: argument 'num_attempts' must be at least 1, "
                f"got {args['num_attempts']}"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [Spec(np.dtype(np.int64), 1, None), Spec(np.dtype(np.int64), 1, None)]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> tuple[np.ndarray, ...]:
        shape = np.asarray(inputs[0])
        if (
            shape.ndim != 1
            or shape.size not in (2, 3)
            or not np.issubdtype(shape.dtype, np.integer)
        ):
            raise ValueError(
                "fn.random_crop_generator: the input must be a 1-D integer shape, HW or HWC; "
                f"got {shape.dtype} {shape.tolist() if shape.size < 8 else shape.shape}"
            )
        h, w = int(shape[0]), int(shape[1])
        if h <= 0 or w <= 0:
            raise ValueError(f"fn.random_crop_generator: the input shape {shape.tolist()} is empty")
        y, x, ch, cw = random_crop_window(
            h,
            w,
            area=tuple(args["random_area"]),
            aspect_ratio=tuple(args["random_aspect_ratio"]),
            num_attempts=args["num_attempts"],
            rng=ctx.rng,
        )
        return np.array([y, x], np.int64), np.array([ch, cw], np.int64)
