"""fn.debayer (and its DALI alias fn.experimental.debayer): Bayer mosaics to RGB.

The CPU kernel is :mod:`debayer_kernels` (OpenCV's demosaicing, which is what DALI's
CPU backend runs); the GPU backend is :mod:`debayer_gpu` (OpenCV's bilinear rule in one
launch). Samples are single-channel images (HW, or HWC with C=1) or sequences of them
(FHW, FHWC); the output is HWC (FHWC) RGB of the input's type.

Differences from DALI 2.4: on the GPU chute computes the same bilinear interpolation as
the CPU ("default" and "bilinear_ocv"); DALI's GPU "default" is NPP's, whose green
differs ("default_npp" is refused here rather than imitated).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import REQUIRED, Arg, Schema
from chute.graph.spec import Spec
from chute.ops.geometry._op_common import LayoutAware
from chute.ops.image import debayer_kernels as dk
from chute.runtime.operator import ArgView
from chute.runtime.registry import register

__all__ = ["Debayer", "ExperimentalDebayer", "sample_layout"]

_ARGS = (
    Arg(
        "blue_position",
        "int_list",
        REQUIRED,
        "(y, x) of blue in the 2x2 Bayer tile that starts at the second row and column: "
        "(0, 0) BGGR, (0, 1) GBRG, (1, 0) GRBG, (1, 1) RGGB.",
    ),
    Arg(
        "algorithm",
        "str",
        "default",
        "default (bilinear), bilinear_ocv, edgeaware_ocv, vng_ocv (uint8) or gray_ocv "
        "(one channel out) on the CPU; default / bilinear_ocv on the GPU.",
        per_sample=False,
        choices=dk.ALGORITHMS,
    ),
)


def sample_layout(layout: str | None, ndim: int) -> str:
    """The layout of an input sample: the known one, else HW / HWC / FHWC by rank."""
    return layout or {2: "HW", 3: "HWC", 4: "FHWC"}.get(ndim, "")


@register
class Debayer(LayoutAware):
    """Performs image demosaicing/debayering: single-channel Bayer images to RGB."""

    schema = Schema(name="debayer", devices=("cpu", "gpu"), inputs=("input",), args=_ARGS)

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        position = args.get("blue_position")
        if position is not None:
            dk.blue_position(self.schema.display_name, position)

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        op = self.schema.display_name
        spec = inputs[0]
        if spec.dtype is not None and np.dtype(spec.dtype) not in (np.uint8, np.uint16):
            raise TypeError(f"{op}: takes uint8 or uint16 images, got {np.dtype(spec.dtype)}")
        if spec.layout and spec.layout not in ("HW", "HWC", "FHW", "FHWC"):
            raise ValueError(f"{op}: expected layout HW, HWC, FHW or FHWC, got {spec.layout!r}")
        if spec.ndim is not None and spec.ndim not in (2, 3, 4):
            raise ValueError(f"{op}: expected HW, HWC, FHW or FHWC samples, got {spec.ndim} dims")
        self.remember_layout(node, spec)
        seq = bool(spec.layout and spec.layout.startswith("F")) or spec.ndim == 4
        ndim = None if spec.ndim is None and not spec.layout else (4 if seq else 3)
        return [spec.with_(layout="FHWC" if seq else "HWC", ndim=ndim)]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        op = self.schema.display_name
        data = inputs[0]
        algorithm = args["algorithm"]
        if algorithm not in dk.CPU_ALGORITHMS:
            raise ValueError(
                f"{op}: argument 'algorithm' {algorithm!r} has no CPU backend; on the CPU: "
                f"{', '.join(dk.CPU_ALGORITHMS)}"
            )
        position = dk.blue_position(op, args["blue_position"])
        layout = sample_layout(ctx.state, data.ndim)
        frames = list(data) if layout.startswith("F") else [data]
        for image in frames:
            dk.check_image(op, image, algorithm)
        out = [dk.debayer(image, position, algorithm) for image in frames]
        if not layout.startswith("F"):
            return out[0]
        if not out:  # no frames: (0, H, W, C) from the input's shape
            channels = 1 if algorithm == "gray_ocv" else 3
            return np.zeros((0, *data.shape[1:3], channels), data.dtype)
        return np.stack(out)

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.image import debayer_gpu

        return debayer_gpu.debayer(self, inputs, args, ctx)


@register
class ExperimentalDebayer(Debayer):
    """Performs image demosaicing/debayering (DALI's legacy alias of fn.debayer)."""

    schema = Schema(
        name="experimental.debayer", devices=("cpu", "gpu"), inputs=("input",), args=_ARGS
    )
