"""Pixel-distorting image operators: fn.equalize (and fn.experimental.equalize),
fn.jpeg_compression_distortion and fn.grid_mask.

The CPU kernels are in :mod:`distortion_kernels` (OpenCV), the GPU backends in
:mod:`distortion_gpu`. Samples are HW, HWC or FHWC (frames processed alike).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import NO_HINTS, NodeHints
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.image._layouts import map_images
from chute.ops.image.distortion_kernels import equalize, grid_mask, jpeg_distort
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

__all__ = ["Equalize", "ExperimentalEqualize", "GridMask", "JpegCompressionDistortion"]


class _LayoutAware(Operator):
    """Remembers each node's input layout at build time (handed back as ``ctx.state``)."""

    def _remember(self, node: OpNode, spec: Spec) -> None:
        self.__dict__.setdefault("_layouts", {})[node.id] = spec.layout

    def setup(self, node: OpNode, hints: NodeHints = NO_HINTS, pipeline: Any = None) -> Any:
        return self.__dict__.get("_layouts", {}).get(node.id)


@register
class Equalize(_LayoutAware):
    """Performs grayscale/per-channel histogram equalization of uint8 images and videos."""

    schema = Schema(name="equalize", devices=("cpu", "gpu"), inputs=("input",))

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        self._remember(node, spec)
        name = self.schema.display_name
        if spec.dtype is not None and np.dtype(spec.dtype) != np.uint8:
            raise TypeError(f"{name}: takes uint8 input, got {np.dtype(spec.dtype)}")
        if spec.ndim is not None and spec.ndim not in (2, 3, 4):
            raise ValueError(f"{name}: expected HW, HWC, FHW or FHWC samples, got {spec.ndim} dims")
        return [spec]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        image = inputs[0]
        if image.dtype != np.uint8:
            raise TypeError(f"{self.schema.display_name}: takes uint8 input, got {image.dtype}")
        return map_images(image, ctx.state, lambda im, _f: equalize(im), self.schema.display_name)

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.image import distortion_gpu

        return distortion_gpu.equalize_batch(inputs, args, ctx, self.schema.display_name)


@register
class ExperimentalEqualize(Equalize):
    """Performs grayscale/per-channel histogram equalization (DALI's experimental name)."""

    schema = Schema(name="experimental.equalize", devices=("cpu", "gpu"), inputs=("input",))


@register
class JpegCompressionDistortion(_LayoutAware):
    """Introduces JPEG compression artifacts to RGB images: encode at ``quality``, decode.

    ``quality`` (per sample) is clamped to 1..100. Input: HWC or FHWC uint8 RGB. The GPU
    backend takes a round trip through the host (OpenCV's encoder and decoder).
    """

    schema = Schema(
        name="jpeg_compression_distortion",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg(
                "quality",
                "int",
                50,
                "JPEG quality from 1 (lowest) to 100 (highest); values outside are clamped.",
            ),
        ),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        self._remember(node, spec)
        if spec.dtype is not None and np.dtype(spec.dtype) != np.uint8:
            raise TypeError(
                f"fn.jpeg_compression_distortion: takes uint8 RGB input, got {np.dtype(spec.dtype)}"
            )
        if spec.ndim is not None and spec.ndim not in (3, 4):
            raise ValueError(
                f"fn.jpeg_compression_distortion: expected HWC or FHWC samples, got {spec.ndim} dims"
            )
        return [spec]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        quality = args["quality"]
        return map_images(
            inputs[0],
            ctx.state,
            lambda img, _f: jpeg_distort(img, quality),
            "fn.jpeg_compression_distortion",
        )

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.image import distortion_gpu

        return distortion_gpu.jpeg_distortion_batch(inputs, args, ctx)


@register
class GridMask(_LayoutAware):
    """Performs the gridmask augmentation: zeroes squares of a grid over the image.

    The grid repeats every ``tile`` pixels in x and y; its squares are ``ratio * tile``
    wide. It is rotated by ``angle`` (radians) around the origin, then shifted by
    (``shift_x``, ``shift_y``). Every argument may be per sample.
    """

    schema = Schema(
        name="grid_mask",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("angle", "float", 0.0, "Angle, in radians, by which the grid is rotated."),
            Arg("ratio", "float", 0.5, "Ratio between the black square's width and the tile's."),
            Arg("shift_x", "float", 0.0, "x component of the translation, after the rotation."),
            Arg("shift_y", "float", 0.0, "y component of the translation, after the rotation."),
            Arg("tile", "int", 100, "Length of a tile: black square plus spacing."),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        if "tile" in args and args["tile"] < 1:
            raise ValueError(
                f"fn.grid_mask: argument 'tile' must be at least 1, got {args['tile']}"
            )
        if "ratio" in args and not 0.0 <= args["ratio"] <= 1.0:
            raise ValueError(
                f"fn.grid_mask: argument 'ratio' must be in [0, 1], got {args['ratio']}"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        self._remember(node, spec)
        if spec.ndim is not None and spec.ndim not in (2, 3, 4):
            raise ValueError(
                f"fn.grid_mask: expected HW, HWC or FHWC samples, got {spec.ndim} dims"
            )
        return [spec]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        params = (args["tile"], args["ratio"], args["angle"], args["shift_x"], args["shift_y"])
        return map_images(
            inputs[0], ctx.state, lambda img, _f: grid_mask(img, *params), "fn.grid_mask"
        )

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.image import distortion_gpu

        return distortion_gpu.grid_mask_batch(inputs, args, ctx)
