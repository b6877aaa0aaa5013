"""Operators that regroup frames or samples: element_extract, sequence_rearrange,
batch_permutation, permute_batch."""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register


def _gpu(name: str) -> Any:
    from chute.ops.tensors import tensors_gpu

    return getattr(tensors_gpu, name)


def _sequence_layout(op: str, spec: Spec) -> None:
    if spec.layout and spec.layout[0] != "F":
        raise ValueError(f"{op}: the input layout {spec.layout!r} must start with F (frames)")
    if spec.ndim == 0:
        raise ValueError(f"{op}: the input must be sequences (at least 1 dim), got scalars")


def frame_indices(op: str, arg: str, indices: Any, frames: int) -> np.ndarray:
    """``indices`` as an int array, each checked to be in [0, frames)."""
    idx = np.asarray(indices, dtype=np.int64).reshape(-1)
    bad = idx[(idx < 0) | (idx >= frames)]
    if bad.size:
        raise ValueError(
            f"{op}: argument '{arg}' has index {int(bad[0])} out of range for a sequence of "
            f"{frames} frames"
        )
    return idx


@register
class ElementExtract(Operator):
    """Frames ``element_map[k]`` of each sequence, one output per entry of ``element_map``."""

    schema = Schema(
        name="element_extract",
        inputs=("input",),
        args=(
            Arg(
                "element_map", "int_list", doc="Indices of the frames to extract.", per_sample=False
            ),
            Arg(
                "layout",
                "str",
                None,
                "Layout of the outputs (the input's without F).",
                per_sample=False,
            ),
        ),
        devices=("cpu", "gpu"),
    )

    def num_outputs(self, args: Any, num_inputs: int = 0) -> int:
        return len(args["element_map"])

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        if not args["element_map"]:
            raise ValueError("fn.element_extract: argument 'element_map' must not be empty")
        neg = [i for i in args["element_map"] if i < 0]
        if neg:
            raise ValueError(
                f"fn.element_extract: argument 'element_map' has negative index {neg[0]}"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        _sequence_layout("fn.element_extract", spec)
        ndim = None if spec.ndim is None else spec.ndim - 1
        layout = node.arg("layout") or (spec.layout[1:] if spec.layout else None)
        return [Spec(spec.dtype, ndim, layout or None)] * len(node.outputs)

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> Any:
        x = inputs[0]
        idx = frame_indices("fn.element_extract", "element_map", args["element_map"], x.shape[0])
        outs = tuple(np.array(x[i], copy=True) for i in idx)
        return outs if len(outs) > 1 else outs[0]

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        return _gpu("element_extract")(inputs, args, ctx)


@register
class SequenceRearrange(Operator):
    """Reorders the frames of each sequence: ``out[i] = in[new_order[i]]``."""

    schema = Schema(
        name="sequence_rearrange",
        inputs=("input",),
        args=(Arg("new_order", "int_list", doc="Input frame of each output frame (per sample)."),),
        devices=("cpu", "gpu"),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        if "new_order" in args and not args["new_order"]:
            raise ValueError("fn.sequence_rearrange: argument 'new_order' must not be empty")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        _sequence_layout("fn.sequence_rearrange", inputs[0])
        return [inputs[0]]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> Any:
        x = inputs[0]
        return x[rearrange_order(args["new_order"], x.shape[0])]

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        return _gpu("sequence_rearrange")(inputs, args, ctx)


def rearrange_order(order: Any, frames: int) -> np.ndarray:
    """sequence_rearrange's checked frame indices."""
    if not len(order):
        raise ValueError("fn.sequence_rearrange: argument 'new_order' must not be empty")
    return frame_indices("fn.sequence_rearrange", "new_order", order, frames)


@register
class BatchPermutation(Operator):
    """Random indices of the batch's samples (a permutation unless ``allow_repetitions``)."""

    kind = "batch"
    lane_safe = True
    schema = Schema(
        name="batch_permutation",
        args=(
            Arg(
                "allow_repetitions",
                "bool",
                False,
                "Indices may repeat (and be omitted).",
                per_sample=False,
            ),
            Arg(
                "no_fixed_points",
                "bool",
                False,
                "out[i] != i (ignored for a batch of 1).",
                per_sample=False,
            ),
        ),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [Spec(np.dtype(np.int32), 0, None)]

    def run_batch(self, inputs: list, args: Any, ctx: Any) -> list[np.ndarray]:
        n = args.n
        rng = ctx.rng(0)  # the batch's draw comes from its first sample's stream
        perm = permutation(rng, n, args["allow_repetitions"], args["no_fixed_points"])
        return [np.array(v, dtype=np.int32) for v in perm]


def permutation(rng: np.random.Generator, n: int, repeats: bool, no_fixed: bool) -> np.ndarray:
    """Indices 0..n-1 drawn as batch_permutation does."""
    if n <= 1:
        return np.zeros(n, np.int64)
    if repeats:
        if not no_fixed:
            return rng.integers(0, n, size=n)
        draw = rng.integers(0, n - 1, size=n)  # skip i: values >= i move up by one
        return draw + (draw >= np.arange(n))
    while True:  # a uniform derangement by rejection: about e draws
        perm = rng.permutation(n)
        if not no_fixed or not np.any(perm == np.arange(n)):
            return perm


@register
class PermuteBatch(Operator):
    """A batch made of the input's samples ``indices[i]``: ``out[i] = in[indices[i]]``."""

    kind = "batch"
    lane_safe = True
    schema = Schema(
        name="permute_batch",
        inputs=("input",),
        args=(
            Arg(
                "indices",
                "int_list",
                doc="One index per sample: a list of batch-size ints or per-sample scalars.",
            ),
        ),
        devices=("cpu", "gpu"),
    )

    def run_batch(self, inputs: list, args: Any, ctx: Any) -> list:
        samples = inputs[0]
        return [samples[i] for i in batch_indices(args, len(samples))]

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        return _gpu("permute_batch")(inputs, batch_indices(args, len(inputs[0])), ctx)


def batch_indices(args: Any, n: int) -> list[int]:
    """permute_batch's indices for a batch of ``n``, each checked to be in [0, n)."""
    if args.is_per_sample("indices"):
        values = []
        for i, v in enumerate(args.column("indices")):
            if len(v) != 1:
                raise ValueError(
                    f"fn.permute_batch: argument 'indices' of sample {i} must be a scalar, got {v}"
                )
            values.append(v[0])
    else:
        values = list(args["indices"])
        if len(values) != n:
            raise ValueError(
                f"fn.permute_batch: argument 'indices' has {len(values)} values for a batch of {n}"
            )
    for v in values:
        if not 0 <= v < n:
            raise ValueError(
                f"fn.permute_batch: argument 'indices' has {v}, out of range for a batch of {n}"
            )
    return values
