"""Window operators: fn.crop, fn.slice, fn.flip, fn.pad, fn.erase, fn.paste (CPU).

The work is in :mod:`crop_kernels`; these classes declare DALI's arguments (plus
``border`` and ``rel_crop``). Every numeric argument may be a per-sample DataNode;
the augmentations (flip, erase, paste) take a per-sample ``mask``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import DataNode, OpNode
from chute.graph.schema import REQUIRED, Arg, Schema
from chute.graph.spec import Spec
from chute.ops.geometry import crop_kernels
from chute.ops.geometry._border import cast_to
from chute.ops.geometry._op_common import (
    DTYPE,
    LayoutAware,
    border_arg,
    check_image,
    default_layout,
)
from chute.ops.tensors.constant_ops import as_node
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

__all__ = ["Crop", "Erase", "Flip", "Pad", "Paste", "Slice"]

_POLICY = Arg(
    "out_of_bounds_policy",
    "str",
    "error",
    "A window leaving the input: error, pad (fill_values / border) or trim_to_shape.",
    per_sample=False,
    choices=("error", "pad", "trim_to_shape"),
)
_FILL_VALUES = Arg("fill_values", "float_list", (0.0,), "Padding value, one or one per channel.")
_ROUNDING = Arg(
    "rounding",
    "str",
    "round",
    "How window anchors become whole pixels: round (halves away from zero) or truncate.",
    per_sample=False,
    choices=("round", "truncate"),
)


def _with_dtype(node: OpNode, spec: Spec) -> Spec:
    dtype = node.arg("dtype") if "dtype" in node.schema.arg_index else None
    return spec.with_(dtype=dtype) if dtype is not None else spec


@register
class Crop(Operator):
    """Cuts a window of ``crop`` (H, W) pixels, or ``rel_crop`` of the image size, placed at
    ``crop_pos_x``/``crop_pos_y`` in [0, 1] (0.5 = centred)."""

    schema = Schema(
        name="crop",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("crop", "float_list", None, "Window size (H, W), or one value for both."),
            Arg("crop_h", "float", None, "Window height (0 = the image's)."),
            Arg("crop_w", "float", None, "Window width (0 = the image's)."),
            Arg(
                "rel_crop", "float_list", None, "Window size as fractions (H, W) of the image size."
            ),
            Arg("crop_pos_x", "float", 0.5, "Horizontal anchor in [0, 1]."),
            Arg("crop_pos_y", "float", 0.5, "Vertical anchor in [0, 1]."),
            _POLICY,
            _FILL_VALUES,
            border_arg(),
            _ROUNDING,
            DTYPE,
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        given = {*args, *arg_inputs}
        if not ({"crop", "crop_h", "crop_w", "rel_crop"} & given):
            raise ValueError("fn.crop: give 'crop', 'crop_h'/'crop_w' or 'rel_crop'")
        if "rel_crop" in given and ({"crop", "crop_h", "crop_w"} & given):
            raise ValueError("fn.crop: 'rel_crop' cannot be combined with crop/crop_h/crop_w")
        crop = args.get("crop")
        if crop is not None and np.size(crop) not in (1, 2):
            raise ValueError(f"fn.crop: argument 'crop' takes (H, W) or one value, got {crop}")
        for key in ("crop", "crop_h", "crop_w"):
            value = args.get(key)
            if value is not None and np.any(np.asarray(value, dtype=np.float64) < 0):
                raise ValueError(f"fn.crop: argument '{key}' must be >= 0 (0 = whole), got {value}")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        check_image(self.schema.display_name, inputs[0])
        return [_with_dtype(node, inputs[0])]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        out = crop_kernels.crop(
            inputs[0],
            crop=args["crop"],
            crop_h=args["crop_h"],
            crop_w=args["crop_w"],
            rel_crop=args["rel_crop"],
            crop_pos_x=args["crop_pos_x"],
            crop_pos_y=args["crop_pos_y"],
            out_of_bounds_policy=args["out_of_bounds_policy"],
            fill_values=args["fill_values"],
            border=args["border"],
            rounding=args["rounding"],
        )
        return out if args["dtype"] is None else cast_to(out, args["dtype"])

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.geometry import crop_gpu

        return crop_gpu.crop(self, inputs, args, ctx)


@register
class Slice(LayoutAware):
    """Cuts a window given by an anchor and a shape (inputs, or start/end/shape arguments),
    along ``axes`` (default x then y, as DALI) or ``axis_names``."""

    schema = Schema(
        name="slice",
        inputs=("data", "anchor_in", "shape_in"),
        min_inputs=1,
        args=(
            Arg("start", "float_list", None, "Absolute start per sliced axis."),
            Arg("rel_start", "float_list", None, "Start as fractions of the extents."),
            Arg("end", "float_list", None, "Absolute end per sliced axis."),
            Arg("rel_end", "float_list", None, "End as fractions of the extents."),
            Arg("shape", "float_list", None, "Absolute extent per sliced axis."),
            Arg("rel_shape", "float_list", None, "Extent as fractions of the extents."),
            Arg(
                "axes", "int_list", (1, 0), "Axes the values refer to, in order.", per_sample=False
            ),
            Arg(
                "axis_names",
                "str",
                None,
                "Axes by layout letters (overrides axes).",
                per_sample=False,
            ),
            Arg(
                "normalized_anchor", "bool", True, "The anchor input is relative.", per_sample=False
            ),
            Arg("normalized_shape", "bool", True, "The shape input is relative.", per_sample=False),
            _POLICY,
            _FILL_VALUES,
            border_arg(),
            _ROUNDING,
        ),
    )

    def convert_input(self, index: int, x: Any) -> DataNode:
        # as DALI, the anchor and shape may be constants: fn.slice(shape, 0, 1, axes=[0])
        if index == 0:
            return super().convert_input(index, x)
        return as_node(self.schema.display_name, x)

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        names = node.arg("axis_names")
        layout = default_layout(spec.ndim or 0, spec.layout)
        if names and layout and any(n not in layout for n in names):
            raise ValueError(f"axis_names {names!r} are not all in the layout {layout!r}")
        self.remember_layout(node, spec)
        return [spec]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        data = inputs[0]
        axes, names = args["axes"], args["axis_names"]
        layout = default_layout(data.ndim, ctx.state)
        if len(inputs) >= 3:
            anchor, extent = inputs[1], inputs[2]
            # as DALI: integer anchors and shapes are absolute whatever normalized_* say
            rel_anchor = args["normalized_anchor"] and np.asarray(anchor).dtype.kind == "f"
            rel_extent = args["normalized_shape"] and np.asarray(extent).dtype.kind == "f"
        else:
            chosen = crop_kernels.axes_from(data.ndim, axes, names, layout, (1, 0))
            anchor, extent = self._from_args(data.shape, chosen, args)
            rel_anchor = rel_extent = False
        return crop_kernels.slice_(
            data,
            anchor,
            extent,
            axes=axes,
            axis_names=names,
            layout=layout,
            normalized_anchor=rel_anchor,
            normalized_shape=rel_extent,
            out_of_bounds_policy=args["out_of_bounds_policy"],
            fill_values=args["fill_values"],
            border=args["border"],
            rounding=args["rounding"],
        )

    @staticmethod
    def _from_args(shape: tuple, axes: list[int], args: ArgView) -> tuple[list, list]:
        """Absolute (anchor, extent) per sliced axis from start/end/shape and their rel_ forms."""
        sizes = np.array([shape[a] for a in axes], dtype=np.float64)

        def pick(absolute: str, relative: str) -> np.ndarray | None:
            if args[absolute] is not None and args[relative] is not None:
                raise ValueError(f"give '{absolute}' or '{relative}', not both")
            if args[absolute] is not None:
                return np.asarray(args[absolute], dtype=np.float64)
            if args[relative] is not None:
                return np.asarray(args[relative], dtype=np.float64) * sizes
            return None

        start = pick("start", "rel_start")
        end = pick("end", "rel_end")
        extent = pick("shape", "rel_shape")
        if end is not None and extent is not None:
            raise ValueError("give an end or a shape, not both")
        start = np.zeros_like(sizes) if start is None else start
        if end is not None:
            extent = end - start
        elif extent is None:
            extent = sizes - start
        return list(start), list(extent)


@register
class Flip(Operator):
    """Mirrors images left-right (``horizontal``) and/or upside down (``vertical``)."""

    lane_safe = True

    schema = Schema(
        name="flip",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("horizontal", "int", 1, "Flip along the width when nonzero."),
            Arg("vertical", "int", 0, "Flip along the height when nonzero."),
            Arg("depthwise", "int", 0, "Volumes only; must be 0 for images."),
        ),
        maskable=True,
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        check_image(self.schema.display_name, inputs[0])
        return [inputs[0]]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        if args["depthwise"]:
            raise ValueError("depthwise flips need volumes (DHWC); images have no depth")
        return crop_kernels.flip(inputs[0], args["horizontal"], args["vertical"])

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.geometry import crop_gpu

        return crop_gpu.flip(self, inputs, args, ctx)


@register
class Pad(LayoutAware):
    """Pads the end of the chosen axes to the batch's largest extent (or ``shape``), rounded up
    to a multiple of ``align``; new elements take ``fill_value`` or follow ``border``.

    A ``fill_value`` outside the output type's range saturates (-1 into uint8 gives 0); DALI
    2.4 converts it unchecked (255 on x86), a deliberate difference (docs/parity.md).
    """

    kind = "batch"
    schema = Schema(
        name="pad",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("axes", "int_list", None, "Axes to pad (default: all).", per_sample=False),
            Arg(
                "axis_names",
                "str",
                None,
                "Axes by layout letters (overrides axes).",
                per_sample=False,
            ),
            Arg("shape", "int_list", None, "Minimum extents; -1 = the batch maximum."),
            Arg("align", "int_list", None, "Extents become multiples of these (one or per axis)."),
            Arg(
                "fill_value",
                "float_list",
                (0.0,),
                "Padding value, one or one per channel.",
                per_sample=False,
            ),
            border_arg(),
        ),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        self.remember_layout(node, inputs[0])
        return [inputs[0]]

    def run_batch(self, inputs: list[list[np.ndarray]], args: Any, ctx: Any) -> list[np.ndarray]:
        samples = inputs[0]
        if not samples:
            return []
        ndim = samples[0].ndim
        layout = default_layout(ndim, ctx.state)
        chosen = crop_kernels.axes_from(ndim, args["axes"], args["axis_names"], layout, range(ndim))
        largest = [max(s.shape[a] for s in samples) for a in chosen]
        shapes, aligns = args.column("shape"), args.column("align")
        out: list[Any] = [None] * len(samples)

        def work(i: int) -> None:
            wanted = shapes[i]
            target = (
                largest if wanted is None else [m if w < 0 else w for w, m in zip(wanted, largest)]
            )
            out[i] = crop_kernels.pad(
                samples[i],
                axes=chosen,
                shape=target,
                align=aligns[i],
                fill_value=args["fill_value"],
                border=args["border"],
            )

        failures = ctx.pool.run(work, len(samples))
        if failures:
            i, exc = failures[0]
            if type(exc) is ValueError:  # a batch operator: name the sample
                raise ValueError(f"sample {i}: {exc}") from exc
            raise exc
        return out

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.geometry import crop_gpu

        return crop_gpu.pad(self, inputs, args, ctx)


@register
class Erase(LayoutAware):
    """Fills rectangular regions (``anchor``/``shape``, several regions back to back) with
    ``fill_value``."""

    schema = Schema(
        name="erase",
        inputs=("input",),
        args=(
            Arg("anchor", "float_list", (), "Region starts, len(axes) values per region."),
            Arg("shape", "float_list", REQUIRED, "Region extents, len(axes) values per region."),
            Arg("axes", "int_list", None, "Axes the values refer to.", per_sample=False),
            Arg(
                "axis_names",
                "str",
                None,
                "Axes by layout letters (default 'HW').",
                per_sample=False,
            ),
            Arg("fill_value", "float_list", (0.0,), "Value, one or one per channel."),
            Arg(
                "normalized", "bool", None, "Both anchor and shape are relative.", per_sample=False
            ),
            Arg("normalized_anchor", "bool", False, "The anchor is relative.", per_sample=False),
            Arg("normalized_shape", "bool", False, "The shape is relative.", per_sample=False),
            Arg("centered_anchor", "bool", False, "Anchors are region centres.", per_sample=False),
        ),
        maskable=True,
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        self.remember_layout(node, inputs[0])
        return [inputs[0]]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        image = inputs[0]
        return crop_kernels.erase(
            image,
            anchor=args["anchor"],
            shape=args["shape"],
            axes=args["axes"],
            axis_names=args["axis_names"],
            layout=default_layout(image.ndim, ctx.state),
            fill_value=args["fill_value"],
            normalized=args["normalized"],
            normalized_anchor=args["normalized_anchor"],
            normalized_shape=args["normalized_shape"],
            centered_anchor=args["centered_anchor"],
        )


@register
class Paste(Operator):
    """Places each image on a canvas ``ratio`` times larger, filled with ``fill_value``, at
    ``paste_x``/``paste_y`` in [0, 1]."""

    schema = Schema(
        name="paste",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("ratio", "float", REQUIRED, "Canvas size / image size (>= 1)."),
            Arg("fill_value", "float_list", (0.0,), "Canvas colour, one or one per channel."),
            Arg("paste_x", "float", 0.5, "Horizontal position in [0, 1]."),
            Arg("paste_y", "float", 0.5, "Vertical position in [0, 1]."),
            Arg("min_canvas_size", "float", 0.0, "Lower bound of each canvas extent."),
            Arg(
                "n_channels",
                "int",
                3,
                "Accepted for DALI compatibility; taken from the image.",
                per_sample=False,
            ),
        ),
        maskable=True,
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        check_image(self.schema.display_name, inputs[0])
        return [inputs[0]]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        return crop_kernels.paste(
            inputs[0],
            ratio=args["ratio"],
            fill_value=args["fill_value"],
            paste_x=args["paste_x"],
            paste_y=args["paste_y"],
            min_canvas_size=args["min_canvas_size"],
        )

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.geometry import crop_gpu

        return crop_gpu.paste(self, inputs, args, ctx)
