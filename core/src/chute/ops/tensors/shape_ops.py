"""Operators that change how samples are shaped or typed: squeeze, expand_dims, reinterpret,
cast_like, per_frame, one_hot.

The per-sample functions here take NumPy or CuPy arrays alike (methods only), so the GPU
backends (tensors_gpu.py) run the same code over device samples.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.tensor_ops import convert
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register


def _gpu(name: str) -> Any:
    from chute.ops.tensors import tensors_gpu

    return getattr(tensors_gpu, name)


def axes_from_names(op: str, names: str, layout: str | None) -> tuple[int, ...]:
    """Axis indices of the layout characters ``names``, or an error naming the argument."""
    if not layout:
        raise ValueError(f"{op}: argument 'axis_names' {names!r} needs an input with a layout")
    missing = [c for c in names if c not in layout]
    if missing:
        raise ValueError(
            f"{op}: argument 'axis_names' {names!r}: {''.join(missing)!r} not in layout {layout!r}"
        )
    return tuple(layout.index(c) for c in names)


def normalize_axes(op: str, axes: tuple[int, ...], ndim: int, name: str = "axes") -> list[int]:
    """Axes in [-ndim, ndim) as sorted non-negative indices, without repeats."""
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"{op}: argument '{name}' has axis {a} out of range for {ndim} dims")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"{op}: argument '{name}' repeats an axis: {list(axes)}")
    return sorted(out)


# ---- squeeze ---------------------------------------------------------------------------


@register
class Squeeze(Operator):
    """Removes the dimensions given as ``axes`` or ``axis_names`` (each of extent 1)."""

    schema = Schema(
        name="squeeze",
        inputs=("data",),
        args=(
            Arg("axes", "int_list", None, "Indices of the dimensions to remove."),
            Arg(
                "axis_names",
                "str",
                None,
                "Layout names of the dimensions to remove.",
                per_sample=False,
            ),
        ),
        devices=("cpu", "gpu"),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        has_axes = args.get("axes") is not None or "axes" in arg_inputs
        if has_axes == (args.get("axis_names") is not None):
            raise TypeError("fn.squeeze: give exactly one of the arguments 'axes' and 'axis_names'")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        names = node.arg("axis_names")
        if names is not None:  # resolved once here; run time reads 'axes'
            node.args["axes"] = axes_from_names("fn.squeeze", names, spec.layout)
        if "axes" in node.arg_inputs or spec.ndim is None:
            return [Spec(spec.dtype, None, None)]
        axes = normalize_axes("fn.squeeze", tuple(node.args["axes"]), spec.ndim)
        layout = (
            "".join(c for i, c in enumerate(spec.layout) if i not in axes) if spec.layout else None
        )
        return [Spec(spec.dtype, spec.ndim - len(axes), layout)]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> Any:
        return squeeze(inputs[0], args["axes"])

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        return _gpu("per_sample")(inputs, args, ctx, lambda x, a: squeeze(x, a["axes"]))


def squeeze(x: Any, axes: tuple[int, ...]) -> Any:
    """``x`` without the axes ``axes`` (each must have extent 1, or the volume stay 0)."""
    axes = normalize_axes("fn.squeeze", tuple(axes), x.ndim)
    bad = [a for a in axes if x.shape[a] != 1]
    if bad and x.size != 0:
        raise ValueError(
            f"fn.squeeze: argument 'axes' names axes {bad} of extent {[x.shape[a] for a in bad]} "
            f"(sample shape {tuple(x.shape)}); only extent-1 axes can be squeezed"
        )
    return x.reshape(tuple(s for i, s in enumerate(x.shape) if i not in axes))


# ---- expand_dims -----------------------------------------------------------------------


@register
class ExpandDims(Operator):
    """Inserts dimensions of extent 1 at the output positions ``axes``."""

    schema = Schema(
        name="expand_dims",
        inputs=("data",),
        args=(
            Arg("axes", "int_list", doc="Output indices of the new dimensions.", per_sample=False),
            Arg(
                "new_axis_names", "str", "", "Layout names of the new dimensions.", per_sample=False
            ),
        ),
        devices=("cpu", "gpu"),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        names = args.get("new_axis_names") or ""
        if names and len(names) != len(args["axes"]):
            raise ValueError(
                f"fn.expand_dims: argument 'new_axis_names' {names!r} must have one name per axis "
                f"in 'axes' {list(args['axes'])}"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        axes = node.arg("axes")
        if spec.ndim is None:
            return [Spec(spec.dtype, None, None)]
        ndim = spec.ndim + len(axes)
        normalize_axes("fn.expand_dims", tuple(axes), ndim)
        names = node.arg("new_axis_names")
        layout = None
        if names and (spec.layout or spec.ndim == 0):
            old = iter(spec.layout or "")
            new = dict(zip([a % ndim for a in axes], names))
            layout = "".join(new[i] if i in new else next(old) for i in range(ndim))
        return [Spec(spec.dtype, ndim, layout)]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> Any:
        return expand_dims(inputs[0], args["axes"])

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        axes = args["axes"]
        return _gpu("per_sample")(inputs, args, ctx, lambda x, a: expand_dims(x, axes))


def expand_dims(x: Any, axes: tuple[int, ...]) -> Any:
    """``x`` with extent-1 dimensions at the output positions ``axes``."""
    ndim = x.ndim + len(axes)
    new = set(normalize_axes("fn.expand_dims", tuple(axes), ndim))
    dims = iter(x.shape)
    return x.reshape(tuple(1 if i in new else next(dims) for i in range(ndim)))


# ---- reinterpret -----------------------------------------------------------------------


@register
class Reinterpret(Operator):
    """The same bytes seen with another ``dtype``, ``shape`` or ``layout`` (no data is copied)."""

    schema = Schema(
        name="reinterpret",
        inputs=("data",),
        args=(
            Arg("dtype", "dtype", None, "Element type the bytes are read as.", per_sample=False),
            Arg("shape", "int_list", None, "Output shape; one extent may be -1."),
            Arg("rel_shape", "float_list", None, "Output shape relative to the input's."),
            Arg(
                "src_dims",
                "int_list",
                None,
                "Input dims to keep (-1 inserts extent 1).",
                per_sample=False,
            ),
            Arg("layout", "str", None, "Layout of the output.", per_sample=False),
        ),
        devices=("cpu", "gpu"),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        given = [k for k in ("shape", "rel_shape", "src_dims") if k in args or k in arg_inputs]
        if len(given) > 1:
            raise TypeError(f"fn.reinterpret: arguments {given} exclude each other; give one")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        dtype = node.arg("dtype") or spec.dtype
        ndim = spec.ndim
        for key in ("shape", "rel_shape", "src_dims"):
            if node.arg(key) is not None:
                ndim = len(node.arg(key))
        if "shape" in node.arg_inputs:
            ndim = None
        layout = node.arg("layout")
        if layout is None:
            layout = spec.layout if ndim == spec.ndim else None
        if layout and ndim is not None and len(layout) != ndim:
            raise ValueError(f"argument 'layout' {layout!r} does not match {ndim} dimensions")
        return [Spec(dtype, ndim, layout or None)]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> Any:
        return reinterpret(inputs[0], args)

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        return _gpu("per_sample")(inputs, args, ctx, reinterpret)


def reinterpret(x: Any, args: Any) -> Any:
    """``x``'s bytes as ``dtype`` and the requested shape."""
    dtype = args["dtype"]
    if dtype is not None and np.dtype(dtype) != x.dtype:
        x = x if x.flags.c_contiguous else x.copy()
        nbytes = x.size * x.dtype.itemsize
        if nbytes % np.dtype(dtype).itemsize:
            raise ValueError(
                f"fn.reinterpret: a sample of {nbytes} bytes (shape {tuple(x.shape)}) is not a "
                f"whole number of argument 'dtype' {np.dtype(dtype)} elements"
            )
        x = x.reshape(-1).view(dtype).reshape(_view_shape(x.shape, x.dtype, np.dtype(dtype)))
    if args["src_dims"] is not None:
        dims = args["src_dims"]
        for d in dims:
            if not -1 <= d < x.ndim:
                raise ValueError(
                    f"fn.reinterpret: argument 'src_dims' has {d}, not in [-1, {x.ndim})"
                )
        dropped = [i for i in range(x.ndim) if i not in dims and x.shape[i] != 1]
        if dropped:
            raise ValueError(
                f"fn.reinterpret: argument 'src_dims' {list(dims)} drops axes {dropped} "
                f"of extent > 1 (sample shape {tuple(x.shape)})"
            )
        return x.reshape(tuple(1 if d == -1 else x.shape[d] for d in dims))
    if args["shape"] is not None:
        shape = tuple(int(s) for s in args["shape"])
    elif args["rel_shape"] is not None:
        rel = args["rel_shape"]
        if len(rel) != x.ndim:
            raise ValueError(
                f"fn.reinterpret: argument 'rel_shape' has {len(rel)} values for {x.ndim}-D samples"
            )
        shape = tuple(round(r * s) for r, s in zip(rel, x.shape))
    else:
        return x
    try:
        return x.reshape(shape)
    except ValueError:
        raise ValueError(
            f"fn.reinterpret: cannot view a sample of shape {tuple(x.shape)} ({x.size} elements) "
            f"as shape {shape}"
        ) from None


