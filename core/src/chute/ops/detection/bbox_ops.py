"""Bounding-box operators: fn.bb_flip, fn.bbox_paste and fn.box_encoder (SSD).

Boxes are ``(n, 4)`` float tensors of relative coordinates. The arithmetic lives in
:mod:`chute.ops.detection.bbox_kernels`; bb_flip and box_encoder have batched GPU
backends in :mod:`chute.ops.detection.bbox_gpu`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import REQUIRED, Arg, Schema
from chute.graph.spec import Spec
from chute.ops.detection import bbox_kernels as kernels
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

__all__ = ["BbFlip", "BboxPaste", "BoxEncoder"]

_LTRB = Arg(
    "ltrb",
    "bool",
    False,
    "True for [left, top, right, bottom] boxes, False for [x, y, width, height].",
    per_sample=False,
)


def _check_boxes_spec(name: str, spec: Spec) -> None:
    if spec.dtype is not None and spec.dtype.kind != "f":
        raise TypeError(f"{name} expects float boxes, got {spec.dtype}")
    if spec.ndim is not None and spec.ndim not in (1, 2):
        raise ValueError(f"{name} expects boxes as (n, 4) tensors, got {spec.ndim} dims")


def _boxes(name: str, boxes: np.ndarray) -> np.ndarray:
    if boxes.ndim not in (1, 2) or (boxes.ndim == 2 and boxes.shape[1] != 4) or boxes.size % 4:
        raise ValueError(f"{name} expects boxes as (n, 4) tensors, got shape {boxes.shape}")
    return boxes


@register
class BbFlip(Operator):
    """Mirrors relative bounding boxes horizontally and/or vertically (xywh or ltrb)."""

    lane_safe = True

    schema = Schema(
        name="bb_flip",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("horizontal", "int", 1, "Flip the horizontal dimension when nonzero."),
            Arg("vertical", "int", 0, "Flip the vertical dimension when nonzero."),
            _LTRB,
        ),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        _check_boxes_spec(self.schema.display_name, inputs[0])
        return [inputs[0].with_(dtype=np.dtype(np.float32))]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        boxes = _boxes(self.schema.display_name, inputs[0])
        return kernels.flip_boxes(
            boxes, bool(args["horizontal"]), bool(args["vertical"]), args["ltrb"]
        )

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.detection import bbox_gpu

        return bbox_gpu.bb_flip(inputs, args, ctx)


@register(ops_name="BBoxPaste")
class BboxPaste(Operator):
    """Moves relative boxes to where they land when the image is pasted on a larger canvas.

    Corners map as ``x / ratio + paste_x * (ratio - 1) / ratio`` (y likewise); widths and
    heights (xywh) are divided by ``ratio``.
    """

    lane_safe = True

    schema = Schema(
        name="bbox_paste",
        inputs=("input",),
        args=(
            Arg("ratio", "float", REQUIRED, "Canvas size over input size; at least 1."),
            Arg("paste_x", "float", 0.5, "Horizontal position of the paste (0 = left, 1 = right)."),
            Arg("paste_y", "float", 0.5, "Vertical position of the paste (0 = top, 1 = bottom)."),
            _LTRB,
        ),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        _check_boxes_spec(self.schema.display_name, inputs[0])
        return [inputs[0].with_(dtype=np.dtype(np.float32))]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        boxes = _boxes(self.schema.display_name, inputs[0])
        return kernels.bbox_paste(
            boxes, args["ratio"], args["paste_x"], args["paste_y"], args["ltrb"]
        )


@register
class BoxEncoder(Operator):
    """Encodes ltrb boxes and labels against SSD default boxes (``anchors``), as in the SSD paper.

    Outputs ``(M, 4)`` float32 boxes (center x, y, width, height of the matched box; the
    anchor itself where none matched) and ``(M,)`` labels (0 where none matched); with
    ``offset`` the boxes are the normalized regression targets and unmatched rows are 0.
    """

    lane_safe = True

    schema = Schema(
        name="box_encoder",
        devices=("cpu", "gpu"),
        inputs=("boxes", "labels"),
        num_outputs=2,
        args=(
            Arg(
                "anchors",
                "float_list",
                REQUIRED,
                "Default boxes as a flat list of ltrb floats.",
                per_sample=False,
            ),
            Arg(
                "criteria",
                "float",
                0.5,
                "IoU above which an anchor takes a box (0..1).",
                per_sample=False,
            ),
            Arg(
                "offset",
                "bool",
                False,
                "Output ((box*scale - anchor*scale) - mean) / std offsets.",
                per_sample=False,
            ),
            Arg(
                "scale",
                "float",
                1.0,
                "Scales boxes and anchors before offsets are taken.",
                per_sample=False,
            ),
            Arg(
                "means",
                "float_list",
                (0.0, 0.0, 0.0, 0.0),
                "[x y w h] means of the offsets.",
                per_sample=False,
            ),
            Arg(
                "stds",
                "float_list",
                (1.0, 1.0, 1.0, 1.0),
                "[x y w h] standard deviations of the offsets.",
                per_sample=False,
            ),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict[str, Any]) -> None:
        name = self.schema.display_name
        anchors = args.get("anchors", ())
        if len(anchors) == 0 or len(anchors) % 4:
            raise ValueError(
                f"{name}: argument 'anchors' needs a multiple of 4 values (ltrb per anchor), "
                f"got {len(anchors)}"
            )
        criteria = args.get("criteria", 0.5)
        if not 0.0 <= criteria <= 1.0:
            raise ValueError(f"{name}: argument 'criteria' must be within [0, 1], got {criteria}")
        for key in ("means", "stds"):
            if key in args and len(args[key]) != 4:
                raise ValueError(f"{name}: argument '{key}' needs 4 values, got {len(args[key])}")
        if any(s == 0 for s in args.get("stds", ())):
            raise ValueError(f"{name}: argument 'stds' must not contain 0")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        _check_boxes_spec(self.schema.display_name, inputs[0])
        labels = inputs[1]
        return [Spec(np.dtype(np.float32), 2, None), Spec(labels.dtype, 1, None)]

    def setup(self, node: OpNode, hints: Any = None, pipeline: Any = None) -> Any:
        return kernels.Anchors.of(np.asarray(node.arg("anchors"), np.float32))

    def run_sample(
        self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        boxes, labels = inputs
        boxes = _boxes(self.schema.display_name, boxes)
        return kernels.encode_boxes(
            boxes,
            labels,
            ctx.state,
            criteria=args["criteria"],
            offset=args["offset"],
            scale=args["scale"],
            means=args["means"],
            stds=args["stds"],
        )

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.detection import bbox_gpu

        return bbox_gpu.box_encoder(inputs, args, ctx)
