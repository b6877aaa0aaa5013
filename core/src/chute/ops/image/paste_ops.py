"""fn.multi_paste: regions of input samples pasted onto each output sample's canvas.

The plan and the CPU kernel are in :mod:`paste_kernels`, the GPU backend in
:mod:`paste_gpu`. With ``in_ids`` the operator takes one input batch and output sample
i gets regions of the samples ``in_ids[i]`` names; without it, it takes up to 64 input
batches and output sample i gets a region of sample i of each. Samples are HWC images
or FHWC sequences (the regions of one output share its frame count); the canvas is
zero where nothing is pasted.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.image import paste_kernels
from chute.ops.image.paste_kernels import OP, Region
from chute.runtime.operator import Operator
from chute.runtime.registry import register

__all__ = ["MultiPaste", "plan_batch"]

_MAX_INPUTS = 64
_PAIRS = (
    ("in_anchors", "in_anchors_rel"),
    ("shapes", "shapes_rel"),
    ("out_anchors", "out_anchors_rel"),
)


def _region_arg(name: str, what: str) -> Arg:
    rel = name.endswith("_rel")
    doc = f"{what}, per region: a (number of regions, 2) tensor of (y, x) " + (
        "fractions in [0, 1] of the extent." if rel else "pixels."
    )
    return Arg(name, "any", None, doc)


@register
class MultiPaste(Operator):
    """Performs multiple pastes from image batch to each of the outputs.

    With ``in_ids``, one input batch: output sample i gets the regions of input samples
    ``in_ids[i]``. Without it, several input batches: output sample i gets sample i of each.
    Later regions cover earlier ones; the rest of the canvas is 0. ``output_size`` may be
    omitted when all input samples have one shape (the canvas takes it).
    """

    kind = "batch"
    lane_safe = True
    schema = Schema(
        name="multi_paste",
        devices=("cpu", "gpu"),
        inputs=("input_0",),
        variadic=True,
        args=(
            Arg(
                "in_ids",
                "int_list",
                None,
                "Indices of the input samples to paste from, per output sample (one input only).",
            ),
            Arg("output_size", "int_list", None, "Canvas size (H, W); default the inputs' size."),
            _region_arg("in_anchors", "Top-left corner of the source region"),
            _region_arg("in_anchors_rel", "Top-left corner of the source region"),
            _region_arg("shapes", "Size of the region (default: to the input's end)"),
            _region_arg("shapes_rel", "Size of the region, relative to the input"),
            _region_arg("out_anchors", "Top-left corner in the canvas"),
            _region_arg("out_anchors_rel", "Top-left corner in the canvas"),
            Arg("dtype", "dtype", None, "Output type (default: the input's).", per_sample=False),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        given = {*args, *arg_inputs}
        for a, b in _PAIRS:
            if a in given and b in given:
                raise ValueError(f"{OP}: arguments '{a}' and '{b}' cannot be given together")
        size = args.get("output_size")
        if size is not None and (len(size) < 2 or min(size[:2]) < 0):
            raise ValueError(f"{OP}: argument 'output_size' takes (H, W) >= 0, got {list(size)}")
        dtype = args.get("dtype")
        if dtype is not None and np.dtype(dtype).kind not in "uif":
            raise TypeError(f"{OP}: argument 'dtype' must be an integer or float type, got {dtype}")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        if len(inputs) > _MAX_INPUTS:
            raise ValueError(f"{OP}: takes at most {_MAX_INPUTS} inputs, got {len(inputs)}")
        if len(inputs) > 1 and ("in_ids" in node.args or "in_ids" in node.arg_inputs):
            raise ValueError(f"{OP}: with 'in_ids' the operator takes exactly one input batch")
        first = inputs[0]
        for k, spec in enumerate(inputs):
            if spec.ndim is not None and spec.ndim not in (3, 4):
                raise ValueError(f"{OP}: input {k} must be HWC or FHWC, got {spec.ndim} dims")
            if spec.layout and spec.layout not in ("HWC", "FHWC"):
                raise ValueError(f"{OP}: input {k} must be HWC or FHWC, got {spec.layout!r}")
            for field in ("dtype", "ndim"):
                a, b = getattr(first, field), getattr(spec, field)
                if a is not None and b is not None and a != b:
                    raise TypeError(
                        f"{OP}: all inputs must share {field}: input 0 {a}, input {k} {b}"
                    )
        dtype = node.args.get("dtype")
        return [first.with_(dtype=np.dtype(dtype)) if dtype is not None else first]

    def run_batch(self, inputs: list[list[np.ndarray]], args: Any, ctx: Any) -> list[np.ndarray]:
        plans = plan_batch(inputs, args)
        out: list[Any] = [None] * len(plans)

        def work(i: int) -> None:
            shape, dtype, regions = plans[i]
            canvas = paste_kernels.canvas(shape, dtype)
            out[i] = paste_kernels.paste(canvas, regions, lambda src: inputs[src[0]][src[1]])

        failures = ctx.pool.run(work, len(plans))
        if failures:
            raise failures[0][1]
        return out

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.image import paste_gpu

        return paste_gpu.multi_paste(inputs, args, ctx)


def plan_batch(
    shapes: list[list[Any]], args: Any
) -> list[tuple[tuple[int, ...], np.dtype, list[Region]]]:
    """(canvas shape, dtype, regions) of every output sample; ``shapes[k][i]`` is sample i of
    input k (anything with ``shape`` and ``dtype``). Shared by the CPU and GPU backends."""
    n_inputs = len(shapes)
    n = len(shapes[0])
    dtypes = {np.dtype(s.dtype) for batch in shapes for s in batch}
    ndims = {len(s.shape) for batch in shapes for s in batch}
    if len(dtypes) > 1:
        raise TypeError(
            f"{OP}: all input samples must share a dtype, got {sorted(map(str, dtypes))}"
        )
    if len(ndims) > 1 or not ndims <= {3, 4}:
        raise ValueError(f"{OP}: input samples must all be HWC or all FHWC")
    in_dtype = dtypes.pop() if dtypes else np.dtype(np.uint8)
    out_dtype = np.dtype(args["dtype"]) if args["dtype"] is not None else in_dtype
    with_ids = args.is_per_sample("in_ids") or args["in_ids"] is not None
    if with_ids and n_inputs != 1:
        raise ValueError(f"{OP}: with 'in_ids' the operator takes exactly one input batch")
    ids = args.column("in_ids") if with_ids else None
    sizes = args.column("output_size")
    if not args.is_per_sample("output_size") and args["output_size"] is None:
        hws = {tuple(s.shape[-3:-1]) for batch in shapes for s in batch}
        if len(hws) > 1:
            raise ValueError(
                f"{OP}: without 'output_size' all input samples must have one size, got "
                f"{sorted(hws)}"
            )
    plans = []
    for i in range(n):
        sample = args.sample(i)
        if with_ids:
            sources = [(0, int(j)) for j in (ids[i] or ())]
            for j in sources:
                if not 0 <= j[1] < n:
                    raise ValueError(
                        f"{OP}: argument 'in_ids' of output sample {i} has {j[1]}, out of range "
                        f"for a batch of {n}"
                    )
        else:
            sources = [(k, i) for k in range(n_inputs)]
        own = shapes[0][i].shape
        size = sizes[i]
        if size is not None and (len(size) < 2 or min(size[:2]) < 0):
            raise ValueError(
                f"{OP}: argument 'output_size' of sample {i} takes (H, W) >= 0, got {list(size)}"
            )
        out_hw = (int(size[0]), int(size[1])) if size is not None else tuple(own[-3:-1])
        src_shapes = [shapes[k][j].shape for k, j in sources]
        channels = {s[-1] for s in src_shapes}
        frames = {s[0] for s in src_shapes if len(s) == 4}
        if len(channels) > 1:
            raise ValueError(
                f"{OP}: the regions of output sample {i} must share a channel count, got "
                f"{sorted(channels)}"
            )
        if len(frames) > 1:
            raise ValueError(
                f"{OP}: the regions of output sample {i} must share a frame count, got "
                f"{sorted(frames)}"
            )
        c = channels.pop() if channels else own[-1]
        lead = ((frames.pop() if frames else own[0]),) if len(own) == 4 else ()
        regions = paste_kernels.sample_regions(
            i,
            sources,
            lambda src: tuple(shapes[src[0]][src[1]].shape[-3:-1]),
            out_hw,
            lambda name, a=sample: a[name] if a.given(name) else None,
        )
        plans.append(((*lead, *out_hw, c), out_dtype, regions))
    return plans
