"""Image operators: fn.gaussian_blur, fn.normalize and fn.crop_mirror_normalize (CPU).

The arithmetic lives in :mod:`filter_kernels`, :mod:`normalize_kernels` and
:mod:`cmn_kernels`; these classes declare DALI's arguments (every numeric one may be a
per-sample DataNode) and route values to the kernels.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import NO_HINTS, NodeHints
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.image.cmn_kernels import (
    crop_mirror_normalize,
    crop_window,
    normalization,
    output_shape,
)
from chute.ops.image.convert_kernels import convert_saturate
from chute.ops.image.filter_kernels import BORDER_MODES, gaussian_blur
from chute.ops.image.normalize_kernels import (
    inv_stddev,
    normalize_with,
    reduction_axes,
    statistics,
)
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

__all__ = ["CropMirrorNormalize", "GaussianBlur", "Normalize"]


@register
class GaussianBlur(Operator):
    """Blurs HW/HWC images (or FHWC sequences, frame by frame) with a Gaussian kernel.

    With only ``sigma``, the window is ``2 * ceil(3 * sigma) + 1``; with only
    ``window_size``, ``sigma = ((window_size - 1) / 2 - 1) * 0.3 + 0.8``. Both take one
    value or one per axis (H, W). ``border`` chooses how pixels outside the image are made.
    """

    schema = Schema(
        name="gaussian_blur",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("sigma", "float_list", (0.0,), "Standard deviation, one value or (H, W)."),
            Arg("window_size", "int_list", (0,), "Odd kernel extent, one value or (H, W)."),
            Arg(
                "border",
                "str",
                "reflect_101",
                "Pixels outside the image: constant, reflect (fedcba|abcdef), reflect_101 "
                "(gfedcb|abcdef), replicate or wrap.",
                per_sample=False,
                choices=tuple(BORDER_MODES),
            ),
            Arg("fill_value", "float", 0.0, "Value outside the image with border='constant'."),
            Arg(
                "dtype", "dtype", None, "Output data type (default: the input's).", per_sample=False
            ),
            Arg(
                "mask",
                "bool",
                True,
                "Blur the sample only where true; others pass (converted to dtype) unchanged.",
            ),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        if "sigma" in arg_inputs or "window_size" in arg_inputs:
            return
        sigma, window = args.get("sigma", (0.0,)), args.get("window_size", (0,))
        if not any(sigma) and not any(window):
            raise ValueError("fn.gaussian_blur: give 'sigma' or 'window_size'")
        if any(w % 2 == 0 and w != 0 for w in window) or any(w < 0 for w in window):
            raise ValueError(f"fn.gaussian_blur: argument 'window_size' must be odd, got {window}")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        if spec.ndim is not None and spec.ndim not in (2, 3, 4):
            raise ValueError(f"expected HW, HWC or FHWC data, got {spec.ndim} dims")
        dtype = node.arg("dtype")
        return [spec.with_(dtype=dtype) if dtype is not None else spec]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        image = inputs[0]
        dtype = args["dtype"]
        if not args["mask"]:
            return (
                image if dtype is None or dtype == image.dtype else convert_saturate(image, dtype)
            )
        params = (args["sigma"], args["window_size"], args["border"], args["fill_value"], dtype)
        if image.ndim == 4:
            return np.stack([gaussian_blur(frame, *params) for frame in image])
        return gaussian_blur(image, *params)

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.image import filter_gpu

        return filter_gpu.gaussian_blur(self, inputs, args, ctx)


@register
class Normalize(Operator):
    """Normalizes: ``out = (in - mean) * scale / stddev + shift``.

    Missing ``mean`` / ``stddev`` are computed over ``axes`` (or ``axis_names``; all axes by
    default) of each sample, or with ``batch=True`` over the whole batch. ``epsilon`` is added
    to the variance; a zero variance gives ``shift``.
    """

    schema = Schema(
        name="normalize",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("mean", "any", None, "Mean (scalar or array broadcastable to the input)."),
            Arg("stddev", "any", None, "Standard deviation (scalar or broadcastable array)."),
            Arg(
                "axes",
                "int_list",
                None,
                "Axes to reduce when computing statistics.",
                per_sample=False,
            ),
            Arg("axis_names", "str", None, "Axes to reduce, as layout letters.", per_sample=False),
            Arg(
                "batch", "bool", False, "Compute statistics over the whole batch.", per_sample=False
            ),
            Arg("scale", "float", 1.0, "Multiplier applied after normalizing."),
            Arg("shift", "float", 0.0, "Value added after scaling."),
            Arg("epsilon", "float", 0.0, "Added to the variance."),
            Arg("ddof", "int", 0, "Delta degrees of freedom of the variance.", per_sample=False),
            Arg("dtype", "dtype", np.dtype(np.float32), "Output data type.", per_sample=False),
        ),
    )

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._axes: dict[int, tuple[int, ...] | None] = {}

    @property
    def kind(self) -> str:  # type: ignore[override]
        return "batch" if self.init_args.get("batch") else "sample"

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        if "batch" in kwargs:
            self.init_args = {**self.init_args, "batch": kwargs["batch"]}
        return super().__call__(*inputs, **kwargs)

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        if args.get("axes") is not None and args.get("axis_names") is not None:
            raise ValueError("fn.normalize: give 'axes' or 'axis_names', not both")
        if args.get("batch") and ({"mean", "stddev"} & set(arg_inputs)):
            raise TypeError("fn.normalize: with batch=True, 'mean' and 'stddev' must be constants")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        names = node.arg("axis_names")
        if names is not None:
            if not spec.layout:
                raise ValueError("axis_names needs an input with a known layout; give 'axes'")
            missing = [a for a in names if a not in spec.layout]
            if missing:
                raise ValueError(f"axis_names {names!r} not all in layout {spec.layout!r}")
            self._axes[node.id] = tuple(spec.layout.index(a) for a in names)
        else:
            axes = node.arg("axes")
            self._axes[node.id] = tuple(axes) if axes else None
        return [spec.with_(dtype=node.arg("dtype"))]

    def setup(self, node: OpNode, hints: NodeHints = NO_HINTS, pipeline: Any = None) -> Any:
        return self._axes.get(node.id)

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        data = inputs[0]
        axes = reduction_axes(data.ndim, ctx.state)
        mean, var = statistics(
            [data], axes, args["ddof"], _arg_array(args, "mean"), _arg_array(args, "stddev")
        )
        inv = inv_stddev(var, args["scale"], args["epsilon"])
        return normalize_with(data, mean, inv, args["shift"], args["dtype"])

    def run_batch(self, inputs: list[list[Any]], args: Any, ctx: Any) -> list[np.ndarray]:
        batch = inputs[0]
        samples = batch if isinstance(batch, list) else [batch.at(i) for i in range(len(batch))]
        if not samples:
            return []
        axes = reduction_axes(samples[0].ndim, ctx.state)
        mean, var = statistics(samples, axes, args["ddof"], args["mean"], args["stddev"])
        out: list[np.ndarray | None] = [None] * len(samples)

        def work(i: int) -> None:
            view = args.sample(i)
            inv = inv_stddev(var, view["scale"], view["epsilon"])
            out[i] = normalize_with(samples[i], mean, inv, view["shift"], view["dtype"])

        failures = ctx.pool.run(work, len(samples))
        if failures:
            raise failures[0][1]
        return out  # type: ignore[return-value]

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.image import normalize_gpu

        return normalize_gpu.normalize(self, inputs, args, ctx)


def _arg_array(args: ArgView, name: str) -> np.ndarray | None:
    value = args.raw(name)
    return None if value is None else np.asarray(value, dtype=np.float64)


@register
class CropMirrorNormalize(Operator):
    """Crops, mirrors, normalizes ``(in - mean) / std * scale + shift``, lays out and casts.

    HWC input; ``output_layout`` "CHW" (default) or "HWC". The crop window is ``crop`` or
    ``crop_h``/``crop_w`` at ``round(crop_pos * (extent - crop))``; windows that leave the image
    raise, or with ``out_of_bounds_policy="pad"`` take ``fill_values`` (output units), or with
    ``"trim_to_shape"`` shrink. ``pad_output`` adds channels up to a power of two.
    """

    lane_safe = True

    schema = Schema(
        name="crop_mirror_normalize",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("crop", "float_list", None, "Crop (height, width); excludes crop_h/crop_w."),
            Arg("crop_h", "float", 0.0, "Crop height (0 = whole height)."),
            Arg("crop_w", "float", 0.0, "Crop width (0 = whole width)."),
            Arg("crop_pos_x", "float", 0.5, "Horizontal anchor of the crop, 0..1."),
            Arg("crop_pos_y", "float", 0.5, "Vertical anchor of the crop, 0..1."),
            Arg("mirror", "int", 0, "Flip horizontally when nonzero."),
            Arg("mean", "float_list", (0.0,), "Mean, one value or one per channel."),
            Arg("std", "float_list", (1.0,), "Standard deviation, one value or one per channel."),
            Arg("scale", "float", 1.0, "Multiplier applied after normalizing."),
            Arg("shift", "float", 0.0, "Value added after scaling."),
            Arg("dtype", "dtype", np.dtype(np.float32), "Output data type.", per_sample=False),
            Arg(
                "output_layout",
                "str",
                "CHW",
                "Output layout.",
                per_sample=False,
                choices=("CHW", "HWC"),
            ),
            Arg("pad_output", "bool", False, "Pad channels to a power of two.", per_sample=False),
            Arg("fill_values", "float_list", (0.0,), "Padding values (output units)."),
            Arg(
                "out_of_bounds_policy",
                "str",
                "error",
                "Crop windows leaving the image: error, pad or trim_to_shape.",
                per_sample=False,
                choices=("error", "pad", "trim_to_shape"),
            ),
            Arg(
                "rounding",
                "str",
                "round",
                "Float to integer output: round (half away from zero) or truncate.",
                per_sample=False,
                choices=("round", "truncate"),
            ),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        has_crop = args.get("crop") is not None or "crop" in arg_inputs
        has_hw = bool(args.get("crop_h") or args.get("crop_w")) or bool(
            {"crop_h", "crop_w"} & set(arg_inputs)
        )
        if has_crop and has_hw:
            raise ValueError("fn.crop_mirror_normalize: give 'crop' or 'crop_h'/'crop_w', not both")
        crop = args.get("crop")
        if crop is not None and len(crop) != 2:
            raise ValueError(f"fn.crop_mirror_normalize: 'crop' takes (height, width), got {crop}")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        if spec.ndim is not None and spec.ndim not in (2, 3):
            raise ValueError(f"expected HWC images, got {spec.ndim} dims")
        if spec.layout and spec.layout not in ("HWC", "HW"):
            raise ValueError(f"expected HWC input, got layout {spec.layout!r}")
        return [Spec(node.arg("dtype"), 3, node.arg("output_layout"))]

    # a pipeline output written straight into its batch array (chute.runtime.dense)
    writes_batch_slots = True

    def setup(self, node: OpNode, hints: NodeHints = NO_HINTS, pipeline: Any = None) -> _CmnState:
        return _CmnState(node)

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        state: _CmnState = ctx.state
        kwargs = dict(state.constants)
        for name in state.per_sample:
            kwargs[name] = args[name]
        if "mirror" in kwargs:
            kwargs["mirror"] = bool(kwargs["mirror"])
        image = inputs[0]
        gain_bias = out = None
        if image.ndim in (2, 3):
            channels = image.shape[2] if image.ndim == 3 else 1
            if state.fixed_normalization:
                gain_bias = state.gain_bias(channels)
            output_slot = getattr(ctx, "output_slot", None)  # see chute.runtime.dense
            if output_slot is not None and kwargs["out_of_bounds_policy"] != "trim_to_shape":
                out = output_slot(
                    _cmn_output_shape(image.shape[:2], channels, kwargs), kwargs["dtype"]
                )
        return crop_mirror_normalize(image, gain_bias=gain_bias, out=out, **kwargs)

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.image import cmn_gpu

        return cmn_gpu.crop_mirror_normalize(self, inputs, args, ctx)


_CMN_ARGS = (
    "crop",
    "crop_h",
    "crop_w",
    "crop_pos_x",
    "crop_pos_y",
    "mirror",
    "mean",
    "std",
    "scale",
    "shift",
    "dtype",
    "output_layout",
    "pad_output",
    "fill_values",
    "out_of_bounds_policy",
    "rounding",
)
_NORMALIZATION_ARGS = ("mean", "std", "scale", "shift")


def _cmn_output_shape(image_hw: tuple[int, int], channels: int, kwargs: dict) -> tuple:
    """The output shape crop_mirror_normalize will produce (windows are not trimmed)."""
    crop = kwargs["crop"]
    crop_h, crop_w = (float(v) for v in crop) if crop is not None else (0, 0)
    window = crop_window(image_hw, crop_h or kwargs["crop_h"], crop_w or kwargs["crop_w"])
    return output_shape(window.shape, channels, kwargs["output_layout"], kwargs["pad_output"])


class _CmnState:
    """What crop_mirror_normalize knows at build time: its constant arguments, and the
    per-channel gain and bias when mean, std, scale and shift are all constant."""

    def __init__(self, node: OpNode):
        self.per_sample = tuple(name for name in _CMN_ARGS if name in node.arg_inputs)
        self.constants = {name: node.arg(name) for name in _CMN_ARGS if name not in node.arg_inputs}
        self.fixed_normalization = not any(n in node.arg_inputs for n in _NORMALIZATION_ARGS)
        self._by_channels: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def gain_bias(self, channels: int) -> tuple[np.ndarray, np.ndarray]:
        """(gain, bias) for images of ``channels`` channels, computed once per count."""
        found = self._by_channels.get(channels)
        if found is None:
            c = self.constants
            found = normalization(c["mean"], c["std"], c["scale"], c["shift"], channels)
            self._by_channels[channels] = found  # racing workers compute the same value
        return found
