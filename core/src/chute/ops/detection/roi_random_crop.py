"""fn.roi_random_crop: a fixed-size crop window placed at random to hold a region of interest.

Per dimension, with the ROI ``[start, end)`` and window extent ``c``: when the ROI is at
least as large as the window the window lies inside the ROI (start drawn from
``[start, end - c]``), otherwise it contains the ROI (from ``[end - c, start]``). With an
input shape (``in_shape``, or the shape of the optional input) the range is also kept inside
``[0, in_shape - c]``. The output is the window's start, int64; draws come from ctx.rng.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import REQUIRED, Arg, Schema
from chute.graph.spec import Spec
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

__all__ = ["RoiRandomCrop", "roi_crop_start"]


def roi_crop_start(
    roi_start: np.ndarray,
    roi_end: np.ndarray,
    crop_shape: np.ndarray,
    in_shape: np.ndarray | None,
    rng: np.random.Generator,
) -> np.ndarray:
    """The random start of a ``crop_shape`` window holding as much of the ROI as fits."""
    lo = np.where(roi_end - roi_start >= crop_shape, roi_start, roi_end - crop_shape)
    hi = np.where(roi_end - roi_start >= crop_shape, roi_end - crop_shape, roi_start)
    if in_shape is not None:
        lo = np.clip(lo, 0, in_shape - crop_shape)
        hi = np.clip(hi, 0, in_shape - crop_shape)
    return np.array([rng.integers(a, b + 1) for a, b in zip(lo, hi)], np.int64)


@register
class RoiRandomCrop(Operator):
    """Produces the start of a fixed-shape crop window placed at random around a region of interest."""

    schema = Schema(
        name="roi_random_crop",
        inputs=("input",),
        min_inputs=0,
        args=(
            Arg("crop_shape", "int_list", REQUIRED, "Extent of the window."),
            Arg("roi_start", "int_list", REQUIRED, "Start of the region of interest."),
            Arg("roi_end", "int_list", None, "End of the ROI (exclusive; or roi_shape)."),
            Arg("roi_shape", "int_list", None, "Extent of the ROI (or roi_end)."),
            Arg("in_shape", "int_list", None, "Shape of the input the window must stay inside."),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict[str, Any]) -> None:
        given = set(args) | set(arg_inputs)
        name = self.schema.display_name
        if ("roi_end" in given) == ("roi_shape" in given):
            raise ValueError(f"{name}: give exactly one of 'roi_end' and 'roi_shape'")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [Spec(np.dtype(np.int64), 1, None)]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        crop = np.asarray(args["crop_shape"], np.int64)
        start = np.asarray(args["roi_start"], np.int64)
        if args["roi_end"] is not None:
            end = np.asarray(args["roi_end"], np.int64)
        else:
            end = start + np.asarray(args["roi_shape"], np.int64)
        in_shape = None
        if inputs:
            in_shape = np.asarray(inputs[0].shape, np.int64)
        elif args["in_shape"] is not None:
            in_shape = np.asarray(args["in_shape"], np.int64)
        sizes = {len(crop), len(start), len(end)} | (
            {len(in_shape)} if in_shape is not None else set()
        )
        if len(sizes) != 1:
            raise ValueError(
                f"crop_shape, roi_start, roi_end/roi_shape (and in_shape) need one length each, "
                f"got {sorted(sizes)}"
            )
        if np.any(end < start) or np.any(crop < 0):
            raise ValueError(f"empty ROI or negative crop_shape (roi {start}..{end}, crop {crop})")
        if in_shape is not None and (
            np.any(crop > in_shape) or np.any(start < 0) or np.any(end > in_shape)
        ):
            raise ValueError(
                f"the ROI {start.tolist()}..{end.tolist()} and crop_shape {crop.tolist()} must "
                f"lie within the input shape {in_shape.tolist()}"
            )
        return roi_crop_start(start, end, crop, in_shape, ctx.rng)
