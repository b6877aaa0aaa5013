"""fn.dump_image: write each image of the batch to a PPM file, for debugging.

The images pass through unchanged. Files go to the working directory, one per sample
and iteration: ``dump-<iteration>-<sample><suffix>.ppm`` (binary PPM, P6 for 3 channels,
P5 for 1), so that a run's dumps do not overwrite each other. Input: uint8 images in
``input_layout`` (HWC, or CHW).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

__all__ = ["DumpImage", "ppm_bytes"]


def ppm_bytes(image: np.ndarray) -> bytes:
    """A binary PPM (3 channels) or PGM (1 channel) file of an HWC uint8 image."""
    h, w, c = image.shape
    magic = b"P6" if c == 3 else b"P5"
    return magic + f"\n{w} {h}\n255\n".encode() + np.ascontiguousarray(image).tobytes()


@register
class DumpImage(Operator):
    """Writes each uint8 image (HWC or CHW, 1 or 3 channels) to
    ``dump-<iteration>-<sample><suffix>.ppm`` in the working directory and passes it on."""

    schema = Schema(
        name="dump_image",
        inputs=("input",),
        args=(
            Arg("suffix", "str", "", "Added to the file names.", per_sample=False),
            Arg(
                "input_layout", "str", "HWC", "Layout of the images: HWC or CHW.", per_sample=False
            ),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        if args.get("input_layout", "HWC") not in ("HWC", "CHW"):
            raise ValueError(
                "fn.dump_image: argument 'input_layout' must be 'HWC' or 'CHW', "
                f"got {args['input_layout']!r}"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [inputs[0]]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        image = np.asarray(inputs[0])
        layout = args["input_layout"]
        if image.ndim != 3 or image.dtype != np.uint8:
            raise ValueError(
                f"fn.dump_image: expects uint8 images in layout {layout}, "
                f"got {image.dtype} of shape {image.shape}"
            )
        hwc = image if layout == "HWC" else image.transpose(1, 2, 0)
        if hwc.shape[2] not in (1, 3):
            raise ValueError(
                f"fn.dump_image: PPM holds 1 or 3 channels, got {hwc.shape[2]} "
                f"(input_layout={layout!r}, shape {image.shape})"
            )
        name = f"dump-{ctx.iteration}-{ctx.idx_in_batch}{args['suffix']}.ppm"
        with open(os.path.join(os.getcwd(), name), "wb") as f:
            f.write(ppm_bytes(hwc))
        return image
