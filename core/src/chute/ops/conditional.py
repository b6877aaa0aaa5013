"""The split and merge nodes of per-sample conditionals (DALI's ``_conditional.split/merge``).

They are not user operators (no ``fn.`` name): the tracer adds them where a value enters
or leaves a branch (chute.graph.trace.Graph.bring_into, chute.graph.conditional), and the
executor runs them itself by their ``kind`` (chute.executor.branches): a split selects
the samples of a branch, a merge puts two branches' samples back in batch order. Here
they declare what build checks: a scalar predicate, and branches whose values agree in
dtype, dimensions and layout.
"""

from __future__ import annotations

from chute.graph.node import OpNode, bind_node_operator
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.runtime.operator import Operator

__all__ = ["Merge", "Split"]

_SCHEMA_DEVICES = ("cpu", "gpu")


class Split(Operator):
    """The samples of one branch: input 0 where input 1 (the predicate) is ``branch``."""

    schema = Schema(
        "_conditional.split",
        args=(
            Arg(
                "branch",
                "any",
                True,
                "The branch: samples whose predicate is this (a case index in a switch).",
                False,
            ),
            Arg("where", "str", "a conditional", "The conditional, for errors.", False),
        ),
        inputs=("input", "predicate"),
        devices=_SCHEMA_DEVICES,
        doc="Selects the samples of a conditional's branch (added by the tracer).",
    )
    kind = "split"
    lane_safe = True

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        check_predicate(node, inputs[1])
        return [inputs[0]]


class Merge(Operator):
    """Input 0's samples where the last input (the predicate) is true, input 1's elsewhere;
    with n > 2 value inputs (a switch), input k's where the clamped index is k."""

    schema = Schema(
        "_conditional.merge",
        args=(
            Arg("name", "str", "value", "The variable merged, for errors.", False),
            Arg("where", "str", "a conditional", "The conditional, for errors.", False),
        ),
        inputs=("true_input", "false_input", "predicate"),
        variadic=True,
        devices=_SCHEMA_DEVICES,
        doc="Joins the values of a conditional's branches in batch order (added by the tracer).",
    )
    kind = "merge"
    lane_safe = True

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        values = inputs[:-1]
        what = f"{node.arg('where')}: variable {node.arg('name')!r}"
        names = ["the if branch", "the else branch"] if len(values) == 2 else None

        def name(k: int) -> str:
            return names[k] if names else f"case {k}"

        first = values[0]
        for k, other in enumerate(values[1:], 1):
            if first.dtype is not None and other.dtype is not None and first.dtype != other.dtype:
                raise TypeError(
                    f"{what} is {first.dtype} in {name(0)} and {other.dtype} in {name(k)}; a "
                    "variable's samples form one batch, so every branch must give it the same "
                    "type (cast one with fn.cast)"
                )
            if first.ndim is not None and other.ndim is not None and first.ndim != other.ndim:
                raise ValueError(
                    f"{what} has {first.ndim} dimensions in {name(0)} and {other.ndim} in "
                    f"{name(k)}; every branch must give it the same number of dimensions"
                )
            if first.layout and other.layout and first.layout != other.layout:
                raise ValueError(
                    f"{what} has layout {first.layout!r} in {name(0)} and {other.layout!r} "
                    f"in {name(k)}; every branch must give it the same layout"
                )
        return [
            Spec(
                next((v.dtype for v in values if v.dtype is not None), None),
                next((v.ndim for v in values if v.ndim is not None), None),
                next((v.layout for v in values if v.layout), None),
            )
        ]


def check_predicate(node: OpNode, predicate: Spec) -> None:
    """A predicate holds one scalar per sample (DALI: a 0-d sample, bool or a number)."""
    if predicate.ndim is not None and predicate.ndim != 0:
        raise ValueError(
            f"the condition of {node.arg('where')} has {predicate.ndim}-d samples; a "
            "per-sample condition must be a scalar per sample (0-d), e.g. a comparison of "
            "scalars or fn.random.coin_flip()"
        )


# The tracer adds these nodes with the instances themselves (Graph.add_crossing).
bind_node_operator("split", Split())  # type: ignore[arg-type]
bind_node_operator("merge", Merge())  # type: ignore[arg-type]
