"""Image decoding operators: fn.decoders.image, image_crop, image_slice, image_random_crop,
and fn.peek_image_shape (what they share is in :mod:`chute.ops.decoders.decoder_base`).

Each takes encoded bytes (a 1-D uint8 sample, as readers and external_source
give them) and decodes through :mod:`chute.ops.decoders.image_codec`; on the CPU a
batch at a time, chunks of samples on the worker threads without the GIL
(:mod:`chute.ops.decoders.batch_decode`), per sample in debug mode. Corrupt,
truncated or unsupported samples raise
:class:`~chute.ops.decoders.image_codec.DecodeError` (a ValueError), which the
pipeline's ``on_error`` policy handles.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import FusionPlan, Hint
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.decoders.decoder_args import DALI_TUNING_ARGS, DECODE_ARGS
from chute.ops.decoders.decoder_base import (
    DecoderBase,
    RandomCropSettings,
    ScaledRegion,
    WindowDecoder,
    checked_roi,
)
from chute.ops.decoders.image_codec import peek_shape
from chute.runtime.context import sample_key
from chute.runtime.crop_window import (
    crop_window_from_anchor,
    slice_window,
    stream_crop_window,
)
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register
from chute.types import to_dtype

__all__ = [
    "Image",
    "ImageCrop",
    "ImageRandomCrop",
    "ImageSlice",
    "PeekImageShape",
    "ScaledRegion",
]


@register(legacy=("image_decoder", "experimental.decoders.image"))
class Image(DecoderBase):
    """Decode JPEG, PNG, BMP, TIFF, PNM, WebP, GIF (first frame) or JPEG 2000 images to HWC."""

    schema = Schema(
        name="decoders.image",
        devices=("cpu", "mixed"),
        inputs=("encoded",),
        args=(*DECODE_ARGS, *DALI_TUNING_ARGS),
    )

    lane_safe = True

    def fusion_hints(
        self, node: OpNode, consumers: list[list[OpNode] | None], decided: FusionPlan
    ) -> tuple[Hint, ...]:
        # mixed: decode only the region a fused resize + crop reads (ops/geometry/gpu_fusion)
        from chute.ops.geometry.gpu_fusion import decode_region

        region = decode_region(node, consumers[0], decided)
        return (region,) if region is not None else super().fusion_hints(node, consumers, decided)

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.decoders import image_gpu

        return image_gpu.image_mixed(self, inputs, args, ctx)


@register(legacy=("image_decoder_crop", "experimental.decoders.image_crop"))
class ImageCrop(WindowDecoder):
    """Decode a fixed-size crop placed at (crop_pos_x, crop_pos_y) of each image."""

    schema = Schema(
        name="decoders.image_crop",
        devices=("cpu", "mixed"),
        inputs=("encoded",),
        args=(
            *DECODE_ARGS,
            Arg("crop", "float_list", None, "Crop size (height, width) in pixels."),
            Arg("crop_h", "float", 0.0, "Crop height in pixels (overrides crop)."),
            Arg("crop_w", "float", 0.0, "Crop width in pixels (overrides crop)."),
            Arg("crop_pos_x", "float", 0.5, "Horizontal position in [0, 1]: 0 left, 1 right."),
            Arg("crop_pos_y", "float", 0.5, "Vertical position in [0, 1]: 0 top, 1 bottom."),
            *DALI_TUNING_ARGS,
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        super().check_args(args, arg_inputs)
        given = [n for n in ("crop", "crop_h", "crop_w") if n in args or n in arg_inputs]
        if not given:
            raise TypeError(f"{self.schema.display_name}: give 'crop' or 'crop_h' and 'crop_w'")
        crop = args.get("crop")
        if crop is not None and len(crop) != 2:
            raise ValueError(
                f"{self.schema.display_name}: argument 'crop' must be (height, width), got {crop}"
            )

    def window(self, inputs: tuple, args: ArgView) -> Callable[[int, int], tuple]:
        """The sample's crop as a function of its image's (height, width): (y0, x0, y1, x1)."""
        crop = args["crop"]
        crop_h, crop_w = (crop[0], crop[1]) if crop is not None else (0.0, 0.0)
        crop_h = args["crop_h"] or crop_h
        crop_w = args["crop_w"] or crop_w

        # the window needs the image size: the codec calls this once it has read the
        # header, so the header is parsed once
        def roi(height: int, width: int) -> tuple:
            window = crop_window_from_anchor(
                height,
                width,
                round(crop_h),
                round(crop_w),
                args["crop_pos_x"],
                args["crop_pos_y"],
            )
            return checked_roi(window, height, width, self.schema.display_name)

        return roi


@register(legacy=("image_decoder_slice", "experimental.decoders.image_slice"))
class ImageSlice(WindowDecoder):
    """Decode a slice of each image given by anchor/shape inputs or start/shape arguments."""

    schema = Schema(
        name="decoders.image_slice",
        devices=("cpu", "mixed"),
        inputs=("encoded", "anchor", "slice_shape"),
        min_inputs=1,
        args=(
            *DECODE_ARGS,
            Arg("start", "int_list", None, "Slice start in pixels, in axis_names order."),
            Arg("rel_start", "float_list", None, "Slice start relative to the image size."),
            Arg("shape", "int_list", None, "Slice shape in pixels, in axis_names order."),
            Arg("rel_shape", "float_list", None, "Slice shape relative to the image size."),
            Arg("end", "int_list", None, "Slice end in pixels (exclusive)."),
            Arg("rel_end", "float_list", None, "Slice end relative to the image size."),
            Arg(
                "axis_names",
                "str",
                "WH",
                "Order of the values: 'WH' (x first) or 'HW'.",
                per_sample=False,
            ),
            Arg(
                "normalized_anchor",
                "bool",
                True,
                "The anchor input is relative to the image size.",
                per_sample=False,
            ),
            Arg(
                "normalized_shape",
                "bool",
                True,
                "The shape input is relative to the image size.",
                per_sample=False,
            ),
            Arg(
                "out_of_bounds_policy",
                "str",
                "error",
                "A slice outside the image: 'error' or 'trim_to_shape'.",
                per_sample=False,
                choices=("error", "trim_to_shape"),
            ),
            *DALI_TUNING_ARGS,
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        super().check_args(args, arg_inputs)
        axis_names = args.get("axis_names", "WH")
        if sorted(axis_names) != ["H", "W"]:
            raise ValueError(
                f"{self.schema.display_name}: argument 'axis_names' must be 'WH' or 'HW', "
                f"got {axis_names!r}"
            )

    def window(self, inputs: tuple, args: ArgView) -> Callable[[int, int], tuple]:
        """The sample's slice as a function of its image's (height, width): (y0, x0, y1, x1)."""

        # the window needs the image size: the codec calls this once it has read the
        # header, so the header is parsed once
        def roi(height: int, width: int) -> tuple:
            starts: dict[str, Any] = {
                "start": args["start"],
                "rel_start": args["rel_start"],
                "shape": args["shape"],
                "rel_shape": args["rel_shape"],
                "end": args["end"],
                "rel_end": args["rel_end"],
            }
            if len(inputs) > 1:
                key = "rel_start" if args["normalized_anchor"] else "start"
                starts["start"] = starts["rel_start"] = None
                starts[key] = np.asarray(inputs[1]).reshape(-1)
            if len(inputs) > 2:
                key = "rel_shape" if args["normalized_shape"] else "shape"
                for name in ("shape", "rel_shape", "end", "rel_end"):
                    starts[name] = None
                starts[key] = np.asarray(inputs[2]).reshape(-1)
            window = slice_window(
                height,
                width,
                axis_names=args["axis_names"],
                out_of_bounds_policy=args["out_of_bounds_policy"],
                **starts,
            )
            return checked_roi(window, height, width, self.schema.display_name)

        return roi


@register(legacy=("image_decoder_random_crop", "experimental.decoders.image_random_crop"))
class ImageRandomCrop(DecoderBase):
    """Decode a random crop of each image: uniform area fraction, log-uniform aspect ratio."""

    schema = Schema(
        name="decoders.image_random_crop",
        devices=("cpu", "mixed"),
        inputs=("encoded",),
        args=(
            *DECODE_ARGS,
            Arg(
                "random_area",
                "float_pair",
                (0.08, 1.0),
                "Range of the crop's area as a fraction of the image area.",
                per_sample=False,
            ),
            Arg(
                "random_aspect_ratio",
                "float_pair",
                (3 / 4, 4 / 3),
                "Range of the crop's width/height ratio (drawn log-uniformly).",
                per_sample=False,
            ),
            Arg(
                "num_attempts",
                "int",
                10,
                "Draws before falling back to a centre crop.",
                per_sample=False,
            ),
            *DALI_TUNING_ARGS,
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        super().check_args(args, arg_inputs)
        area = args.get("random_area", (0.08, 1.0))
        if not 0 < area[0] <= area[1]:
            raise ValueError(
                f"{self.schema.display_name}: argument 'random_area' must be 0 < lo <= hi, "
                f"got {area}"
            )
        ratio = args.get("random_aspect_ratio", (3 / 4, 4 / 3))
        if not 0 < ratio[0] <= ratio[1]:
            raise ValueError(
                f"{self.schema.display_name}: argument 'random_aspect_ratio' must be "
                f"0 < lo <= hi, got {ratio}"
            )
        if args.get("num_attempts", 10) < 1:
            raise ValueError(f"{self.schema.display_name}: argument 'num_attempts' must be >= 1")

    settings_class = RandomCropSettings
    lane_safe = True

    def roi(self, inputs: tuple, args: ArgView, ctx: Any, i: int, meta: dict | None) -> Any:
        settings = self._settings(ctx)
        # ctx.rng's numbers without building a NumPy generator per sample
        key, counter = sample_key(ctx.seed, ctx.node.id, ctx.epoch, ctx.iteration, i, meta)

        # the window needs the image size: the codec calls this once it has read the
        # header, so the header is parsed once (and checks the window against it)
        def roi(height: int, width: int) -> tuple:
            y0, x0, crop_h, crop_w = stream_crop_window(
                height,
                width,
                settings.area,
                settings.aspect_ratio,
                settings.num_attempts,
                key,
                counter,
            )
            return y0, x0, y0 + crop_h, x0 + crop_w

        return roi

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.decoders import image_gpu

        return image_gpu.image_random_crop_mixed(self, inputs, args, ctx)


@register(legacy=("experimental.peek_image_shape",), ops_aliases=("decoders.PeekImageShape",))
class PeekImageShape(Operator):
    """The (height, width, channels) of each encoded image, read from its header only."""

    schema = Schema(
        name="peek_image_shape",
        inputs=("encoded",),
        args=(
            Arg("dtype", "dtype", np.dtype(np.int64), "Type of the output.", per_sample=False),
            Arg(
                "adjust_orientation",
                "bool",
                True,
                "Report the shape after EXIF orientation.",
                per_sample=False,
            ),
            Arg(
                "image_type",
                "any",
                None,
                "Accepted for DALI compatibility; no effect.",
                per_sample=False,
            ),
        ),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [Spec(to_dtype(node.arg("dtype") or np.int64), 1, None)]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        shape = peek_shape(inputs[0], args["adjust_orientation"])
        return np.asarray(shape, dtype=args["dtype"] or np.int64)
