"""Warp operators: fn.warp_affine, fn.rotate, fn.jitter, fn.water, fn.sphere (CPU, per sample).

The pixel work is in :mod:`warp_kernels` and :mod:`distort_kernels`. Every numeric
argument may be a per-sample DataNode (a random angle, a matrix from fn.transforms),
and each takes a per-sample ``mask``: samples whose mask is 0 pass through unchanged.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import REQUIRED, Arg, Schema
from chute.graph.spec import Spec
from chute.ops.geometry import distort_kernels, warp_kernels
from chute.ops.geometry._op_common import border_arg, check_image, interp_arg
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

__all__ = ["Jitter", "Rotate", "Sphere", "WarpAffine", "Water"]

_FILL_OR_CLAMP = Arg(
    "fill_value",
    "float_list",
    None,
    "Value for pixels from outside the input (one or per channel); if not given, the "
    "edge repeats (unless border says otherwise).",
)


def output_size(value: Any) -> tuple[int, int] | None:
    """The ``size`` argument as (h, w), None for the input's size."""
    if value is None or len(value) == 0:
        return None
    values = np.broadcast_to(np.asarray(value, dtype=np.float64).ravel(), (2,))
    return round(float(values[0])), round(float(values[1]))


class _ImageOp(Operator):
    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        check_image(self.schema.display_name, inputs[0])
        return [inputs[0]]


@register
class WarpAffine(_ImageOp):
    """Applies an affine transform: by default the 2x3 ``matrix`` maps output pixel
    coordinates to the input coordinates sampled (``inverse_map=True``, as DALI).

    The matrix may be an argument (constant or per sample, e.g. from fn.transforms) or a
    second input.
    """

    schema = Schema(
        name="warp_affine",
        devices=("cpu", "gpu"),
        inputs=("input", "matrix_in"),
        min_inputs=1,
        args=(
            Arg("matrix", "any", None, "2x3 matrix (6 values), per sample or constant."),
            Arg("size", "float_list", None, "Output size (H, W); default the input's."),
            Arg("inverse_map", "bool", True, "The matrix maps output to input.", per_sample=False),
            interp_arg(),
            _FILL_OR_CLAMP,
            border_arg(None),
        ),
        maskable=True,
    )

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        matrix = inputs[1] if len(inputs) > 1 else args.raw("matrix")
        if matrix is None:
            raise ValueError("give the 2x3 'matrix' as an argument or as the second input")
        return warp_kernels.warp_affine(
            inputs[0],
            matrix,
            size=output_size(args["size"]),
            inverse_map=args["inverse_map"],
            interp_type=args["interp_type"],
            fill_value=args["fill_value"],
            border=args["border"],
        )

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.geometry import warp_gpu

        return warp_gpu.warp_affine(self, inputs, args, ctx)


@register
class Rotate(_ImageOp):
    """Rotates images counter-clockwise by ``angle`` degrees about their centres.

    The output is ``size`` if given, else the input size with ``keep_size``, else the
    rotated bounding box (sized as DALI does).
    """

    schema = Schema(
        name="rotate",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("angle", "float", REQUIRED, "Counter-clockwise angle in degrees."),
            Arg("keep_size", "bool", False, "Keep the input size.", per_sample=False),
            Arg("size", "float_list", None, "Output size (H, W)."),
            interp_arg(),
            _FILL_OR_CLAMP,
            border_arg(None),
        ),
        maskable=True,
    )

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        return warp_kernels.rotate(
            inputs[0],
            args["angle"],
            keep_size=args["keep_size"],
            size=output_size(args["size"]),
            interp_type=args["interp_type"],
            fill_value=args["fill_value"],
            border=args["border"],
        )

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.geometry import warp_gpu

        return warp_gpu.rotate(self, inputs, args, ctx)


@register
class Jitter(_ImageOp):
    """Moves each pixel by a random offset of up to about ``nDegree / 2`` pixels per axis."""

    schema = Schema(
        name="jitter",
        inputs=("input",),
        args=(
            Arg("nDegree", "int", 2, "Size of the neighbourhood pixels are drawn from."),
            interp_arg("nn", "nn or linear."),
            Arg(
                "fill_value", "float", 0.0, "Accepted for DALI compatibility (sources are clamped)."
            ),
        ),
        maskable=True,
    )

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        return distort_kernels.jitter(inputs[0], ctx.rng, args["nDegree"], args["interp_type"])


@register
class Water(_ImageOp):
    """Ripples images: pixel (x, y) reads (x + ampl_x sin(freq_x y + phase_x),
    y + ampl_y cos(freq_y x + phase_y))."""

    schema = Schema(
        name="water",
        inputs=("input",),
        args=(
            Arg("ampl_x", "float", 10.0, "Amplitude of the horizontal wave (pixels)."),
            Arg("ampl_y", "float", 10.0, "Amplitude of the vertical wave (pixels)."),
            Arg("freq_x", "float", 2 * np.pi / 128, "Frequency of the horizontal wave (rad/px)."),
            Arg("freq_y", "float", 2 * np.pi / 128, "Frequency of the vertical wave (rad/px)."),
            Arg("phase_x", "float", 0.0, "Phase of the horizontal wave (rad)."),
            Arg("phase_y", "float", 0.0, "Phase of the vertical wave (rad)."),
            interp_arg("nn", "nn or linear."),
            Arg("fill_value", "float_list", (0.0,), "Value for pixels from outside the image."),
            border_arg(),
        ),
        maskable=True,
    )

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        return distort_kernels.water(
            inputs[0],
            ampl_x=args["ampl_x"],
            ampl_y=args["ampl_y"],
            freq_x=args["freq_x"],
            freq_y=args["freq_y"],
            phase_x=args["phase_x"],
            phase_y=args["phase_y"],
            interp_type=args["interp_type"],
            fill_value=args["fill_value"],
            border=args["border"],
        )


@register
class Sphere(_ImageOp):
    """Bulges images as if seen on a sphere."""

    schema = Schema(
        name="sphere",
        inputs=("input",),
        args=(
            interp_arg("nn", "nn or linear."),
            Arg("fill_value", "float_list", (0.0,), "Value for pixels from outside the image."),
            border_arg(),
        ),
        maskable=True,
    )

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        return distort_kernels.sphere(
            inputs[0],
            interp_type=args["interp_type"],
            fill_value=args["fill_value"],
            border=args["border"],
        )
