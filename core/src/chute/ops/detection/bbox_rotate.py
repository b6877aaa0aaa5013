"""fn.bbox_rotate: the boxes (and labels) of an image that fn.rotate turns (CPU, as DALI).

The boxes must be rotated with the *original* image's shape (``input_shape``), so the
operator goes before (or beside) ``fn.rotate`` with the same ``angle``, ``keep_size`` and
``size``. The canvas is ``size`` (H, W) when given, the input's with ``keep_size``, else
the rotated image's bounding canvas sized as fn.rotate sizes it; the arithmetic is
:func:`chute.ops.detection.bbox_kernels.rotate_boxes`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import REQUIRED, Arg, Schema
from chute.graph.spec import Spec
from chute.ops.detection import bbox_kernels as kernels
from chute.ops.geometry.warp_kernels import rotated_canvas_size
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

__all__ = ["BBoxRotate"]


def _const(name: str, type_: str, default: Any, doc: str, **kw: Any) -> Arg:
    return Arg(name, type_, default, doc, per_sample=False, **kw)


@register(ops_name="BBoxRotate")
class BBoxRotate(Operator):
    """Moves bounding boxes to where they land when their image is rotated by ``angle`` degrees.

    Outputs the boxes (float32 (M, 4), in ``bbox_layout``) and, when a labels input is
    given, the labels of the kept boxes. Boxes that ``keep_size`` or ``size`` cuts so that
    less than ``remove_threshold`` of their area remains are removed.
    """

    lane_safe = True

    schema = Schema(
        name="bbox_rotate",
        inputs=("bboxes", "labels"),
        min_inputs=1,
        args=(
            Arg("angle", "float", REQUIRED, "Counter-clockwise rotation angle in degrees."),
            Arg(
                "input_shape",
                "int_list",
                REQUIRED,
                "Shape of the image the boxes belong to (dimensions named by shape_layout).",
            ),
            _const(
                "shape_layout",
                "str",
                "HW",
                "Meaning of the input_shape dimensions; must contain H and W.",
            ),
            _const(
                "bbox_layout",
                "str",
                "xyXY",
                "Box layout: xyXY (ltrb) or xyWH.",
                choices=("xyXY", "xyWH"),
            ),
            _const("bbox_normalized", "bool", True, "Boxes are relative (0..1) to the image."),
            _const("keep_size", "bool", False, "The rotated image keeps the input's size."),
            Arg(
                "size",
                "float_list",
                None,
                "Canvas size (H, W) given to fn.rotate; excludes keep_size.",
            ),
            _const(
                "mode",
                "str",
                "expand",
                "expand: enclose the rotated box; fixed: keep its extents; halfway: between.",
                choices=("expand", "halfway", "fixed"),
            ),
            _const(
                "remove_threshold",
                "float",
                0.1,
                "Remove boxes with less than this fraction of their area left on the canvas.",
            ),
        ),
    )

    def num_outputs(self, args: Any, num_inputs: int = 1) -> int:
        return 1 + (num_inputs > 1)

    def check_args(self, args: dict[str, Any], arg_inputs: dict[str, Any]) -> None:
        name = self.schema.display_name
        threshold = args.get("remove_threshold", 0.1)
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(
                f"{name}: argument 'remove_threshold' must be within [0, 1], got {threshold}"
            )
        layout = args.get("shape_layout", "HW")
        if "H" not in layout or "W" not in layout:
            raise ValueError(
                f"{name}: argument 'shape_layout' must contain H and W, got {layout!r}"
            )
        if args.get("keep_size") and ("size" in args or "size" in arg_inputs):
            raise ValueError(f"{name}: arguments 'keep_size' and 'size' exclude each other")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        boxes = inputs[0]
        name = self.schema.display_name
        if boxes.dtype is not None and boxes.dtype.kind != "f":
            raise TypeError(f"{name} expects float boxes, got {boxes.dtype}")
        if boxes.ndim is not None and boxes.ndim != 2:
            raise ValueError(f"{name} expects boxes as (n, 4) tensors, got {boxes.ndim} dims")
        out = [Spec(np.dtype(np.float32), 2, None)]
        if len(inputs) > 1:
            labels = inputs[1]
            if labels.dtype is not None and labels.dtype.kind not in "iu":
                raise TypeError(f"{name} expects integer labels, got {labels.dtype}")
            out.append(labels.with_(layout=None))
        return out

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> Any:
        boxes = np.asarray(inputs[0])
        if boxes.ndim != 2 or boxes.shape[1] != 4:
            raise ValueError(f"expected boxes as (n, 4) tensors, got shape {boxes.shape}")
        in_w, in_h = self._image_wh(args)
        out_wh = self._canvas_wh(args, in_w, in_h)
        rotated, keep = kernels.rotate_boxes(
            boxes,
            args["angle"],
            (in_w, in_h),
            out_wh,
            ltrb=args["bbox_layout"] == "xyXY",
            normalized=args["bbox_normalized"],
            mode=args["mode"],
            remove_threshold=args["remove_threshold"],
        )
        if len(inputs) == 1:
            return rotated
        labels = np.asarray(inputs[1])
        if labels.ndim not in (1, 2) or (labels.ndim == 2 and labels.shape[1] != 1):
            raise ValueError(f"expected labels of shape (n,) or (n, 1), got {labels.shape}")
        if len(labels) != len(boxes):
            raise ValueError(f"got {len(boxes)} boxes but {len(labels)} labels")
        return rotated, labels[keep]

    @staticmethod
    def _image_wh(args: ArgView) -> tuple[int, int]:
        layout = args["shape_layout"]
        shape = args["input_shape"]
        iw, ih = layout.index("W"), layout.index("H")
        if len(shape) <= max(iw, ih):
            raise ValueError(
                f"argument 'input_shape' {list(shape)} has fewer dimensions than "
                f"shape_layout {layout!r}"
            )
        w, h = int(shape[iw]), int(shape[ih])
        if w <= 0 or h <= 0:
            raise ValueError(
                f"argument 'input_shape' needs a positive width and height, got {w}x{h}"
            )
        return w, h

    @staticmethod
    def _canvas_wh(args: ArgView, in_w: int, in_h: int) -> tuple[float, float]:
        if args["keep_size"]:
            return float(in_w), float(in_h)
        size = args["size"]
        if size is not None and len(size) > 0:
            if len(size) != 2:
                raise ValueError(f"argument 'size' needs 2 values (H, W), got {len(size)}")
            h, w = math.floor(size[0]), math.floor(size[1])
            if h <= 0 or w <= 0:
                raise ValueError(f"argument 'size' must be positive, got {list(size)}")
            return float(w), float(h)
        out_h, out_w = rotated_canvas_size(in_h, in_w, args["angle"])
        return float(out_w), float(out_h)
