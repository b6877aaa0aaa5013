"""fn.transforms.* (affine matrices), fn.coord_flip and fn.coord_transform (CPU, per sample).

Each ``fn.transforms`` operator yields one 2x3 float32 matrix per sample. An optional
input matrix is composed with it: by default the input applies first
(``reverse_order=True`` puts it last), as in DALI. In the legacy API these classes are
``ops.transforms.Rotation`` and so on.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import REQUIRED, Arg, Schema
from chute.graph.spec import Spec
from chute.ops.geometry import transforms_kernels as kernels
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

__all__ = [
    "Combine",
    "CoordFlip",
    "CoordTransform",
    "Crop",
    "Rotation",
    "Scale",
    "Shear",
    "Translation",
]

_REVERSE = Arg(
    "reverse_order",
    "bool",
    False,
    "Apply the input matrix after this transform instead of before it.",
    per_sample=False,
)
_CENTER = Arg("center", "float_list", None, "Centre (x, y) of the transform (default origin).")


class _Transform(Operator):
    """A matrix builder with an optional input matrix to compose with."""

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        if inputs and inputs[0].ndim not in (None, 2):
            raise ValueError(f"the input matrix must be 2-D (2x3), got {inputs[0].ndim} dims")
        return [Spec(np.dtype(np.float32), 2)]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        previous = inputs[0] if inputs else None
        return self.build(args, previous, args["reverse_order"])

    def build(self, args: ArgView, previous: Any, reverse: bool) -> np.ndarray:
        raise NotImplementedError


def _transform_schema(name: str, *args: Arg) -> Schema:
    return Schema(
        name=f"transforms.{name}", inputs=("input",), min_inputs=0, args=(*args, _REVERSE)
    )


@register
class Rotation(_Transform):
    """Rotation by ``angle`` degrees about ``center``: the matrix [[cos, -sin], [sin, cos]]
    (clockwise on screen, y pointing down), as DALI's fn.transforms.rotation."""

    schema = _transform_schema(
        "rotation", Arg("angle", "float", REQUIRED, "Angle in degrees."), _CENTER
    )

    def build(self, args: ArgView, previous: Any, reverse: bool) -> np.ndarray:
        return kernels.rotation(args["angle"], args["center"], previous, reverse)


@register
class Translation(_Transform):
    """Translation by ``offset`` (x, y)."""

    schema = _transform_schema(
        "translation", Arg("offset", "float_list", REQUIRED, "Offset (x, y).")
    )

    def build(self, args: ArgView, previous: Any, reverse: bool) -> np.ndarray:
        return kernels.translation(args["offset"], previous, reverse)


@register
class Scale(_Transform):
    """Scaling by ``scale`` (x, y) about ``center``."""

    schema = _transform_schema(
        "scale", Arg("scale", "float_list", REQUIRED, "Factors (x, y), or one for both."), _CENTER
    )

    def build(self, args: ArgView, previous: Any, reverse: bool) -> np.ndarray:
        return kernels.scale(args["scale"], args["center"], previous, reverse)


