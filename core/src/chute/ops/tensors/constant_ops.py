"""Operators that make data: constant, full, full_like, zeros, zeros_like, ones, ones_like."""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import DataNode, OpNode
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

_I32 = np.dtype(np.int32)
_F32 = np.dtype(np.float32)


def _check_shape(op: str, shape: tuple[int, ...] | None) -> tuple[int, ...]:
    if shape is None:
        return ()
    for s in shape:
        if s < 0:
            raise ValueError(f"{op}: argument 'shape' must have no negative extent, got {shape}")
    return tuple(int(s) for s in shape)


def _shape_ndim(node: OpNode) -> int | None:
    if "shape" in node.arg_inputs:
        return None
    shape = node.arg("shape")
    return len(shape) if shape is not None else 0


def _check_layout(layout: str | None, ndim: int | None) -> str | None:
    if layout and ndim is not None and len(layout) != ndim:
        raise ValueError(f"argument 'layout' {layout!r} does not match {ndim} dimensions")
    return layout or None


@register
class Constant(Operator):
    """A constant tensor from ``fdata`` (floats) or ``idata`` (ints), the same for every sample."""

    schema = Schema(
        name="constant",
        args=(
            Arg("fdata", "float_list", None, "Float contents.", per_sample=False),
            Arg("idata", "int_list", None, "Integer contents.", per_sample=False),
            Arg(
                "shape",
                "int_list",
                None,
                "Shape of the output; one value is broadcast to it.",
                per_sample=False,
            ),
            Arg("layout", "str", None, "Layout of the output.", per_sample=False),
            Arg(
                "dtype",
                "dtype",
                None,
                "Output type (float32 for fdata, int32 for idata).",
                per_sample=False,
            ),
        ),
        devices=("cpu", "gpu"),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        given = [k for k in ("fdata", "idata") if args.get(k) is not None]
        if len(given) != 1:
            raise TypeError("fn.constant: give exactly one of the arguments 'fdata' and 'idata'")
        data = args[given[0]]
        shape = _check_shape("fn.constant", args.get("shape"))
        if args.get("shape") is not None and len(data) not in (1, int(np.prod(shape))):
            raise ValueError(
                f"fn.constant: argument '{given[0]}' has {len(data)} values for shape {shape} "
                f"({int(np.prod(shape))} elements); give that many or one"
            )

    def value(self, args: Any) -> np.ndarray:
        """The constant, as every sample gets it."""
        fdata = args["fdata"]
        data = fdata if fdata is not None else args["idata"]
        dtype = args["dtype"] or (_F32 if fdata is not None else _I32)
        arr = np.asarray(data, dtype=np.float64 if fdata is not None else np.int64)
        shape = args["shape"]
        if shape is not None:
            shape = tuple(shape)
            arr = np.broadcast_to(arr.reshape(()), shape) if arr.size == 1 else arr.reshape(shape)
        return arr.astype(dtype)

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        fdata = node.arg("fdata")
        dtype = node.arg("dtype") or (_F32 if fdata is not None else _I32)
        shape = node.arg("shape")
        ndim = 1 if shape is None else len(shape)
        return [Spec(dtype, ndim, _check_layout(node.arg("layout"), ndim))]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        return self.value(args)

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.tensors import tensors_gpu

        return tensors_gpu.constant(self, args, ctx)


def as_node(op: str, x: Any) -> DataNode:
    """A Python or NumPy constant given as an input, traced as fn.constant."""
    if isinstance(x, DataNode):
        return x
    arr = np.asarray(x)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{op}: an input must be a DataNode or a number, got {type(x).__name__}")
    key = "fdata" if arr.dtype.kind == "f" else "idata"
    dtype = arr.dtype if arr.dtype != np.int64 and arr.dtype != np.float64 else None
    return Constant()(**{key: arr.reshape(-1).tolist(), "shape": arr.shape, "dtype": dtype})


@register
class Full(Operator):
    """New data of ``shape`` filled with ``fill_value`` (broadcast NumPy-style), of its type."""

    schema = Schema(
        name="full",
        inputs=("fill_value",),
        args=(
            Arg("shape", "int_list", None, "Shape of the output (fill_value's if not given)."),
            Arg("layout", "str", None, "Layout of the output.", per_sample=False),
        ),
    )

    def convert_input(self, index: int, x: Any) -> DataNode:
        return as_node("fn.full", x)

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        if "shape" in node.arg_inputs:
            ndim = None
        elif node.arg("shape") is not None:
            ndim = len(node.arg("shape"))
        else:
            ndim = inputs[0].ndim
        return [Spec(inputs[0].dtype, ndim, _check_layout(node.arg("layout"), ndim))]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        (value,) = inputs
        if args["shape"] is None:
            return np.array(value, copy=True)
        return fill(value, _check_shape("fn.full", args["shape"]), "fill_value")


def fill(value: np.ndarray, shape: tuple[int, ...], name: str) -> np.ndarray:
    """``value`` broadcast to ``shape`` as a new array (an error names the input when it can't)."""
    try:
        return np.broadcast_to(value, shape).copy()
    except ValueError:
        raise ValueError(
            f"input '{name}' of shape {value.shape} does not broadcast to the shape {shape}"
        ) from None


@register
class FullLike(Operator):
    """New data with the shape, type and layout of ``data_like``, filled with ``fill_value``."""

    schema = Schema(name="full_like", inputs=("data_like", "fill_value"))

    def convert_input(self, index: int, x: Any) -> DataNode:
        return as_node("fn.full_like", x)

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [inputs[0]]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        like, value = inputs
        return fill(value, like.shape, "fill_value").astype(like.dtype, copy=False)


class _Filled(Operator):
    """zeros / ones: data of ``shape`` and ``dtype`` filled with one number."""

    fill_value: int = 0
    schema = Schema(
        name="zeros",
        args=(
            Arg("shape", "int_list", None, "Shape of the output (a scalar if not given)."),
            Arg("dtype", "dtype", _I32, "Output data type.", per_sample=False),
            Arg("layout", "str", None, "Layout of the output.", per_sample=False),
        ),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        ndim = _shape_ndim(node)
        return [Spec(node.arg("dtype"), ndim, _check_layout(node.arg("layout"), ndim))]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        shape = _check_shape(self.schema.display_name, args["shape"])
        return np.full(shape, self.fill_value, dtype=args["dtype"])


@register
class Zeros(_Filled):
    """New data of ``shape`` and ``dtype`` (int32 by default), filled with zeros."""

    fill_value = 0
    schema = Schema(name="zeros", args=_Filled.schema.args)


@register
class Ones(_Filled):
    """New data of ``shape`` and ``dtype`` (int32 by default), filled with ones."""

    fill_value = 1
    schema = Schema(name="ones", args=_Filled.schema.args)


class _FilledLike(Operator):
    """zeros_like / ones_like: data of the input's shape and layout, filled with one number."""

    fill_value: int = 0
    schema = Schema(
        name="zeros_like",
        inputs=("data_like",),
        args=(
            Arg("dtype", "dtype", None, "Output type (the input's by default).", per_sample=False),
        ),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        dtype = node.arg("dtype")
        return [inputs[0].with_(dtype=dtype) if dtype is not None else inputs[0]]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        (like,) = inputs
        return np.full(like.shape, self.fill_value, dtype=args["dtype"] or like.dtype)


@register
class ZerosLike(_FilledLike):
    """New data with the shape and layout of the input, filled with zeros."""

    fill_value = 0
    schema = Schema(name="zeros_like", inputs=("data_like",), args=_FilledLike.schema.args)


@register
class OnesLike(_FilledLike):
    """New data with the shape and layout of the input, filled with ones."""

    fill_value = 1
    schema = Schema(name="ones_like", inputs=("data_like",), args=_FilledLike.schema.args)
