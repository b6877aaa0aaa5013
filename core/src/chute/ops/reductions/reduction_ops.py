"""fn.reductions.*: sum, mean, min, max, mean_square, rms, std_dev, variance over axes.

Output types (DALI's): min and max keep the input type; sum accumulates in ``dtype``
(default: int64 for signed integers and bool, uint64 for unsigned, float32 for float16,
the input's float type otherwise); mean takes ``dtype`` too (default float32, float64 for
float64 input); mean_square, rms, std_dev and variance give float32 (float64 for float64
input). std_dev and variance take the mean as a second input (a scalar per sample, or an
array of the reduced shape with the reduced axes kept or dropped).
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from chute.graph.node import DataNode, OpNode
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.tensors.constant_ops import as_node
from chute.ops.tensors.shape_ops import axes_from_names, normalize_axes
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

_F32 = np.dtype(np.float32)
_F64 = np.dtype(np.float64)

_AXES = (
    Arg(
        "axes",
        "int_list",
        None,
        "Axes to reduce (all if neither this nor axis_names).",
        per_sample=False,
    ),
    Arg("axis_names", "str", None, "Layout names of the axes to reduce.", per_sample=False),
    Arg("keep_dims", "bool", False, "Keep reduced axes with extent 1.", per_sample=False),
)
_DTYPE = Arg("dtype", "dtype", None, "Output (and accumulation) type.", per_sample=False)
_DDOF = Arg(
    "ddof", "int", 0, "Delta degrees of freedom: the divisor is N - ddof.", per_sample=False
)


def default_dtype(kind: str, dtype: np.dtype) -> np.dtype:
    """The output type of reduction ``kind`` for input ``dtype`` when none is given."""
    if kind in ("min", "max"):
        return dtype
    if kind == "sum":
        if dtype.kind == "u":
            return np.dtype(np.uint64)
        if dtype.kind in "bi":
            return np.dtype(np.int64)
        return _F32 if dtype == np.float16 else dtype
    return _F64 if dtype == _F64 else _F32


class Reduction(Operator):
    """Base of the reductions: axes, keep_dims and the output type."""

    kind_name = "sum"
    cpu_batch_wise = False

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        if args.get("axes") is not None and args.get("axis_names") is not None:
            raise TypeError(
                f"{self.schema.display_name}: arguments 'axes' and 'axis_names' exclude each other"
            )
        if args.get("ddof", 0) < 0:
            raise ValueError(
                f"{self.schema.display_name}: argument 'ddof' must be >= 0, got {args['ddof']}"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        names = node.arg("axis_names")
        if names is not None:  # resolved once here; run time reads 'axes'
            node.args["axes"] = axes_from_names(self.schema.display_name, names, spec.layout)
        dtype = node.arg("dtype") if "dtype" in node.schema.arg_index else None
        if dtype is None and spec.dtype is not None:
            dtype = default_dtype(self.kind_name, spec.dtype)
        if spec.ndim is None:
            return [Spec(dtype, None, None)]
        axes = self._axes(node.arg("axes"), spec.ndim)
        if node.arg("keep_dims"):
            return [Spec(dtype, spec.ndim, spec.layout)]
        layout = None
        if spec.layout:
            layout = "".join(c for i, c in enumerate(spec.layout) if i not in axes) or None
        return [Spec(dtype, spec.ndim - len(axes), layout)]

    def convert_input(self, index: int, x: Any) -> DataNode:
        # std_dev / variance take the mean as a number too
        return (
            as_node(self.schema.display_name, x) if index == 1 else super().convert_input(index, x)
        )

    def _axes(self, axes: Any, ndim: int) -> tuple[int, ...]:
        if axes is None:
            return tuple(range(ndim))
        return tuple(normalize_axes(self.schema.display_name, tuple(axes), ndim))

    def out_dtype(self, args: Any, dtype: np.dtype) -> np.dtype:
        given = args["dtype"] if "dtype" in self.schema.arg_index else None
        return np.dtype(given) if given is not None else default_dtype(self.kind_name, dtype)

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        x = inputs[0]
        axes = self._axes(args["axes"], x.ndim)
        dtype = self.out_dtype(args, x.dtype)
        mean = inputs[1] if len(inputs) > 1 else None
        fast = per_channel_reduce(self.kind_name, x, axes, args["keep_dims"], dtype)
        if fast is not None:
            return fast
        with np.errstate(all="ignore"):
            out = reduce(np, self.kind_name, x, axes, args["keep_dims"], dtype, args, mean)
        out = np.asarray(out)
        return out if out.flags.c_contiguous else out.copy()

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.reductions import reductions_gpu

        return reductions_gpu.reduce_batch(self, inputs, args, ctx)


# dtypes OpenCV sums exactly in float64 (cv2.sumElems)
_CV_SUMMABLE = frozenset(np.dtype(t) for t in ("uint8", "int8", "uint16", "int16", "float32"))


def per_channel_reduce(
    kind: str, x: np.ndarray, axes: tuple[int, ...], keep: bool, dtype: np.dtype
) -> np.ndarray | None:
    """min, max, sum or mean over every axis but the last of a contiguous sample with 1 to 4
    channels (an image's per-channel statistics), or None where this does not apply.

    NumPy reduces the leading axes of an HWC array with a strided inner loop, ~3 ms for a
    224x224x3 uint8 image; a 1-D reduction per channel takes ~0.05 ms (min, max) and
    OpenCV's float64 sums ~0.01 ms (sum, mean).
    """
    if kind not in ("min", "max", "sum", "mean") or x.ndim < 2 or x.size == 0:
        return None
    channels = x.shape[-1]
    if axes != tuple(range(x.ndim - 1)) or not 1 <= channels <= 4 or not x.flags.c_contiguous:
        return None
    shape = (1,) * (x.ndim - 1) + (channels,) if keep else (channels,)
    if kind in ("min", "max"):
        if x.dtype.kind not in "biuf":
            return None
        flat = x.reshape(-1)
        pick = np.min if kind == "min" else np.max
        out = np.array([pick(flat[c::channels]) for c in range(channels)], dtype=x.dtype)
        return out.reshape(shape).astype(dtype, copy=False)
    if x.dtype not in _CV_SUMMABLE or dtype.kind not in "iuf":
        return None
    # one row of pixels: cv2.sumElems of an N x 1 image is ~100x slower (per-row overhead)
    totals = np.array(cv2.sumElems(x.reshape(1, -1, channels))[:channels], np.float64)
    if kind == "mean":
        totals /= x.size // channels
    return totals.reshape(shape).astype(dtype)


def reduce(
    xp: Any,
    kind: str,
    x: Any,
    axes: tuple[int, ...],
    keep: bool,
    dtype: np.dtype,
    args: Any,
    mean: Any = None,
) -> Any:
    """Reduction ``kind`` of ``x`` over ``axes`` in NumPy or CuPy ``xp``, as ``dtype``.

    ``axes`` may be empty (nothing reduced: the value itself, as DALI). ``mean``: the
    precomputed mean of std_dev / variance, or None to compute it.
    """
    op = f"fn.reductions.{kind}"
    count = int(np.prod([x.shape[a] for a in axes])) if axes else 1
    if kind in ("min", "max"):
        if count == 0 and x.size == 0 and axes:
            raise ValueError(f"{op}: cannot reduce an empty sample (shape {tuple(x.shape)})")
        func = xp.min if kind == "min" else xp.max
        out = func(x, axis=axes, keepdims=keep) if axes else x.copy()
        return out.astype(dtype, copy=False)
    acc = dtype if dtype.kind == "f" else (_F64 if kind != "sum" else dtype)
    if kind == "sum":
        return xp.sum(x, axis=axes, keepdims=keep, dtype=acc).astype(dtype, copy=False)
    work = x.astype(_F64 if dtype == _F64 else _F32, copy=False) if x.dtype.kind != "f" else x
    if kind == "mean":
        total = xp.sum(work, axis=axes, keepdims=keep, dtype=acc)
        return (total / count if count else total * np.nan).astype(dtype, copy=False)
    if kind in ("mean_square", "rms"):
        total = xp.sum(work * work, axis=axes, keepdims=keep, dtype=acc)
        out = total / count if count else total * np.nan
        return (xp.sqrt(out) if kind == "rms" else out).astype(dtype, copy=False)
    # std_dev, variance
    if mean is None:
        m = xp.mean(work, axis=axes, keepdims=True, dtype=acc)
    else:
        m = _mean_as_kept(op, xp, mean, x.shape, axes)
    diff = work - m.astype(work.dtype, copy=False)
    total = xp.sum(diff * diff, axis=axes, keepdims=keep, dtype=acc)
    div = count - args["ddof"]
    out = total / div if div > 0 else total * np.nan
    return (xp.sqrt(out) if kind == "std_dev" else out).astype(dtype, copy=False)


def _mean_as_kept(op: str, xp: Any, mean: Any, shape: tuple, axes: tuple[int, ...]) -> Any:
    """The ``mean`` input shaped to broadcast against the sample (reduced axes as extent 1)."""
    kept = tuple(1 if i in axes else s for i, s in enumerate(shape))
    dropped = tuple(s for i, s in enumerate(shape) if i not in axes)
    if mean.size == 1:
        return mean.reshape(())
    if tuple(mean.shape) == kept:
        return mean
    if tuple(mean.shape) == dropped:
        return mean.reshape(kept)
    raise ValueError(
        f"{op}: input 'mean' of shape {tuple(mean.shape)} does not match the reduced shape "
        f"{dropped} (or {kept} with kept dims) of a sample of shape {tuple(shape)}"
    )


def _schema(kind: str, doc_args: tuple[Arg, ...], two_inputs: bool = False) -> Schema:
    return Schema(
        name=f"reductions.{kind}",
        inputs=("data", "mean") if two_inputs else ("input",),
        args=(*_AXES, *doc_args),
        devices=("cpu", "gpu"),
    )


@register
class Sum(Reduction):
    """Sum of the elements along ``axes``."""

    kind_name = "sum"
    schema = _schema("sum", (_DTYPE,))


@register
class Mean(Reduction):
    """Mean of the elements along ``axes``."""

    kind_name = "mean"
    schema = _schema("mean", (_DTYPE,))


@register
class Min(Reduction):
    """Smallest element along ``axes``."""

    kind_name = "min"
    schema = _schema("min", ())


@register
class Max(Reduction):
    """Largest element along ``axes``."""

    kind_name = "max"
    schema = _schema("max", ())


@register
class MeanSquare(Reduction):
    """Mean of the squared elements along ``axes``."""

    kind_name = "mean_square"
    schema = _schema("mean_square", ())


@register
class Rms(Reduction):
    """Root mean square of the elements along ``axes``."""

    kind_name = "rms"
    schema = _schema("rms", ())


@register
class StdDev(Reduction):
    """Standard deviation along ``axes`` around the given ``mean``: sqrt(sum((x-mean)^2) / (N-ddof))."""

    kind_name = "std_dev"
    schema = _schema("std_dev", (_DDOF,), two_inputs=True)


@register
class Variance(Reduction):
    """Variance along ``axes`` around the given ``mean``: sum((x-mean)^2) / (N-ddof)."""

    kind_name = "variance"
    schema = _schema("variance", (_DDOF,), two_inputs=True)
