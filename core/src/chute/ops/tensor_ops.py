"""Operators that move or relabel data: cast, reshape, transpose, stack, cat, shapes, copy, indexing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from chute.graph.node import DataNode, OpNode, bind_node_operator
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.runtime import output_pool
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register


@register
class Cast(Operator):
    """Converts to ``dtype`` (integers saturate, floats are rounded to nearest)."""

    schema = Schema(
        name="cast",
        inputs=("input",),
        args=(Arg("dtype", "dtype", doc="Output data type.", per_sample=False),),
        devices=("cpu", "gpu"),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [inputs[0].with_(dtype=node.arg("dtype"))]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        return convert(inputs[0], args["dtype"])

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops import tensor_gpu

        return tensor_gpu.cast(self, inputs, args, ctx)


def convert(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``x`` as ``dtype``: round half away from zero and saturate from float to integer (DALI's)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu" and x.dtype.kind == "f":
        info = np.iinfo(dtype)
        x = np.asarray(x)
        rounded = np.rint(x, out=np.empty(x.shape, x.dtype))  # C order, also for 0-d samples
        # x - rint(x) is exact, and +-0.5 exactly at the ties (inf gives NaN: no tie)
        with np.errstate(invalid="ignore"):
            diff = np.subtract(x, rounded, out=np.empty(x.shape, x.dtype))
        ties = np.flatnonzero(np.abs(diff, out=diff) == 0.5)
        if ties.size:  # half away from zero where rint went to the even neighbour
            tied = x.reshape(-1)[ties]
            rounded.reshape(-1)[ties] = np.trunc(tied) + np.sign(tied)
        return np.clip(rounded, info.min, info.max, out=rounded).astype(dtype)
    if dtype.kind in "iu" and x.dtype.kind in "iu":
        info = np.iinfo(dtype)
        if np.can_cast(x.dtype, dtype):
            return x.astype(dtype)
        return np.clip(x, info.min, info.max).astype(dtype)
    x = np.asarray(x)
    if x.dtype == dtype:
        return x.astype(dtype)
    # a recycled block (output_pool): a fresh multi-megabyte array costs its page faults
    out = output_pool.empty(x.shape, dtype)
    np.copyto(out, x, casting="unsafe")
    return out


@register
class Reshape(Operator):
    """Gives each sample a new shape with the same number of elements (``-1`` infers one extent)."""

    schema = Schema(
        name="reshape",
        inputs=("input",),
        args=(
            Arg("shape", "int_list", None, "Output shape; one extent may be -1."),
            Arg("rel_shape", "float_list", None, "Output shape relative to the input's."),
            Arg("layout", "str", None, "Layout of the output.", per_sample=False),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        given = {"shape", "rel_shape", "layout"} & {*args, *arg_inputs}
        if not given:
            raise TypeError("fn.reshape: give 'shape', 'rel_shape' or 'layout'")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        shape = node.arg("shape")
        rel = node.arg("rel_shape")
        ndim = (
            len(shape) if shape is not None else (len(rel) if rel is not None else inputs[0].ndim)
        )
        if "shape" in node.arg_inputs:
            ndim = None
        layout = node.arg("layout")
        if layout is not None and ndim is not None and layout and len(layout) != ndim:
            raise ValueError(f"layout {layout!r} does not match {ndim} dimensions")
        return [Spec(inputs[0].dtype, ndim, layout if layout is not None else None)]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        x = inputs[0]
        if args["shape"] is not None:
            shape = tuple(args["shape"])
        elif args["rel_shape"] is not None:
            rel = args["rel_shape"]
            shape = tuple(round(r * s) for r, s in zip(rel, x.shape))
        else:
            return x
        try:
            return x.reshape(shape)
        except ValueError:
            raise ValueError(
                f"cannot reshape a sample of shape {x.shape} ({x.size} elements) to {shape}"
            ) from None


@register
class Transpose(Operator):
    """Permutes the dimensions of each sample (``perm``), with an optional new layout."""

    schema = Schema(
        name="transpose",
        inputs=("input",),
        args=(
            Arg(
                "perm",
                "int_list",
                None,
                "Output dimension i is input dimension perm[i]; by default the axes reversed.",
                per_sample=False,
            ),
            Arg("output_layout", "str", None, "Layout of the output.", per_sample=False),
            Arg(
                "transpose_layout", "bool", True, "Permute the input layout too.", per_sample=False
            ),
        ),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        perm = node.arg("perm")
        spec = inputs[0]
        if perm is None:  # DALI: no perm reverses the axes
            if spec.ndim is None:
                return [Spec(spec.dtype, None, node.arg("output_layout"))]
            perm = list(range(spec.ndim))[::-1]
        if sorted(perm) != list(range(len(perm))):
            raise ValueError(
                f"argument 'perm' must be a permutation of 0..{len(perm) - 1}, got {perm}"
            )
        if spec.ndim is not None and spec.ndim != len(perm):
            raise ValueError(f"argument 'perm' has {len(perm)} entries for {spec.ndim}-D input")
        layout = node.arg("output_layout")
        if layout is None and node.arg("transpose_layout") and spec.layout:
            layout = "".join(spec.layout[p] for p in perm)
        return [Spec(spec.dtype, len(perm), layout)]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        return np.ascontiguousarray(inputs[0].transpose(args["perm"]))


@register
class Stack(Operator):
    """Joins the inputs along a new ``axis`` (inputs need equal shapes)."""

    schema = Schema(
        name="stack",
        inputs=("inputs",),
        variadic=True,
        args=(
            Arg("axis", "int", 0, "Position of the new axis.", per_sample=False),
            Arg("axis_name", "str", None, "Layout name of the new axis.", per_sample=False),
        ),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        _same_dtype(inputs)
        nd = inputs[0].ndim
        layout = inputs[0].layout
        if layout and node.arg("axis_name"):
            a = node.arg("axis")
            layout = layout[:a] + node.arg("axis_name") + layout[a:]
        else:
            layout = None
        return [Spec(inputs[0].dtype, None if nd is None else nd + 1, layout)]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        shapes = {x.shape for x in inputs}
        if len(shapes) > 1:
            raise ValueError(f"cannot stack inputs of different shapes {sorted(shapes)}")
        return np.stack(inputs, axis=args["axis"])


@register
class Cat(Operator):
    """Joins the inputs along an existing ``axis``."""

    schema = Schema(
        name="cat",
        inputs=("inputs",),
        variadic=True,
        args=(
            Arg("axis", "int", 0, "Axis to join along.", per_sample=False),
            Arg(
                "axis_name",
                "str",
                None,
                "Layout name of the axis (instead of axis).",
                per_sample=False,
            ),
        ),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        _same_dtype(inputs)
        ndims = {s.ndim for s in inputs if s.ndim is not None}
        if len(ndims) > 1:
            raise ValueError(f"inputs have different numbers of dimensions {sorted(ndims)}")
        name = node.arg("axis_name")
        if name is not None:
            layout = inputs[0].layout
            if not layout or name not in layout:
                raise ValueError(
                    f"argument 'axis_name' {name!r} is not in the input layout {layout!r}"
                )
            node.args["axis"] = layout.index(name)
        return [inputs[0]]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        axis = args["axis"]
        try:
            return np.concatenate(inputs, axis=axis)
        except ValueError:
            shapes = [x.shape for x in inputs]
            raise ValueError(f"cannot concatenate shapes {shapes} along axis {axis}") from None


def _same_dtype(inputs: list[Spec]) -> None:
    dtypes = {s.dtype for s in inputs if s.dtype is not None}
    if len(dtypes) > 1:
        raise TypeError(f"inputs have different data types {sorted(map(str, dtypes))}")


@register
class Shapes(Operator):
    """The shape of each sample, as a 1-D array."""

    schema = Schema(
        name="shapes",
        inputs=("input",),
        args=(Arg("dtype", "dtype", np.dtype(np.int64), "Output data type.", per_sample=False),),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [Spec(node.arg("dtype"), 1, None)]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        return np.array(inputs[0].shape, dtype=args["dtype"])


@register
class Copy(Operator):
    """A copy of the input."""

    schema = Schema(name="copy", inputs=("input",), devices=("cpu", "gpu"))

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        return np.array(inputs[0], copy=True)


# How many index positions may hold a per-sample DataNode (``x[idx]``, ``table[row, col]``).
_MAX_NODE_INDICES = 8


@dataclass(frozen=True)
class PerSampleIndex:
    """An index position whose integer comes per sample from argument ``at_<position>``."""

    position: int

    @property
    def arg(self) -> str:
        return f"at_{self.position}"


class Subscript(Operator):
    """Indexing and slicing of each sample: ``x[0]``, ``x[:, 1:3]``, ``x[..., ::-1]``, and
    ``x[idx]`` with a per-sample integer DataNode ``idx`` (as DALI's argument-input indices)."""

    schema = Schema(
        name="subscript",
        inputs=("input",),
        devices=("cpu", "gpu"),
        args=(
            Arg(
                "index",
                "any",
                (),
                "The index as a tuple of ints, slices, Ellipsis and PerSampleIndex markers.",
                per_sample=False,
            ),
            *(
                Arg(f"at_{k}", "int", None, f"The per-sample integer index at position {k}.")
                for k in range(_MAX_NODE_INDICES)
            ),
        ),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        index = node.arg("index")
        spec = inputs[0]
        if spec.ndim is None:
            return [Spec(spec.dtype, None, None)]
        consumed = sum(1 for i in index if i is not Ellipsis and i is not None)
        if consumed > spec.ndim:
            raise IndexError(f"too many indices ({consumed}) for {spec.ndim}-D samples")
        dims = list(range(spec.ndim))
        kept: list[int | None] = []
        pos = 0
        for i, item in enumerate(index):
            if item is Ellipsis:
                rest = sum(1 for j in index[i + 1 :] if j is not None and j is not Ellipsis)
                n = spec.ndim - pos - rest
                kept.extend(dims[pos : pos + n])
                pos += n
            elif item is None:
                kept.append(None)
            elif isinstance(item, slice):
                kept.append(dims[pos])
                pos += 1
            else:
                pos += 1
        kept.extend(dims[pos:])
        layout = None
        if spec.layout and None not in kept:
            layout = "".join(spec.layout[d] for d in kept)  # type: ignore[index]
        return [Spec(spec.dtype, len(kept), layout)]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        x = inputs[0]
        index = tuple(
            args[item.arg] if isinstance(item, PerSampleIndex) else item for item in args["index"]
        )
        try:
            return x[index]
        except IndexError as exc:
            raise IndexError(f"{exc} (sample shape {x.shape}, index {index})") from None

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        """Each sample's view on the GPU (CuPy indexing; per-sample indices from the host)."""
        from chute.gpu.batches import gpu_batch

        (batch,) = inputs
        out = []
        with ctx.stream:
            for i, x in enumerate(batch.samples()):
                sample_args = args.sample(i)
                index = tuple(
                    sample_args[item.arg] if isinstance(item, PerSampleIndex) else item
                    for item in sample_args["index"]
                )
                try:
                    out.append(x[index].copy())
                except IndexError as exc:
                    raise IndexError(f"{exc} (sample shape {x.shape}, index {index})") from None
        ndim = batch.at(0).ndim if len(batch) else None
        spec = self.infer(ctx.node, [Spec(batch.dtype, ndim, batch.layout() or None)])
        return gpu_batch(out, spec[0].layout or "", ctx)


def subscript(x: DataNode, index: Any) -> DataNode:
    """Trace ``x[index]`` with constant ints, slices, Ellipsis and None, and integer
    DataNodes: a per-sample index (a scalar per sample, on the CPU) at that position."""
    if not isinstance(index, tuple):
        index = (index,)
    per_sample: dict[str, DataNode] = {}
    items: list[Any] = []
    for position, item in enumerate(index):
        if isinstance(item, DataNode):
            if position >= _MAX_NODE_INDICES:
                raise TypeError(
                    f"a DataNode index is accepted at the first {_MAX_NODE_INDICES} positions, "
                    f"got one at position {position}"
                )
            marker = PerSampleIndex(position)
            per_sample[marker.arg] = item
            items.append(marker)
        else:
            items.append(item)
    index = tuple(items)
    for item in index:
        ok = item is Ellipsis or item is None or isinstance(item, (int, np.integer, PerSampleIndex))
        if isinstance(item, slice):
            ok = all(
                v is None or isinstance(v, (int, np.integer))
                for v in (item.start, item.stop, item.step)
            )
        if not ok:
            raise TypeError(
                "DataNode indices must be ints, integer DataNodes, slices of ints, None or ..., "
                f"got {type(item).__name__}"
            )
    return Subscript(device=x.device)(x, index=index, **per_sample)


def shapes(x: DataNode) -> DataNode:
    """``fn.shapes(x)``: the shape of each sample (what ``DataNode.shape()`` traces)."""
    return Shapes()(x)


bind_node_operator("subscript", subscript)
bind_node_operator("shapes", shapes)