def _view_shape(shape: tuple, src: np.dtype, dst: np.dtype) -> tuple[int, ...]:
    """The shape of a C-contiguous array after a view as ``dst``: the last extent scales."""
    if not shape:
        return (src.itemsize // dst.itemsize,) if src.itemsize != dst.itemsize else ()
    last = shape[-1] * src.itemsize
    if last % dst.itemsize:
        return (int(np.prod(shape)) * src.itemsize // dst.itemsize,)
    return (*shape[:-1], last // dst.itemsize)


# ---- cast_like, per_frame --------------------------------------------------------------


@register
class CastLike(Operator):
    """Converts the first input to the type of the second (integers saturate, floats round)."""

    schema = Schema(name="cast_like", inputs=("input", "like"), devices=("cpu", "gpu"))

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [inputs[0].with_(dtype=inputs[1].dtype)]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> Any:
        return convert(inputs[0], inputs[1].dtype)

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        return _gpu("cast_like")(self, inputs, args, ctx)


@register
class PerFrame(Operator):
    """Marks the input as a sequence (layout starting with ``F``); the data is untouched."""

    schema = Schema(
        name="per_frame",
        inputs=("input",),
        args=(
            Arg(
                "replace",
                "bool",
                False,
                "Replace the outermost layout name by F (else it must already be F).",
                per_sample=False,
            ),
        ),
        devices=("cpu", "gpu"),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        if spec.ndim == 0:
            raise ValueError("fn.per_frame: a sequence needs at least one dimension, got scalars")
        if not spec.layout:
            layout = None if spec.ndim is None else "F" + "*" * (spec.ndim - 1)
        elif node.arg("replace"):
            layout = "F" + spec.layout[1:]
        elif spec.layout[0] != "F":
            raise ValueError(
                f"fn.per_frame: the input layout {spec.layout!r} does not start with F; "
                "pass replace=True to relabel its outermost dimension"
            )
        else:
            layout = spec.layout
        return [spec.with_(layout=layout)]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> Any:
        return inputs[0]

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        return _gpu("per_sample")(inputs, args, ctx, lambda x, a: x)


# ---- one_hot ---------------------------------------------------------------------------


@register
class OneHot(Operator):
    """One-hot encoding: a new axis of ``num_classes`` with ``on_value`` at each input's class."""

    schema = Schema(
        name="one_hot",
        inputs=("input",),
        args=(
            Arg(
                "num_classes",
                "int",
                0,
                "Number of classes (extent of the new axis).",
                per_sample=False,
            ),
            Arg("axis", "int", -1, "Where the new axis goes (-1: last).", per_sample=False),
            Arg("axis_name", "str", None, "Layout name of the new axis.", per_sample=False),
            Arg("dtype", "dtype", np.dtype(np.float32), "Output data type.", per_sample=False),
            Arg("on_value", "float", 1.0, "Value at the class index.", per_sample=False),
            Arg("off_value", "float", 0.0, "Value elsewhere.", per_sample=False),
        ),
        devices=("cpu", "gpu"),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        if args.get("num_classes", 0) < 1:
            raise ValueError(
                f"fn.one_hot: argument 'num_classes' must be at least 1, got {args.get('num_classes', 0)}"
            )
        name = args.get("axis_name")
        if name is not None and len(name) != 1:
            raise ValueError(
                f"fn.one_hot: argument 'axis_name' must be one character, got {name!r}"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        axis = node.arg("axis")
        ndim = None if spec.ndim is None else spec.ndim + 1
        if ndim is not None and not -1 <= axis < ndim:
            raise ValueError(f"argument 'axis' {axis} is out of range for {spec.ndim}-D input")
        # legacy: samples of one element are scalars (1-D output), known only at run time
        if "axis" not in node.args and spec.ndim:
            ndim = None
        layout = None
        name = node.arg("axis_name")
        if name and spec.layout is not None and ndim is not None:
            pos = ndim - 1 if axis == -1 else axis
            layout = spec.layout[:pos] + name + spec.layout[pos:]
        elif name and spec.ndim == 0:
            layout = name
        return [Spec(node.arg("dtype"), ndim, layout)]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> Any:
        return one_hot(np, inputs[0], args, legacy="axis" not in ctx.node.args)

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.gpu.runtime import require_gpu

        cp = require_gpu("fn.one_hot", device_id=ctx.device_id)
        return _gpu("per_sample")(
            inputs, args, ctx, lambda x, a: one_hot(cp, x, a, legacy="axis" not in ctx.node.args)
        )


def one_hot(xp: Any, x: Any, args: Any, legacy: bool) -> Any:
    """The one-hot encoding of ``x`` (NumPy or CuPy ``xp``); out-of-range classes get off_value."""
    n = args["num_classes"]
    axis = args["axis"]
    if legacy and x.size == 1:
        x = x.reshape(())
    pos = x.ndim if axis == -1 else axis
    if not 0 <= pos <= x.ndim:
        raise ValueError(
            f"fn.one_hot: argument 'axis' {axis} is out of range for {x.ndim}-D samples"
        )
    classes = xp.arange(n).reshape((n,) + (1,) * (x.ndim - pos))
    hot = xp.expand_dims(x, pos) == classes
    dtype = np.dtype(args["dtype"])
    on = convert(np.asarray([args["on_value"]]), dtype)[0]
    off = convert(np.asarray([args["off_value"]]), dtype)[0]
    return xp.where(hot, dtype.type(on), dtype.type(off)).astype(dtype, copy=False)
