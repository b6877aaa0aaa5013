"""fn.tensor_resize (and its DALI alias fn.experimental.tensor_resize): resize any axes.

The size rules and the separable resampling are in :mod:`tensor_resize_kernels`; the
GPU backend is :mod:`tensor_resize_gpu`. Tensors of any rank; the axes come from
``axes`` (negative ones count from the back) or ``axis_names`` (letters of the layout),
else all of them.

Differences from DALI 2.4, on purpose: any number of axes may be resized (DALI takes up
to three consecutive ones), and the filters are fn.resize's (so antialiased linear,
cubic and lanczos3 downscaling follows Pillow's support rule, where DALI's differs by
a level or so).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.geometry import tensor_resize_kernels as trk
from chute.ops.geometry._op_common import DTYPE, INTERP_CHOICES, LayoutAware
from chute.ops.geometry.resize_kernels import ResizePlan, resample_plan
from chute.runtime.operator import ArgView
from chute.runtime.registry import register

__all__ = ["ExperimentalTensorResize", "TensorResize", "resolve_axes", "sample_plan"]


def _filter_arg(name: str, doc: str) -> Arg:
    return Arg(name, "str", None, doc, choices=INTERP_CHOICES)


_ARGS = (
    Arg("sizes", "float_list", None, "Output sizes of the axes (exclusive with scales)."),
    Arg(
        "scales",
        "float_list",
        None,
        "Scale factors of the axes: out = size_rounding(scale * input extent).",
    ),
    Arg(
        "alignment",
        "float_list",
        (0.5,),
        "Point of the region kept in place when a size is rounded: 0 start, 0.5 centre, 1 end "
        "(one value, or one per axis).",
    ),
    Arg(
        "axes",
        "int_list",
        None,
        "Axes the per-axis arguments refer to (default all).",
        per_sample=False,
    ),
    Arg(
        "axis_names", "str", None, "Axes by layout letters (exclusive with axes).", per_sample=False
    ),
    Arg(
        "size_rounding",
        "str",
        "round",
        "round (halves away from zero), truncate or ceil.",
        per_sample=False,
        choices=trk.ROUNDINGS,
    ),
    Arg(
        "mode",
        "str",
        "default",
        "default | stretch | not_smaller | not_larger (see fn.resize).",
        per_sample=False,
        choices=trk.MODES,
    ),
    Arg(
        "max_size",
        "float_list",
        None,
        "Limit of the output extents (one or per axis).",
        per_sample=False,
    ),
    Arg("roi_start", "float_list", None, "Start of the input region, per axis."),
    Arg("roi_end", "float_list", None, "End of the input region, per axis (start > end flips)."),
    Arg("roi_relative", "bool", False, "Region in fractions of the extents.", per_sample=False),
    Arg(
        "subpixel_scale",
        "bool",
        True,
        "Keep the exact scale when a size is rounded (moves the region, see alignment).",
        per_sample=False,
    ),
    Arg("interp_type", "str", "linear", "Interpolation (types.INTERP_*).", choices=INTERP_CHOICES),
    _filter_arg("min_filter", "Filter when downscaling (default: interp_type)."),
    _filter_arg("mag_filter", "Filter when upscaling (default: interp_type)."),
    Arg("antialias", "bool", True, "Widen the filter when downscaling.", per_sample=False),
    DTYPE,
    Arg("minibatch_size", "int", 32, "Accepted for DALI compatibility; unused.", per_sample=False),
    Arg("temp_buffer_hint", "int", 0, "Accepted for DALI compatibility; unused.", per_sample=False),
)


def resolve_axes(op: str, ndim: int, axes: Any, axis_names: Any, layout: str | None) -> list[int]:
    """The axes the per-axis arguments refer to, as non-negative indices."""
    if axis_names is not None:
        if not layout or len(layout) != ndim:
            raise ValueError(f"{op}: 'axis_names' needs the input's layout, got {layout!r}")
        missing = [a for a in axis_names if a not in layout]
        if missing:
            raise ValueError(f"{op}: axis names {missing} are not in the layout {layout!r}")
        return [layout.index(a) for a in axis_names]
    if axes is None:
        return list(range(ndim))
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"{op}: axis {a} is out of range for {ndim} dimensions")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: argument 'axes' repeats an axis: {list(axes)}")
    return out


def sample_plan(op: str, shape: tuple, args: ArgView, layout: str | None):
    """(plan, per-axis filters) of one sample: shared by the CPU and GPU backends."""
    axes = resolve_axes(op, len(shape), args["axes"], args["axis_names"], layout)
    try:
        plan = trk.tensor_resize_plan(
            shape,
            axes,
            sizes=args["sizes"],
            scales=args["scales"],
            size_rounding=args["size_rounding"],
            alignment=args["alignment"],
            mode=args["mode"],
            max_size=args["max_size"],
            roi_start=args["roi_start"],
            roi_end=args["roi_end"],
            roi_relative=args["roi_relative"],
            subpixel_scale=args["subpixel_scale"],
        )
    except ValueError as exc:
        raise ValueError(f"{op}: {exc}") from None
    filters = [
        trk.axis_filter(hi - lo, n, args["interp_type"], args["min_filter"], args["mag_filter"])
        for n, (lo, hi) in zip(plan.out_shape, plan.roi)
    ]
    return plan, filters


@register
class TensorResize(LayoutAware):
    """Resizes tensors: any axes, by ``sizes`` or ``scales``, with fn.resize's modes,
    regions and filters."""

    schema = Schema(name="tensor_resize", devices=("cpu", "gpu"), inputs=("input",), args=_ARGS)

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        op = self.schema.display_name
        given = {*args, *arg_inputs}
        if ("sizes" in given) == ("scales" in given):
            raise ValueError(f"{op}: give exactly one of 'sizes' and 'scales'")
        if "axes" in given and "axis_names" in given:
            raise ValueError(f"{op}: arguments 'axes' and 'axis_names' cannot be given together")
        if ("roi_start" in given) != ("roi_end" in given):
            raise ValueError(f"{op}: 'roi_start' and 'roi_end' must be given together")
        if "scales" in given and args.get("mode") in ("not_smaller", "not_larger"):
            raise ValueError(f"{op}: 'scales' cannot be combined with mode {args['mode']!r}")
        dtype = args.get("dtype")
        if dtype is not None and np.dtype(dtype) not in trk.DTYPES:
            raise TypeError(
                f"{op}: argument 'dtype' must be the input's type or float32, got "
                f"{np.dtype(dtype).name}"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        op = self.schema.display_name
        spec = inputs[0]
        if spec.ndim == 0:
            raise ValueError(f"{op}: expected at least 1-D tensors")
        if spec.dtype is not None:
            _check_dtypes(op, spec.dtype, node.args.get("dtype"))
        self.remember_layout(node, spec)
        dtype = node.args.get("dtype")
        return [spec.with_(dtype=np.dtype(dtype)) if dtype is not None else spec]

    def run_sample(self, inputs: tuple[np.ndarray, ...], args: ArgView, ctx: Any) -> np.ndarray:
        op = self.schema.display_name
        data = inputs[0]
        if data.ndim == 0:
            raise ValueError(f"{op}: expected at least 1-D tensors, got a scalar")
        _check_dtypes(op, data.dtype, args["dtype"])
        plan, filters = sample_plan(op, data.shape, args, ctx.state)
        changed = trk.changed_axes(data.shape, plan)
        if (
            data.ndim in (2, 3)
            and set(changed) <= {0, 1}
            and plan.out_shape[2:] == data.shape[2:]
            and min(plan.out_shape + data.shape) > 0
        ):
            # images (HW / HWC): fn.resize's resampler, with its native uint8 path
            two_d = ResizePlan(plan.out_shape[0], plan.out_shape[1], plan.roi[0], plan.roi[1])
            return resample_plan(
                data, two_d, (filters[0], filters[1]), args["antialias"], args["dtype"]
            )
        return trk.resample_axes(data, plan, filters, args["antialias"], args["dtype"])

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.geometry import tensor_resize_gpu

        return tensor_resize_gpu.tensor_resize(self, inputs, args, ctx)


@register
class ExperimentalTensorResize(TensorResize):
    """Resizes tensors (DALI's legacy alias of fn.tensor_resize)."""

    schema = Schema(
        name="experimental.tensor_resize", devices=("cpu", "gpu"), inputs=("input",), args=_ARGS
    )


def _check_dtypes(op: str, dtype: Any, out: Any) -> None:
    dt = np.dtype(dtype)
    if dt not in trk.DTYPES:
        raise TypeError(f"{op}: takes uint8, int16, uint16 or float32 tensors, got {dt.name}")
    if out is not None and np.dtype(out) not in (dt, np.dtype(np.float32)):
        raise TypeError(
            f"{op}: argument 'dtype' must be the input's type ({dt.name}) or float32, got "
            f"{np.dtype(out).name}"
        )
