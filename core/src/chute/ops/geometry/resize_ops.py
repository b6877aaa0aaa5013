"""Resize operators: fn.resize, fn.random_resized_crop, fn.resize_crop_mirror (CPU, per sample).

The pixel work is in :mod:`resize_kernels` and :mod:`crop_resize_kernels`; these classes
declare DALI's arguments. Every numeric argument may be a per-sample DataNode.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import NO_HINTS, FusedResizeCrop, FusionPlan, Hint, NodeHints
from chute.graph.schema import REQUIRED, Arg, Schema
from chute.graph.spec import Spec
from chute.ops.geometry import crop_resize_kernels, resize_kernels
from chute.ops.geometry._op_common import DTYPE, check_image, interp_arg
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

__all__ = [
    "FastResizeCropMirror",
    "RESIZE_ARGS",
    "RandomResizedCrop",
    "Resize",
    "ResizeCropMirror",
    "check_resize_args",
    "crop_mirror_kwargs",
    "size_kwargs",
]

_SIZE_WAYS = ("resize_x", "resize_y", "size", "resize_shorter", "resize_longer")

_SIZE_ARGS = (
    Arg(
        "resize_x", "float", None, "Output width; the height follows the aspect ratio if not given."
    ),
    Arg(
        "resize_y", "float", None, "Output height; the width follows the aspect ratio if not given."
    ),
    Arg("size", "float_list", None, "Output size (H, W); 0 leaves an extent to the mode."),
    Arg("resize_shorter", "float", None, "Length of the shorter side; keeps the aspect ratio."),
    Arg("resize_longer", "float", None, "Length of the longer side; keeps the aspect ratio."),
    Arg(
        "mode",
        "str",
        None,
        "default | stretch | not_smaller | not_larger (see DALI's fn.resize).",
        per_sample=False,
        choices=("default", "stretch", "not_smaller", "not_larger"),
    ),
    Arg(
        "max_size", "float_list", None, "Limit of the output size (H, W) or both.", per_sample=False
    ),
    Arg(
        "subpixel_scale",
        "bool",
        True,
        "Keep the exact scale when the output size is rounded (adjusts the region).",
        per_sample=False,
    ),
)

_FILTER_ARGS = (
    interp_arg(),
    Arg("min_filter", "str", None, "Filter when downscaling (default: interp_type)."),
    Arg("mag_filter", "str", None, "Filter when upscaling (default: interp_type)."),
    Arg(
        "antialias",
        "bool",
        True,
        "Widen the filter when downscaling (Pillow-equal for linear, cubic, lanczos3).",
        per_sample=False,
    ),
    DTYPE,
    Arg("minibatch_size", "int", 32, "Accepted for DALI compatibility; unused.", per_sample=False),
    Arg("temp_buffer_hint", "int", 0, "Accepted for DALI compatibility; unused.", per_sample=False),
)


_ROI_ARGS = (
    Arg("roi_start", "float_list", None, "Start (y, x) of the input region."),
    Arg("roi_end", "float_list", None, "End (y, x) of the input region."),
    Arg(
        "roi_relative",
        "bool",
        False,
        "Region in fractions of the input size.",
        per_sample=False,
    ),
)

_CROP_MIRROR_ARGS = (
    Arg("crop", "float_list", None, "Crop size (H, W) in the resized image."),
    Arg("crop_h", "float", None, "Crop height."),
    Arg("crop_w", "float", None, "Crop width."),
    Arg("crop_pos_x", "float", 0.5, "Horizontal crop anchor in [0, 1]."),
    Arg("crop_pos_y", "float", 0.5, "Vertical crop anchor in [0, 1]."),
    Arg(
        "rounding",
        "str",
        "round",
        "How the crop anchor becomes whole: round (halves away from zero) or truncate.",
        per_sample=False,
        choices=("round", "truncate"),
    ),
    Arg(
        "mirror", "int", 0, "Flips: 1 horizontal, 2 vertical (4 depthwise: volumes only); OR them."
    ),
    Arg(
        "resize_z",
        "float",
        None,
        "Volumes only (accepted for DALI; images refuse a nonzero value).",
    ),
    Arg(
        "crop_d", "float", None, "Volumes only (accepted for DALI; images refuse a nonzero value)."
    ),
    Arg("crop_pos_z", "float", 0.5, "Volumes only (accepted for DALI; unused for images)."),
)


def crop_mirror_kwargs(args: ArgView) -> dict[str, Any]:
    """crop_resize_kernels.crop_mirror_plan's keyword arguments from fn.resize_crop_mirror's
    (shared by the CPU and GPU backends)."""
    for name in ("resize_z", "crop_d"):
        if args[name]:
            raise ValueError(
                f"argument '{name}' applies to volumes (DHWC); images take none, got {args[name]}"
            )
    out = size_kwargs(args)
    for name in ("crop", "crop_h", "crop_w", "crop_pos_x", "crop_pos_y", "mirror", "rounding"):
        out[name] = args[name]
    out.update(
        roi_start=args["roi_start"], roi_end=args["roi_end"], roi_relative=args["roi_relative"]
    )
    return out


def size_kwargs(args: ArgView) -> dict[str, Any]:
    """resize_output_size's keyword arguments from fn.resize's (shared by the CPU and GPU backends)."""
    out = {name: args[name] for name in _SIZE_WAYS if args.given(name)}
    out.update(mode=args["mode"], max_size=args["max_size"], subpixel_scale=args["subpixel_scale"])
    return out


def _filter_kwargs(args: ArgView) -> dict[str, Any]:
    return {
        "interp_type": args["interp_type"],
        "min_filter": args["min_filter"],
        "mag_filter": args["mag_filter"],
        "antialias": args["antialias"],
        "dtype": args["dtype"],
    }


def _check_size_ways(name: str, args: dict, arg_inputs: dict) -> None:
    given = {*args, *arg_inputs}
    ways = bool({"resize_x", "resize_y"} & given) + sum(
        w in given for w in ("size", "resize_shorter", "resize_longer")
    )
    if ways != 1:
        raise ValueError(
            f"{name}: give exactly one of resize_x/resize_y, size, resize_shorter, resize_longer"
        )
    if "mode" in given and ({"resize_shorter", "resize_longer"} & given):
        raise ValueError(f"{name}: 'mode' cannot be combined with resize_shorter/resize_longer")
    # Constant values known at trace time (negative resize_x/resize_y/size flip, as in DALI).
    for key in ("resize_shorter", "resize_longer", "max_size"):
        value = args.get(key)
        if value is not None and np.any(np.asarray(value, dtype=np.float64) < 0):
            raise ValueError(f"{name}: argument '{key}' must be >= 0, got {value}")
    size = args.get("size")
    if size is not None and np.size(size) not in (1, 2):
        raise ValueError(f"{name}: argument 'size' takes (H, W) or one value, got {size}")
    dtype = args.get("dtype")
    if dtype is not None and np.dtype(dtype).kind not in "uif":
        raise TypeError(
            f"{name}: argument 'dtype' got {np.dtype(dtype).name}; accepted: integer and "
            "floating-point types (uint8, int16, float32, ...)"
        )


def check_resize_args(name: str, args: dict, arg_inputs: dict) -> None:
    """fn.resize's trace-time checks (one way to give the size, ROI pairs, dtype), for others."""
    _check_size_ways(name, args, arg_inputs)
    if ("roi_start" in args or "roi_start" in arg_inputs) != (
        "roi_end" in args or "roi_end" in arg_inputs
    ):
        raise ValueError(f"{name}: roi_start and roi_end must be given together")


