"""fn.one_hot: class indices to one-hot (label) tensors, for classification and segmentation.

A new axis of ``num_classes`` is inserted at ``axis`` (appended by default): element
``i`` along it is ``on_value`` where the input equals ``i`` and ``off_value`` elsewhere
(indices outside ``[0, num_classes)`` give all ``off_value``). As in DALI, when ``axis`` is
not given and every sample of the batch has one element, the samples are scalars and the
output is 1-D — a batch-level rule, hence a batch operator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.runtime.operator import Operator
from chute.runtime.registry import register

__all__ = ["OneHot", "one_hot"]


def one_hot(
    indices: np.ndarray,
    num_classes: int,
    axis: int = -1,
    on_value: float = 1.0,
    off_value: float = 0.0,
    dtype: Any = np.float32,
) -> np.ndarray:
    """``indices`` with a one-hot axis of ``num_classes`` inserted at ``axis`` (-1 = last)."""
    ndim = indices.ndim
    if not -1 <= axis <= ndim:
        raise ValueError(
            f"argument 'axis' must be within [-1, {ndim}] for {ndim}-D input, got {axis}"
        )
    where = ndim if axis == -1 else axis
    classes = np.arange(num_classes).reshape((-1,) + (1,) * (ndim - where))
    values = np.expand_dims(indices, where)
    hot = values == classes.astype(values.dtype) if values.dtype.kind == "f" else values == classes
    out = np.where(hot, np.asarray(on_value).astype(dtype), np.asarray(off_value).astype(dtype))
    return np.ascontiguousarray(out.astype(dtype, copy=False))


@register
class OneHot(Operator):
    """Produces a one-hot encoding of the input (a new axis of ``num_classes`` elements)."""

    kind = "batch"

    schema = Schema(
        name="one_hot",
        inputs=("input",),
        args=(
            Arg(
                "num_classes",
                "int",
                0,
                "Number of classes (length of the new axis).",
                per_sample=False,
            ),
            Arg("axis", "int", -1, "Where the new axis goes (-1 = last).", per_sample=False),
            Arg("axis_name", "str", None, "Layout letter of the new axis.", per_sample=False),
            Arg("dtype", "dtype", np.float32, "Output data type.", per_sample=False),
            Arg("on_value", "float", 1.0, "Value where the class matches.", per_sample=False),
            Arg("off_value", "float", 0.0, "Value elsewhere.", per_sample=False),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict[str, Any]) -> None:
        name = args.get("axis_name")
        if name is not None and len(name) != 1:
            raise ValueError(
                f"fn.one_hot: argument 'axis_name' must be one character, got {name!r}"
            )
        if args.get("num_classes", 0) < 0:
            raise ValueError("fn.one_hot: argument 'num_classes' must not be negative")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        ndim = None if spec.ndim is None else spec.ndim + 1
        if "axis" not in node.args:
            ndim = None  # one-element samples become 1-D (DALI's scalar rule)
        layout = None
        name = node.arg("axis_name")
        if spec.layout and name and spec.ndim is not None:
            axis = node.arg("axis")
            where = spec.ndim if axis == -1 else axis
            layout = spec.layout[:where] + name + spec.layout[where:]
        return [Spec(np.dtype(node.arg("dtype")), ndim, layout)]

    def run_batch(self, inputs: list[list[np.ndarray]], args: Any, ctx: Any) -> list[np.ndarray]:
        samples = [np.asarray(s) for s in inputs[0]]
        given_axis = "axis" in args.node.args
        scalars = not given_axis and all(s.size == 1 for s in samples)
        kw = dict(
            num_classes=args["num_classes"],
            axis=-1 if scalars else args["axis"],
            on_value=args["on_value"],
            off_value=args["off_value"],
            dtype=np.dtype(args["dtype"]),
        )
        return [one_hot(s.reshape(()) if scalars else s, **kw) for s in samples]
