"""fn.ssd_random_crop: SSD's random crop of an image with its boxes and labels (CPU, as DALI).

DALI deprecated it in favour of fn.random_bbox_crop + fn.slice but still ships it; the
draws follow DALI's. Per sample, one of seven options is drawn uniformly: no crop, or a
minimum IoU of -1 (any window), 0.1, 0.3, 0.5, 0.7 or 0.9. For a minimum IoU, up to
``num_attempts`` windows are drawn: width and height uniform in [0.3, 1] (rejected unless
their ratio is within [0.5, 2]), left and top uniform in the room left. A window is taken
when every box has at least that IoU with it and at least one box has its centre inside;
otherwise another option is drawn. The kept boxes are shifted into the window, scaled by its
size and clamped to [0, 1]; the image is cut at the window rounded to whole pixels.

Where DALI would loop forever on a sample no window can satisfy, chute gives up after
:data:`MAX_ROUNDS` options and does not crop, so a bad sample cannot hang the pipeline.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.detection import bbox_kernels as kernels
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

__all__ = ["MAX_ROUNDS", "SSDRandomCrop", "ssd_crop_window"]

MAX_ROUNDS = 10_000
# DALI's options: None = no crop; -1 accepts any window
_MIN_IOUS: tuple[float | None, ...] = (-1.0, 0.1, 0.3, 0.5, 0.7, 0.9, None)


def ssd_crop_window(
    boxes: np.ndarray, num_attempts: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray] | None:
    """A window ``[left, top, right, bottom]`` (float64, relative) and the indices of the boxes
    whose centres it holds, or None for "no crop" (see the module docstring)."""
    lo, hi = boxes[:, :2], boxes[:, 2:]
    centre = (lo.astype(np.float64) + hi) * 0.5
    for _ in range(MAX_ROUNDS):
        min_iou = _MIN_IOUS[int(rng.integers(len(_MIN_IOUS)))]
        if min_iou is None:
            return None
        for _ in range(num_attempts):
            w, h = (float(v) for v in rng.uniform(0.3, 1.0, 2).astype(np.float32))
            if not 0.5 <= w / h <= 2.0:
                continue
            left = float(rng.uniform(0.0, 1.0 - w))
            top = float(rng.uniform(0.0, 1.0 - h))
            window = np.array([left, top, left + w, top + h])
            crop = window.astype(np.float32)
            ious = kernels.iou_matrix(lo, hi, crop[None, :2], crop[None, 2:])[:, 0]
            if np.any(ious < min_iou):
                continue
            inside = np.all((centre >= window[:2]) & (centre <= window[2:]), axis=1)
            keep = np.nonzero(inside)[0]
            if len(keep):
                return window, keep
    return None


@register(ops_name="SSDRandomCrop")
class SSDRandomCrop(Operator):
    """Crops an image at random, as SSD does, keeping its ltrb boxes and labels consistent.

    Inputs: an HWC image, relative ltrb boxes (N, 4) and their labels (N,). Outputs the
    cropped image, the kept boxes relative to the crop, and their labels.
    """

    schema = Schema(
        name="ssd_random_crop",
        inputs=("input_0", "input_1", "input_2"),
        num_outputs=3,
        args=(Arg("num_attempts", "int", 1, "Number of attempts.", per_sample=False),),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict[str, Any]) -> None:
        if args.get("num_attempts", 1) < 1:
            raise ValueError(
                f"{self.schema.display_name}: argument 'num_attempts' must be at least 1, "
                f"got {args['num_attempts']}"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        image, boxes, labels = inputs
        name = self.schema.display_name
        if image.ndim is not None and image.ndim != 3:
            raise ValueError(f"{name} expects HWC images (3 dims), got {image.ndim} dims")
        if boxes.dtype is not None and boxes.dtype.kind != "f":
            raise TypeError(f"{name} expects float boxes (input 1), got {boxes.dtype}")
        return [image, Spec(np.dtype(np.float32), 2, None), labels.with_(layout=None)]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> tuple:
        image, boxes, labels = (np.asarray(x) for x in inputs)
        if image.ndim != 3:
            raise ValueError(f"expected an HWC image (input 0), got shape {image.shape}")
        if boxes.ndim != 2 or boxes.shape[1] != 4:
            raise ValueError(f"expected boxes as (n, 4) ltrb rows (input 1), got {boxes.shape}")
        if len(labels) != len(boxes):
            raise ValueError(f"got {len(boxes)} boxes but {len(labels)} labels")
        rows = boxes.astype(np.float32, copy=False)
        found = ssd_crop_window(rows, args["num_attempts"], ctx.rng)
        if found is None:
            return image, rows.copy(), labels.copy()
        window, keep = found
        extent = np.tile(window[2:] - window[:2], 2)
        moved = (rows[keep].astype(np.float64) - np.tile(window[:2], 2)) / extent
        h, w = image.shape[:2]
        # pixel bounds rounded half away from zero (llround), as DALI
        x0, y0, x1, y1 = (int(np.floor(v * s + 0.5)) for v, s in zip(window, (w, h, w, h)))
        cropped = np.ascontiguousarray(image[y0:y1, x0:x1])
        return cropped, np.clip(moved, 0.0, 1.0).astype(np.float32), labels[keep]