class _ResizeBase(Operator):
    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        check_image(self.schema.display_name, spec)
        dtype = node.arg("dtype")
        return [spec.with_(dtype=dtype) if dtype is not None else spec]


@register
class Resize(_ResizeBase):
    """Resizes images, with DALI's size rules, regions of interest and resampling filters.

    Downscaling with ``antialias`` (the default) equals Pillow's antialiased resize; a
    region (``roi_start``/``roi_end``, (y, x)) is resampled with sub-pixel accuracy, and a
    reversed region or a negative size flips.
    """

    lane_safe = True

    schema = Schema(
        name="resize",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            *_SIZE_ARGS,
            *_ROI_ARGS,
            *_FILTER_ARGS,
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        check_resize_args(self.schema.display_name, args, arg_inputs)

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        window = getattr(inputs[0], "roi_window", None)
        if window is not None:
            # A decoder fused with this resize handed a DCT-scaled region: resize exactly
            # the part of it that is the requested crop (see fixed_output_size).
            y0, x0, y1, x1 = window
            return resize_kernels.resize(
                np.asarray(inputs[0]),
                **size_kwargs(args),
                roi_start=(y0, x0),
                roi_end=(y1, x1),
                **_filter_kwargs(args),
            )
        return resize_kernels.resize(
            inputs[0],
            **size_kwargs(args),
            roi_start=args["roi_start"],
            roi_end=args["roi_end"],
            roi_relative=args["roi_relative"],
            **_filter_kwargs(args),
        )

    def fusion_hints(
        self, node: OpNode, consumers: list[list[OpNode] | None], decided: FusionPlan
    ) -> tuple[Hint, ...]:
        # On the GPU, a crop_mirror_normalize reading this resize alone resamples its
        # crop straight from the input (chute.ops.geometry.gpu_fusion).
        from chute.ops.geometry.gpu_fusion import crop_after_resize

        crop = crop_after_resize(node, consumers[0])
        return (FusedResizeCrop(node, crop),) if crop is not None else ()

    def setup(
        self, node: OpNode, hints: NodeHints = NO_HINTS, pipeline: Any = None
    ) -> FusedResizeCrop | None:
        """The crop that takes this resize over (``ctx.state``; see fusion_hints), or None."""
        return hints.get(FusedResizeCrop)

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.geometry import resize_gpu

        return resize_gpu.resize(self, inputs, args, ctx)


@register
class ResizeCropMirror(_ResizeBase):
    """Resizes, crops (crop_pos anchors in the resized image) and flips, in one resampling.

    Equivalent to fn.resize, then fn.crop of the resized image, then fn.flip (``mirror``:
    1 horizontal, 2 vertical), computed as one resampling of the matching input region.
    """

    schema = Schema(
        name="resize_crop_mirror",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(*_SIZE_ARGS, *_ROI_ARGS, *_CROP_MIRROR_ARGS, *_FILTER_ARGS),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        name = self.schema.display_name
        _check_size_ways(name, args, arg_inputs)
        given = {*args, *arg_inputs}
        if not ({"crop", "crop_h", "crop_w"} & given):
            raise ValueError(f"{name}: give 'crop' or 'crop_h'/'crop_w'")
        if ("roi_start" in given) != ("roi_end" in given):
            raise ValueError(f"{name}: roi_start and roi_end must be given together")
        for key in ("resize_z", "crop_d"):
            if args.get(key):
                raise ValueError(
                    f"{name}: argument '{key}' applies to volumes (DHWC), got {args[key]}"
                )

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        return crop_resize_kernels.resize_crop_mirror(
            inputs[0], **crop_mirror_kwargs(args), **_filter_kwargs(args)
        )

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.geometry import resize_gpu

        return resize_gpu.resize_crop_mirror(self, inputs, args, ctx)


@register
class FastResizeCropMirror(ResizeCropMirror):
    """fn.resize_crop_mirror with ``antialias`` off by default (DALI's legacy name).

    Differences from fn.resize_crop_mirror: the default of ``antialias`` (False: the
    filter keeps its support when downscaling, so shrinking by more than 2x skips input
    pixels, faster and aliased); everything else is the same operator.
    """

    schema = Schema(
        name="fast_resize_crop_mirror",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=tuple(
            Arg(a.name, a.type, False, a.doc, per_sample=a.per_sample)
            if a.name == "antialias"
            else a
            for a in ResizeCropMirror.schema.args
        ),
    )


@register
class RandomResizedCrop(_ResizeBase):
    """Crops a random window (area fraction ~ U(random_area), log-uniform aspect ratio) and
    resizes it to ``size``, reading the window straight from the input in one pass."""

    lane_safe = True

    schema = Schema(
        name="random_resized_crop",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("size", "float_list", REQUIRED, "Output size (H, W), or one value for both."),
            Arg("random_area", "float_pair", (0.08, 1.0), "Range of the window's area fraction."),
            Arg("random_aspect_ratio", "float_pair", (3 / 4, 4 / 3), "Range of width / height."),
            Arg(
                "num_attempts",
                "int",
                10,
                "Draws before falling back to a centre crop.",
                per_sample=False,
            ),
            *_FILTER_ARGS,
        ),
    )

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        return crop_resize_kernels.random_resized_crop(
            inputs[0],
            args["size"],
            ctx.rng,
            random_area=args["random_area"],
            random_aspect_ratio=args["random_aspect_ratio"],
            num_attempts=args["num_attempts"],
            **_filter_kwargs(args),
        )

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.geometry import resize_gpu

        return resize_gpu.random_resized_crop(self, inputs, args, ctx)


def fixed_output_size(node: OpNode, source: OpNode) -> tuple[int, int] | None:
    """(h, w) when ``node`` is a CPU fn.resize of ``source``'s only output to a size that
    does not depend on the input's (both extents given, no region, no per-sample
    argument); else None. A decoder feeding such a resize may decode a DCT-scaled
    region of at least that size and tag it with ``roi_window`` instead.
    """
    if not isinstance(node.op, Resize) or node.device != "cpu" or node.arg_inputs:
        return None
    if [d.producer.id for d in node.inputs] != [source.id]:
        return None
    args = node.args
    if any(args.get(k) is not None for k in ("roi_start", "roi_end", "max_size", "dtype")):
        return None
    if args.get("mode") not in (None, "default", "stretch") or args.get("antialias") is False:
        return None
    size = args.get("size")
    if size is not None:
        extents = [float(v) for v in np.ravel(size)]
        height, width = extents if len(extents) == 2 else extents * 2
    else:
        height, width = args.get("resize_y"), args.get("resize_x")
    if height is None or width is None or height <= 0 or width <= 0:
        return None  # one extent follows the input's aspect ratio, or a flip
    return round(height), round(width)


# fn.resize's arguments, for operators that resize what they produce (readers.video_resize)
RESIZE_ARGS = Resize.schema.args
