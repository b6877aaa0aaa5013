"""fn.segmentation.random_object_bbox, random_mask_pixel and select_masks (CPU, as DALI 2.4).

The arithmetic lives in :mod:`chute.ops.segmentation.segmentation_kernels`; every random
draw comes from ``ctx.rng``, so results depend on the seed and the sample's position only.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.segmentation import segmentation_kernels as kernels
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

__all__ = ["RandomMaskPixel", "RandomObjectBBox", "SelectMasks"]

_I32, _I64 = np.dtype(np.int32), np.dtype(np.int64)


def _const(name: str, type_: str, default: Any, doc: str, **kw: Any) -> Arg:
    return Arg(name, type_, default, doc, per_sample=False, **kw)


def _check_label_spec(name: str, spec: Spec, what: str) -> None:
    if spec.dtype is not None and spec.dtype.kind not in "biu":
        raise TypeError(f"{name} expects {what} of integer or bool labels, got {spec.dtype}")


@register(ops_name="RandomObjectBBox")
class RandomObjectBBox(Operator):
    """Randomly selects an object (a blob of connected pixels of one label) of a mask and
    returns its bounding box.

    With probability ``foreground_prob`` a class is drawn (uniformly among the labels present,
    or by ``class_weights``), then one of its blobs (among the ``k_largest``, of at least
    ``threshold`` in each extent); otherwise, or when no blob qualifies, the whole input is
    returned. ``format``: ``"anchor_shape"`` (two outputs), ``"start_end"`` (start and
    one-past-end) or ``"box"`` (one output, start then end); int32, one value per mask
    dimension. ``output_class`` adds the label of the chosen object (the background when
    the whole input was returned).
    """

    schema = Schema(
        name="segmentation.random_object_bbox",
        inputs=("input",),
        args=(
            Arg("background", "int", 0, "Background label (default 0, or one below classes)."),
            _const("cache_objects", "bool", False, "Remember the blobs of masks seen before."),
            Arg("class_weights", "float_list", None, "Relative probabilities of the classes."),
            Arg("classes", "int_list", None, "Labels considered foreground."),
            Arg("foreground_prob", "float", 1.0, "Probability of picking an object at all."),
            _const(
                "format",
                "str",
                "anchor_shape",
                "Output format: anchor_shape, start_end or box.",
                choices=("anchor_shape", "start_end", "box"),
            ),
            _const("ignore_class", "bool", False, "Pick among all blobs, whatever their class."),
            _const("k_largest", "int", None, "Pick only among the k largest blobs."),
            _const("output_class", "bool", False, "Also output the chosen object's label."),
            Arg("threshold", "int_list", None, "Minimum extent of a blob, per dimension."),
        ),
    )

    def num_outputs(self, args: Any, num_inputs: int = 1) -> int:
        box = args.get("format", "anchor_shape") == "box"
        return 1 + (not box) + bool(args.get("output_class", False))

    def check_args(self, args: dict[str, Any], arg_inputs: dict[str, Any]) -> None:
        name = self.schema.display_name
        given = set(args) | set(arg_inputs)
        if args.get("ignore_class"):
            clash = sorted(given & {"classes", "class_weights"})
            if args.get("output_class"):
                clash.append("output_class")
            if clash:
                raise ValueError(
                    f"{name}: argument '{clash[0]}' cannot be used with ignore_class=True"
                )
        k = args.get("k_largest")
        if k is not None and k < 1:
            raise ValueError(f"{name}: argument 'k_largest' must be at least 1, got {k}")
        prob = args.get("foreground_prob", 1.0)
        if not 0.0 <= prob <= 1.0:
            raise ValueError(
                f"{name}: argument 'foreground_prob' must be within [0, 1], got {prob}"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        _check_label_spec(self.schema.display_name, inputs[0], "a mask")
        out = [Spec(_I32, 1, None)] * (1 + (node.arg("format") != "box"))
        if node.arg("output_class"):
            out.append(Spec(_I32, 0, None))
        return out

    def setup(self, node: OpNode, hints: Any = None, pipeline: Any = None) -> Any:
        return kernels.ObjectCache() if node.arg("cache_objects") else None

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> Any:
        mask = np.asarray(inputs[0])
        if not 1 <= mask.ndim <= 6:
            raise ValueError(f"expected a mask of 1 to 6 dimensions, got shape {mask.shape}")
        if mask.dtype.kind not in "biu":
            raise TypeError(f"expected a mask of integer or bool labels, got {mask.dtype}")
        ignore = args["ignore_class"]
        choice = kernels.class_choice(
            args["background"] if args.given("background") else None,
            None if ignore else args["classes"],
            None if ignore else args["class_weights"],
        )
        threshold = args["threshold"]
        if threshold is not None and len(threshold) != mask.ndim:
            raise ValueError(
                f"argument 'threshold' needs {mask.ndim} values (one per mask dimension), "
                f"got {len(threshold)}"
            )
        found = None
        if ctx.rng.uniform() < args["foreground_prob"]:
            found = kernels.pick_object(
                mask,
                choice,
                ignore_class=ignore,
                threshold=threshold,
                k_largest=args["k_largest"],
                rng=ctx.rng,
                cache=ctx.state,
            )
        if found is None:
            lo, hi, label = np.zeros(mask.ndim, np.int64), np.asarray(mask.shape), choice.background
        else:
            lo, hi, label = found
        lo, hi = lo.astype(np.int32), hi.astype(np.int32)
        fmt = args["format"]
        if fmt == "box":
            outputs = [np.concatenate([lo, hi])]
        else:
            outputs = [lo, hi - lo if fmt == "anchor_shape" else hi]
        if args["output_class"]:
            outputs.append(np.array(label, np.int32))
        return outputs[0] if len(outputs) == 1 else tuple(outputs)


@register
class RandomMaskPixel(Operator):
    """Selects random pixel coordinates in a mask, sampled from a uniform distribution.

    With ``foreground`` nonzero the pixel is drawn among the foreground ones: those equal to
    ``value``, or above ``threshold`` (when the mask has none, any pixel is drawn). Outputs
    the int64 coordinates, one per mask dimension.
    """

    schema = Schema(
        name="segmentation.random_mask_pixel",
        inputs=("input",),
        args=(
            Arg("value", "int", None, "Pixels equal to this are foreground (excludes threshold)."),
            Arg("threshold", "float", 0.0, "Pixels above this are foreground (excludes value)."),
            Arg("foreground", "int", 0, "Draw from the foreground pixels when nonzero."),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict[str, Any]) -> None:
        given = set(args) | set(arg_inputs)
        if {"value", "threshold"} <= given:
            raise ValueError(
                f"{self.schema.display_name}: arguments 'value' and 'threshold' exclude each other"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        if spec.dtype is not None and spec.dtype.kind not in "biuf":
            raise TypeError(f"{self.schema.display_name} expects a numeric mask, got {spec.dtype}")
        return [Spec(_I64, 1, None)]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        mask = np.asarray(inputs[0])
        if mask.size == 0 or mask.ndim == 0:
            raise ValueError(f"expected a mask with at least one pixel, got shape {mask.shape}")
        return kernels.random_mask_pixel(
            mask, bool(args["foreground"]), args["value"], args["threshold"], ctx.rng
        )


@register
class SelectMasks(Operator):
    """Selects a subset of polygons by their mask ids.

    Inputs: ``mask_ids`` (1-D ints, no repeats), ``polygons`` ((P, 3) int: mask id, first
    vertex, end vertex) and ``vertices`` ((V, D), any type), as readers.coco gives them.
    Outputs the polygons of the selected masks in the order of ``mask_ids`` (every polygon
    of a mask, renumbered into the packed output ``vertices``); with ``reindex_masks`` their
    mask ids become their positions in ``mask_ids``.
    """

    schema = Schema(
        name="segmentation.select_masks",
        inputs=("mask_ids", "polygons", "vertices"),
        num_outputs=2,
        args=(
            _const(
                "reindex_masks",
                "bool",
                False,
                "Replace mask ids by their positions in mask_ids.",
            ),
        ),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        ids, polygons, vertices = inputs
        name = self.schema.display_name
        for spec, what, ndim in ((ids, "mask_ids", 1), (polygons, "polygons", 2)):
            if spec.dtype is not None and spec.dtype.kind not in "iu":
                raise TypeError(f"{name} expects integer {what}, got {spec.dtype}")
            if spec.ndim is not None and spec.ndim != ndim:
                raise ValueError(f"{name} expects {what} of {ndim} dims, got {spec.ndim}")
        if vertices.ndim is not None and vertices.ndim != 2:
            raise ValueError(f"{name} expects vertices of 2 dims, got {vertices.ndim}")
        return [Spec(_I32, 2, None), vertices.with_(layout=None)]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> tuple:
        ids, polygons, vertices = (np.asarray(x) for x in inputs)
        if ids.ndim != 1:
            raise ValueError(f"expected mask_ids as a 1-D list, got shape {ids.shape}")
        if polygons.ndim != 2 or polygons.shape[1] != 3:
            raise ValueError(
                f"expected polygons as (P, 3) rows [mask_id, start, end], got {polygons.shape}"
            )
        if vertices.ndim != 2:
            raise ValueError(f"expected vertices as (V, D) rows, got shape {vertices.shape}")
        return kernels.select_masks(ids, polygons.astype(np.int64), vertices, args["reindex_masks"])
