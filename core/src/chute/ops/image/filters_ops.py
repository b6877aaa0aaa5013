"""Convolution-like image operators: fn.filter, fn.laplacian, fn.experimental.median_blur,
fn.experimental.dilate and fn.experimental.erode.

Samples are HW, HWC or FHWC (a sequence: every frame alike, or with fn.filter one filter per
frame). The CPU kernels are in :mod:`filters_kernels` (OpenCV, which releases the GIL), the
batched GPU kernels in :mod:`filters_gpu` (one launch per batch over a table of samples).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import NO_HINTS, NodeHints
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.image._layouts import map_images
from chute.ops.image.filters_kernels import (
    FILTER_BORDERS,
    MORPH_BORDERS,
    filter2d,
    laplacian,
    median_blur,
    morphology,
)
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

__all__ = ["Dilate", "Erode", "Filter", "Laplacian", "MedianBlur"]

_FILTER_TYPES = {
    np.dtype(t) for t in (np.int8, np.uint8, np.int16, np.uint16, np.float16, np.float32)
}


def _image_spec(op: str, spec: Spec) -> None:
    if spec.ndim is not None and spec.ndim not in (2, 3, 4):
        raise ValueError(f"{op}: expected HW, HWC or FHWC samples, got {spec.ndim} dims")


class _LayoutAware(Operator):
    """Remembers each node's input layout at build time (handed back as ``ctx.state``)."""

    def _remember(self, node: OpNode, spec: Spec) -> None:
        self.__dict__.setdefault("_layouts", {})[node.id] = spec.layout

    def setup(self, node: OpNode, hints: NodeHints = NO_HINTS, pipeline: Any = None) -> Any:
        return self.__dict__.get("_layouts", {}).get(node.id)


