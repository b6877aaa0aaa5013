"""Generic warps: fn.experimental.warp_perspective and fn.experimental.remap.

The samplers are in :mod:`remap_kernels` (OpenCV's), the GPU backends in
:mod:`remap_gpu`. Both operators take images (HW, HWC) and sequences of them (FHW,
FHWC); warp_perspective also takes channel-first ones (CHW, FCHW) on the CPU. A
sequence's frames share the sample's matrix; remap takes one map per frame (maps with
a leading F) or one map for every frame.

Differences from DALI 2.4, on purpose: remap has a CPU backend (DALI's is GPU-only)
and its output takes the maps' size (DALI's the input's, which its maps must match);
both take any channel count on the CPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.geometry import remap_kernels
from chute.ops.geometry._op_common import BORDER_CHOICES, LayoutAware
from chute.ops.image._layouts import map_images
from chute.runtime.operator import ArgView
from chute.runtime.registry import register

__all__ = ["Remap", "WarpPerspective"]

_INTERPS = ("nn", "linear", "cubic")
_PIXEL_ORIGIN_DOC = (
    'Where (0, 0) is: "corner" (the top-left corner of the top-left pixel, DALI\'s default) '
    'or "center" (its centre, as OpenCV).'
)


def _check_spec(op: str, spec: Spec, layouts: tuple[str, ...]) -> None:
    if spec.layout and spec.layout not in layouts:
        raise ValueError(f"{op}: expected layout {' / '.join(layouts)}, got {spec.layout!r}")
    if spec.ndim is not None and spec.ndim not in {len(x) for x in layouts}:
        raise ValueError(f"{op}: expected {' / '.join(layouts)} samples, got {spec.ndim} dims")
    if spec.dtype is not None:
        remap_kernels.check_dtype(op, spec.dtype)


def channels_of(image: np.ndarray, layout: str | None) -> int:
    """The channel count of an image or sequence sample (1 without a channel axis)."""
    layout = layout or {2: "HW", 3: "HWC", 4: "FHWC"}.get(image.ndim, "")
    return image.shape[layout.index("C")] if "C" in layout else 1


def check_fill(op: str, fill: Any, channels: int) -> None:
    """fill_value takes one value or one per channel (DALI's rule)."""
    n = 0 if fill is None else np.size(fill)
    if n > 1 and n != channels:
        raise ValueError(
            f"{op}: argument 'fill_value' has {n} values for {channels} channels; give one "
            "value or one per channel"
        )


def resolve_matrix(op: str, inputs: tuple, args: ArgView, sample: int | None = None):
    """The sample's 3x3 matrix (float64 of its float32 values), from the input or the argument."""
    given = args.given("matrix")
    if len(inputs) > 1:
        if given:
            raise ValueError(f"{op}: give the matrix as the second input or as 'matrix', not both")
        m = np.asarray(inputs[1])
        if m.shape != (3, 3) or m.dtype != np.float32:
            raise ValueError(
                f"{op}: the matrix input must be a 3x3 float32 tensor per sample, got shape "
                f"{m.shape} of {m.dtype}"
            )
        return remap_kernels.as_perspective(op, m, sample)
    if not given:
        raise ValueError(f"{op}: give the 3x3 'matrix' as an argument or as the second input")
    return remap_kernels.as_perspective(op, args.raw("matrix"), sample)


@register
class WarpPerspective(LayoutAware):
    """Performs a perspective transform on the images: by default the 3x3 ``matrix``
    maps output coordinates to the input coordinates sampled (``inverse_map=True``), as
    OpenCV's ``warpPerspective`` with ``WARP_INVERSE_MAP``.

    The matrix is an argument (constant or per sample) or the second input (a 3x3
    float32 tensor per sample).
    """

    schema = Schema(
        name="experimental.warp_perspective",
        devices=("cpu", "gpu"),
        inputs=("input", "matrix_input"),
        min_inputs=1,
        args=(
            Arg(
                "matrix",
                "any",
                None,
                "3x3 matrix (9 values, row-major) of output to input coordinates; input to "
                "output with inverse_map=False.",
            ),
            Arg("size", "float_list", None, "Output size (H, W) in pixels; default the input's."),
            Arg(
                "inverse_map",
                "bool",
                True,
                "The matrix maps output to input coordinates (else input to output).",
                per_sample=False,
            ),
            Arg(
                "interp_type",
                "str",
                "linear",
                "Interpolation: INTERP_NN, INTERP_LINEAR or INTERP_CUBIC.",
                per_sample=False,
                choices=_INTERPS,
            ),
            Arg(
                "border_mode",
                "str",
                "constant",
                "How points outside the input read: constant (fill_value), replicate, reflect, "
                "reflect_101 or wrap.",
                per_sample=False,
                choices=BORDER_CHOICES,
            ),
            Arg(
                "fill_value",
                "float_list",
                None,
                "Value outside the input with border_mode='constant': one, or one per channel "
                "(default 0).",
                per_sample=False,
            ),
            Arg(
                "pixel_origin",
                "str",
                "corner",
                _PIXEL_ORIGIN_DOC,
                per_sample=False,
                choices=remap_kernels.PIXEL_ORIGINS,
            ),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        matrix = args.get("matrix")
        if matrix is not None:
            remap_kernels.as_perspective(self.schema.display_name, matrix)
        size = args.get("size")
        if size is not None and len(size) not in (0, 2):
            raise ValueError(
                f"{self.schema.display_name}: argument 'size' takes (H, W), got {list(size)}"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        _check_spec(self.schema.display_name, spec, ("HW", "HWC", "FHWC", "CHW", "FCHW"))
        if len(inputs) > 1 and ("matrix" in node.args or "matrix" in node.arg_inputs):
            raise ValueError(
                f"{self.schema.display_name}: give the matrix as the second input or as "
                "'matrix', not both"
            )
        self.remember_layout(node, spec)
        return [spec]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        op = self.schema.display_name
        image = inputs[0]
        remap_kernels.check_dtype(op, image.dtype)
        fill = args["fill_value"]
        check_fill(op, fill, channels_of(image, ctx.state))
        interp = remap_kernels.INTERP[
            remap_kernels.interp_kind(op, args["interp_type"], "interp_type")
        ]
        matrix = remap_kernels.opencv_perspective(
            resolve_matrix(op, inputs, args), args["pixel_origin"], args["inverse_map"]
        )
        size = args["size"]

        def run(img: np.ndarray, _frame: int | None) -> np.ndarray:
            out_hw = remap_kernels.perspective_size(size, img.shape[:2])
            return remap_kernels.warp_perspective(
                img, matrix, out_hw, interp, args["border_mode"], fill
            )

        return map_images(image, ctx.state, run, op)

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.geometry import remap_gpu

        return remap_gpu.warp_perspective(self, inputs, args, ctx)


@register
class Remap(LayoutAware):
    """Moves pixels by per-pixel maps: ``output(x, y) = input(mapx(x, y), mapy(x, y))``.

    ``mapx`` and ``mapy`` are float (H, W) tensors (or (H, W, 1); a leading F gives one
    per frame of a sequence). Points outside the input read 0 (DALI has no other border).
    """

    schema = Schema(
        name="experimental.remap",
        devices=("cpu", "gpu"),
        inputs=("input", "mapx", "mapy"),
        args=(
            Arg(
                "interp",
                "str",
                "linear",
                "Interpolation: INTERP_NN, INTERP_LINEAR or INTERP_CUBIC.",
                per_sample=False,
                choices=_INTERPS,
            ),
            Arg(
                "pixel_origin",
                "str",
                "corner",
                _PIXEL_ORIGIN_DOC + ' "center" matches cv2.remap.',
                per_sample=False,
                choices=remap_kernels.PIXEL_ORIGINS,
            ),
        ),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        op = self.schema.display_name
        spec = inputs[0]
        _check_spec(op, spec, ("HW", "HWC", "FHW", "FHWC"))
        for name, m in zip(("mapx", "mapy"), inputs[1:]):
            if m.dtype is not None and np.dtype(m.dtype).kind != "f":
                raise TypeError(f"{op}: input '{name}' must be float, got {np.dtype(m.dtype)}")
        self.remember_layout(node, spec)
        return [spec]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        op = self.schema.display_name
        image, mapx, mapy = inputs
        remap_kernels.check_dtype(op, image.dtype)
        layout = ctx.state or {2: "HW", 3: "HWC", 4: "FHWC"}.get(image.ndim, "")
        frames = image.shape[0] if layout.startswith("F") else None
        maps = per_frame_maps(op, mapx, mapy, frames)
        interp = remap_kernels.INTERP[remap_kernels.interp_kind(op, args["interp"], "interp")]
        origin = args["pixel_origin"]

        def run(img: np.ndarray, frame: int | None) -> np.ndarray:
            mx, my = maps[frame or 0]
            mx, my = remap_kernels.shifted_maps(mx, my, origin)
            return remap_kernels.remap(img, mx, my, interp)

        return map_images(image, layout, run, op)

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.geometry import remap_gpu

        return remap_gpu.remap(self, inputs, args, ctx)


def maps_per_frame(op: str, shape_x: tuple, shape_y: tuple, frames: int | None) -> bool:
    """Check a sample's map shapes; True when they hold one map per frame (a leading F).

    Maps are (H, W) or (H, W, 1); a sequence of ``frames`` frames may have one per frame
    ((F, H, W) or (F, H, W, 1)) or one for all (``frames`` None: an image).
    """
    if tuple(shape_x) != tuple(shape_y):
        raise ValueError(f"{op}: mapx and mapy differ in shape: {shape_x} and {shape_y}")
    shape = tuple(shape_x)
    per_frame = frames is not None and (len(shape) == 4 or (len(shape) == 3 and shape[-1] != 1))
    spatial = shape[1:] if per_frame else shape
    if len(spatial) not in (2, 3) or (len(spatial) == 3 and spatial[2] != 1):
        raise ValueError(
            f"{op}: maps must be (H, W) or (H, W, 1) (per frame: F first), got {shape}"
        )
    if per_frame and shape[0] != frames:
        raise ValueError(f"{op}: the maps have {shape[0]} frames, the input {frames}")
    return per_frame


def per_frame_maps(op: str, mapx: Any, mapy: Any, frames: int | None) -> list[tuple]:
    """(mapx, mapy) for each frame of a sample with ``frames`` frames (None: an image)."""
    mx, my = np.asarray(mapx), np.asarray(mapy)
    for name, m in (("mapx", mx), ("mapy", my)):
        if m.dtype.kind != "f":
            raise TypeError(f"{op}: input '{name}' must be float, got {m.dtype}")
    if maps_per_frame(op, mx.shape, my.shape, frames):
        return [(mx[f], my[f]) for f in range(mx.shape[0])]
    return [(mx, my)] * max(frames or 1, 1)