@register
class Shear(_Transform):
    """Shear [[1, sx], [sy, 1]] about ``center``, from factors or from ``angles`` in degrees."""

    schema = _transform_schema(
        "shear",
        Arg("shear", "float_list", None, "Shear factors (sx, sy)."),
        Arg("angles", "float_list", None, "Shear angles in degrees (factor = tan)."),
        _CENTER,
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        given = {*args, *arg_inputs}
        if ("shear" in given) == ("angles" in given):
            raise ValueError("fn.transforms.shear: give exactly one of 'shear' and 'angles'")

    def build(self, args: ArgView, previous: Any, reverse: bool) -> np.ndarray:
        return kernels.shear(args["shear"], args["angles"], args["center"], previous, reverse)


@register
class Crop(_Transform):
    """Maps the box [from_start, from_end] onto [to_start, to_end]; any number of dimensions
    (the longest argument's, as DALI): boxes as 4 coordinates map as 4-D points."""

    schema = _transform_schema(
        "crop",
        Arg("from_start", "float_list", (0.0,), "Source box start (one value: every axis)."),
        Arg("from_end", "float_list", (1.0,), "Source box end (one value: every axis)."),
        Arg("to_start", "float_list", (0.0,), "Destination box start (one value: every axis)."),
        Arg("to_end", "float_list", (1.0,), "Destination box end (one value: every axis)."),
        Arg("absolute", "bool", False, "Swap starts and ends where start > end.", per_sample=False),
    )

    def build(self, args: ArgView, previous: Any, reverse: bool) -> np.ndarray:
        return kernels.crop(
            args["from_start"],
            args["from_end"],
            args["to_start"],
            args["to_end"],
            args["absolute"],
            previous,
            reverse,
        )


@register
class Combine(Operator):
    """Composes two or more matrices so that the result applies them in the order given."""

    schema = Schema(name="transforms.combine", inputs=("inputs",), variadic=True, args=(_REVERSE,))

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        if len(inputs) < 2:
            raise ValueError("fn.transforms.combine needs at least two input matrices")
        return [Spec(np.dtype(np.float32), 2)]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        return kernels.combine(*inputs, reverse_order=args["reverse_order"])


@register(ops_aliases=("transforms.CoordFlip",))
class CoordFlip(Operator):
    """Reflects coordinates (N, D) about ``center_*`` on the axes flagged by ``flip_*``."""

    lane_safe = True

    schema = Schema(
        name="coord_flip",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg(
                "layout",
                "str",
                None,
                "Order of coordinates: x, xy or xyz (default by D).",
                per_sample=False,
            ),
            Arg("flip_x", "int", 1, "Flip x when nonzero."),
            Arg("flip_y", "int", 0, "Flip y when nonzero."),
            Arg("flip_z", "int", 0, "Flip z when nonzero."),
            Arg("center_x", "float", 0.5, "Mirror line of x."),
            Arg("center_y", "float", 0.5, "Mirror line of y."),
            Arg("center_z", "float", 0.5, "Mirror line of z."),
        ),
    )

    @staticmethod
    def layout_of(layout: str | None, shape: tuple[int, ...]) -> str:
        """The ``layout`` argument, or the one guessed from the points' last extent."""
        if layout is not None:
            return layout
        dims = shape[-1] if len(shape) else 0
        guessed = {1: "x", 2: "xy", 3: "xyz", 4: "xy", 6: "xyz"}.get(dims)
        if guessed is None:
            raise ValueError(f"cannot guess the layout of {dims} coordinates; pass layout")
        return guessed

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        coords = inputs[0]
        return kernels.coord_flip(
            coords,
            self.layout_of(args["layout"], np.shape(coords)),
            bool(args["flip_x"]),
            bool(args["flip_y"]),
            bool(args["flip_z"]),
            args["center_x"],
            args["center_y"],
            args["center_z"],
        )

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.geometry import coord_gpu

        return coord_gpu.coord_flip(self, inputs, args, ctx)


@register(ops_aliases=("transforms.CoordTransform",))
class CoordTransform(Operator):
    """Applies ``M @ p + T`` (or ``MT``, M and T side by side) to each point (row) p."""

    lane_safe = True

    schema = Schema(
        name="coord_transform",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("M", "any", None, "Matrix (out_dim, in_dim), a diagonal vector or a scalar."),
            Arg("T", "any", None, "Translation vector or scalar."),
            Arg(
                "MT", "any", None, "M and T side by side (out_dim, in_dim + 1), e.g. fn.transforms."
            ),
            Arg("dtype", "dtype", np.dtype(np.float32), "Output type.", per_sample=False),
        ),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [Spec(node.arg("dtype"), 2)]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        return kernels.coord_transform(
            inputs[0], M=args.raw("M"), T=args.raw("T"), MT=args.raw("MT"), dtype=args["dtype"]
        )

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.geometry import coord_gpu

        return coord_gpu.coord_transform(self, inputs, args, ctx)