@register(legacy=("experimental.filter",))
class Filter(_LayoutAware):
    """Convolves the image with the provided filter (a correlation: the filter is not flipped).

    Inputs: ``data`` (HW, HWC or FHWC), ``filter`` (a float32 2-D array per sample, or one
    per frame for sequences) and an optional ``fill_value`` (a scalar per sample, used with
    ``border="constant"``). ``anchor`` (y, x) places the filter over the output pixel; -1
    centres it. ``mode="valid"`` returns only the pixels whose window is inside the image.
    """

    schema = Schema(
        name="filter",
        devices=("cpu", "gpu"),
        inputs=("data", "filter", "fill_value"),
        min_inputs=2,
        args=(
            Arg(
                "anchor",
                "int_list",
                (-1,),
                "Position (y, x) in the filter aligned with the output pixel; -1 centres it. "
                "Per sample.",
            ),
            Arg(
                "border",
                "str",
                "reflect_101",
                "Pixels outside the image: reflect_101, reflect_1001, wrap, clamp or constant "
                "(also reflect = reflect_1001, replicate = clamp).",
                per_sample=False,
                choices=tuple(FILTER_BORDERS),
            ),
            Arg("dtype", "dtype", None, "Output type (default: the input's).", per_sample=False),
            Arg(
                "mode",
                "str",
                "same",
                "same: output as large as the input; valid: only windows inside the image.",
                per_sample=False,
                choices=("same", "valid"),
            ),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        anchor = args.get("anchor")
        if anchor is not None and len(anchor) not in (1, 2):
            raise ValueError(f"fn.filter: argument 'anchor' takes 1 or 2 values, got {anchor}")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        _image_spec("fn.filter", spec)
        self._remember(node, spec)
        if spec.dtype is not None and np.dtype(spec.dtype) not in _FILTER_TYPES:
            raise TypeError(
                f"fn.filter: input type must be one of int8, uint8, int16, uint16, float16, "
                f"float32, got {np.dtype(spec.dtype)}"
            )
        dtype = node.arg("dtype")
        return [spec.with_(dtype=dtype) if dtype is not None else spec]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        image, kernels = inputs[0], np.asarray(inputs[1])
        fill = 0.0
        if len(inputs) > 2:
            fill_arr = np.asarray(inputs[2]).ravel()
            if fill_arr.size != 1:
                raise ValueError(
                    f"fn.filter: 'fill_value' must be a scalar, got {fill_arr.size} values"
                )
            fill = float(fill_arr[0])
        if image.dtype not in _FILTER_TYPES:
            raise TypeError(f"fn.filter: unsupported input type {image.dtype}")
        per_frame = (ctx.state or "F" * (image.ndim == 4)).startswith("F") and kernels.ndim == 3
        if kernels.ndim != 2 and not per_frame:
            raise ValueError(
                f"fn.filter: argument 'filter' must be a 2-D array (or one per frame of a "
                f"sequence), got shape {kernels.shape}"
            )
        if per_frame and len(kernels) != len(image):
            raise ValueError(
                f"fn.filter: {len(kernels)} filters for a sequence of {len(image)} frames"
            )
        dtype = args["dtype"] or image.dtype

        def run(frame: np.ndarray, f: int | None) -> np.ndarray:
            k = kernels[f] if per_frame else kernels
            return filter2d(frame, k, args["anchor"], args["border"], fill, args["mode"], dtype)

        return map_images(image, ctx.state, run, "fn.filter")

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.image import filters_gpu

        return filters_gpu.filter_batch(inputs, args, ctx)


@register
class Laplacian(_LayoutAware):
    """Computes the Laplacian of an input: the sum of second derivatives along H and W.

    Each partial derivative is a separable convolution: a second-derivative window of
    ``window_size`` along its axis and binomial smoothing windows of ``smoothing_size``
    (default: ``window_size``) along the other. Both take one value or (H, W), per sample;
    ``scale`` multiplies each partial derivative, ``normalized_kernel`` divides the
    binomial parts by their sums instead. Borders reflect (reflect_101).
    """

    schema = Schema(
        name="laplacian",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("window_size", "int_list", (3,), "Derivative window: odd, 3 to 23; per axis."),
            Arg(
                "smoothing_size",
                "int_list",
                None,
                "Smoothing window: odd, 1 to 23; per axis (default: window_size).",
            ),
            Arg("scale", "float_list", (1.0,), "Factor of each partial derivative; per axis."),
            Arg(
                "normalized_kernel",
                "bool",
                False,
                "Scale the windows by 2**-(sum of window sizes - ndim - 2); excludes 'scale'.",
                per_sample=False,
            ),
            Arg("dtype", "dtype", None, "Output type (default: the input's).", per_sample=False),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        if args.get("normalized_kernel") and ("scale" in args or "scale" in arg_inputs):
            raise ValueError(
                "fn.laplacian: argument 'scale' cannot be given with normalized_kernel=True"
            )
        for name, lo in (("window_size", 3), ("smoothing_size", 1)):
            for w in args.get(name) or ():
                if w % 2 == 0 or not lo <= w <= 23:
                    raise ValueError(
                        f"fn.laplacian: argument '{name}' must be odd and in [{lo}, 23], got {w}"
                    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        _image_spec("fn.laplacian", spec)
        self._remember(node, spec)
        dtype = node.arg("dtype")
        return [spec.with_(dtype=dtype) if dtype is not None else spec]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        image = inputs[0]
        params = (
            args["window_size"],
            args["smoothing_size"],
            args["scale"],
            args["normalized_kernel"],
            args["dtype"] or image.dtype,
        )
        return map_images(image, ctx.state, lambda im, _f: laplacian(im, *params), "fn.laplacian")

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.image import filters_gpu

        return filters_gpu.laplacian_batch(inputs, args, ctx)


@register
class MedianBlur(_LayoutAware):
    """Median blur: each pixel becomes the median of its (W, H) window, per channel.

    Pixels outside the image replicate the edge. ``window_size`` is one odd value or
    (width, height), per sample.
    """

    schema = Schema(
        name="experimental.median_blur",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(Arg("window_size", "int_list", (3, 3), "Odd window (width, height); per sample."),),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        if "window_size" not in args:
            return
        window = args["window_size"]
        if len(window) not in (1, 2) or any(w < 1 or w % 2 == 0 for w in window):
            raise ValueError(
                "fn.experimental.median_blur: argument 'window_size' takes one or two odd "
                f"positive values, got {window}"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        _image_spec("fn.experimental.median_blur", inputs[0])
        self._remember(node, inputs[0])
        return [inputs[0]]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        window = args["window_size"]
        return map_images(
            inputs[0],
            ctx.state,
            lambda im, _f: median_blur(im, window),
            "fn.experimental.median_blur",
        )

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.image import filters_gpu

        return filters_gpu.median_batch(inputs, args, ctx)


def _morph_schema(name: str, what: str) -> Schema:
    return Schema(
        name=name,
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg(
                "mask_size",
                "int_list",
                (3, 3),
                "Size (width, height) of the rectangular structuring element; per sample.",
            ),
            Arg(
                "anchor",
                "int_list",
                (-1, -1),
                "Anchor (x, y) in the structuring element; -1 centres it. Per sample.",
            ),
            Arg(
                "iterations",
                "int",
                1,
                f"How many times to {what}: k times equals one mask k * (size - 1) + 1 wide.",
                per_sample=False,
            ),
            Arg(
                "border_mode",
                "str",
                "constant",
                "Pixels outside the image: constant (they take no part), replicate, reflect, "
                "reflect_101 or wrap.",
                per_sample=False,
                choices=MORPH_BORDERS,
            ),
        ),
    )


class _Morphology(_LayoutAware):
    op = "dilate"

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        name = self.schema.display_name
        size = args.get("mask_size", (3, 3))
        if len(size) not in (1, 2) or any(s < 1 for s in size):
            raise ValueError(
                f"{name}: argument 'mask_size' takes 1 or 2 positive values, got {size}"
            )
        anchor = args.get("anchor", (-1, -1))
        if len(anchor) not in (1, 2):
            raise ValueError(f"{name}: argument 'anchor' takes 1 or 2 values, got {anchor}")
        if args.get("iterations", 1) < 1:
            raise ValueError(
                f"{name}: argument 'iterations' must be at least 1, got {args['iterations']}"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        _image_spec(self.schema.display_name, inputs[0])
        self._remember(node, inputs[0])
        return [inputs[0]]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        params = (args["mask_size"], args["anchor"], args["iterations"], args["border_mode"])
        return map_images(
            inputs[0],
            ctx.state,
            lambda im, _f: morphology(im, self.op, *params),
            self.schema.display_name,
        )

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.image import filters_gpu

        return filters_gpu.morphology_batch(self.op, inputs, args, ctx)


@register
class Dilate(_Morphology):
    """Performs a dilation: each pixel becomes the maximum under the structuring element."""

    op = "dilate"
    schema = _morph_schema("experimental.dilate", "dilate")


@register
class Erode(_Morphology):
    """Performs an erosion: each pixel becomes the minimum under the structuring element."""

    op = "erode"
    schema = _morph_schema("experimental.erode", "erode")
