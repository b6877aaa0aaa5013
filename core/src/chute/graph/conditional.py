"""Tracing per-sample conditionals: branches as scopes, values merged where they meet.

:func:`if_else` is the building block: it traces each branch's closure inside its
:class:`~chute.graph.scope.Scope`, so the branch's operators run only on its samples,
and merges what the branches return. ``if`` statements in a pipeline with
``enable_conditionals=True`` come here through chute.pipeline.autograph, library code
(chute.conditionals, chute.auto_aug) calls it directly.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from chute.graph.node import DataNode, _node_operator
from chute.graph.scope import Scope
from chute.graph.trace import Graph, current_pipeline
from chute.graph.undefined import Undefined

__all__ = ["Undefined", "branch_scopes", "if_else", "inside", "merge", "switch"]


def _graph() -> Graph:
    return current_pipeline()._graph


def branch_scopes(predicate: DataNode, where: str = "a conditional") -> tuple[Scope, Scope]:
    """The if and else scopes of a per-sample conditional on ``predicate``.

    A predicate on the GPU is copied to the host (conditions are read on the CPU).
    """
    if not isinstance(predicate, DataNode):
        raise TypeError(f"the condition of {where} is a {type(predicate).__name__}, not a DataNode")
    graph = _graph()
    if predicate.device != "cpu":
        predicate = predicate.cpu()
    predicate = graph.bring_into(predicate, graph.scope)
    return (
        Scope(graph.scope, predicate, True, where),
        Scope(graph.scope, predicate, False, where),
    )


@contextlib.contextmanager
def inside(scope: Scope) -> Iterator[None]:
    """Trace the block in ``scope`` (a branch of the scope being traced now)."""
    graph = _graph()
    if scope.parent is not graph.scope:
        raise RuntimeError(f"{scope.label} is entered outside its enclosing scope")
    graph.scope = scope
    try:
        yield
    finally:
        graph.scope = scope.parent


def merge(
    if_true: DataNode,
    if_false: DataNode,
    scopes: tuple[Scope, Scope],
    name: str = "value",
) -> DataNode:
    """One value in the enclosing scope: ``if_true``'s samples where the predicate holds,
    ``if_false``'s elsewhere, in batch order. A value from outside a branch stands for
    itself there; one branch on the GPU moves the other's value to the GPU."""
    graph = _graph()
    true_scope, false_scope = scopes
    values = [if_true, if_false]
    if any(v.device != "cpu" for v in values):
        for k, scope in enumerate(scopes):
            if values[k].device == "cpu":
                with inside(scope):
                    values[k] = graph.bring_into(values[k], scope).gpu()
    t = graph.bring_into(values[0], true_scope)
    f = graph.bring_into(values[1], false_scope)
    node = graph.add_crossing(
        _node_operator("merge"),
        t.device,
        [t, f, true_scope.predicate],
        {"name": name, "where": true_scope.where},
        true_scope.parent,
    )
    return node.outputs[0]


def merge_values(name: str, if_true: Any, if_false: Any, scopes: tuple[Scope, Scope]) -> Any:
    """What variable ``name`` holds after the conditional (see :func:`merge`).

    DataNodes merge; a Python value that both branches leave the same stays; a value
    defined in one branch only, or different Python values, become :class:`Undefined`.
    """
    where = scopes[0].where
    t_undef, f_undef = isinstance(if_true, Undefined), isinstance(if_false, Undefined)
    if t_undef or f_undef:
        if t_undef and f_undef:
            return if_true
        missing = "else" if f_undef else "if"
        return Undefined(
            name,
            f"is assigned only in the {'if' if f_undef else 'else'} branch of {where}: it "
            f"is undefined after it for the samples that take the {missing} branch; assign "
            "it in every branch (or before the if) to use it here",
        )
    if if_true is if_false:  # unchanged by both branches (a value from outside)
        return if_true
    if isinstance(if_true, DataNode) and isinstance(if_false, DataNode):
        return merge(if_true, if_false, scopes, name)
    if isinstance(if_true, DataNode) or isinstance(if_false, DataNode):
        other = if_false if isinstance(if_true, DataNode) else if_true
        return Undefined(
            name,
            f"is a DataNode in one branch of {where} and a {type(other).__name__} in the "
            "other; per-sample branches can merge only DataNodes (types.Constant makes one)",
        )
    if if_true is if_false or _same(if_true, if_false):
        return if_true
    if (
        isinstance(if_true, (tuple, list))
        and type(if_true) is type(if_false)
        and len(if_true) == len(if_false)
    ):
        merged = [
            merge_values(f"{name}[{k}]", a, b, scopes)
            for k, (a, b) in enumerate(zip(if_true, if_false, strict=True))
        ]
        return type(if_true)(merged)
    if (
        isinstance(if_true, dict)
        and isinstance(if_false, dict)
        and if_true.keys() == if_false.keys()
    ):
        return {k: merge_values(f"{name}[{k!r}]", if_true[k], if_false[k], scopes) for k in if_true}
    return Undefined(
        name,
        f"holds different Python values in the branches of {where} ({if_true!r} and "
        f"{if_false!r}); per-sample branches can merge only DataNodes (types.Constant "
        "makes one)",
    )


def _same(a: Any, b: Any) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:
        return False


def if_else(
    predicate: Any,
    if_true: Callable[[], Any],
    if_false: Callable[[], Any],
    where: str = "if_else",
) -> Any:
    """``if_true()`` for the samples whose ``predicate`` holds, ``if_false()`` for the rest.

    ``predicate`` is a DataNode with one scalar per sample (nonzero is true), or a Python
    value (then only the branch it selects is traced, as a plain ``if``). Each closure
    returns a DataNode, or a tuple/list/dict of them (the same structure in both); the
    operators each one calls run only on its samples.
    """
    if not isinstance(predicate, DataNode):
        return if_true() if predicate else if_false()
    scopes = branch_scopes(predicate, where)
    with inside(scopes[0]):
        out_true = if_true()
    with inside(scopes[1]):
        out_false = if_false()
    result = merge_values("result", out_true, out_false, scopes)
    for value in result if isinstance(result, (tuple, list)) else [result]:
        if isinstance(value, Undefined):
            value.fail()
    return result


def switch(index: Any, branches: Sequence[Callable[[], Any]], where: str = "switch") -> Any:
    """``branches[index]()`` per sample (``index`` below 0 takes the first, past the end the
    last): one n-way split, each branch traced in its own case scope and run on its
    samples only, and one merge per value of the result."""
    if not branches:
        raise ValueError(f"{where}: no branches")
    if not isinstance(index, DataNode):
        return branches[min(max(int(index), 0), len(branches) - 1)]()
    if len(branches) == 1:
        return branches[0]()
    graph = _graph()
    if index.device != "cpu":
        index = index.cpu()
    index = graph.bring_into(index, graph.scope)
    scopes = [Scope(graph.scope, index, k, where, len(branches)) for k in range(len(branches))]
    outs = []
    for scope, branch in zip(scopes, branches, strict=True):
        with inside(scope):
            outs.append(branch())
    result = _merge_cases("result", outs, scopes)
    for value in result if isinstance(result, (tuple, list)) else [result]:
        if isinstance(value, Undefined):
            value.fail()
    return result


def _merge_cases(name: str, outs: list[Any], scopes: list[Scope]) -> Any:
    """What the cases of a switch give, as :func:`merge_values` for two branches."""
    first = outs[0]
    if all(out is first for out in outs):
        return first
    if all(isinstance(out, DataNode) for out in outs):
        return _merge_nodes(outs, scopes, name)
    if all(_same(first, out) for out in outs[1:]):
        return first
    if all(
        isinstance(out, (tuple, list)) and type(out) is type(first) and len(out) == len(first)
        for out in outs
    ):
        parts = [
            _merge_cases(f"{name}[{k}]", [out[k] for out in outs], scopes)
            for k in range(len(first))
        ]
        return type(first)(parts)
    if all(isinstance(out, dict) and out.keys() == first.keys() for out in outs):
        return {k: _merge_cases(f"{name}[{k!r}]", [out[k] for out in outs], scopes) for k in first}
    return Undefined(
        name,
        f"differs between the cases of {scopes[0].where} in a way that cannot merge "
        "(only DataNodes, or the same structure of them in every case, merge per sample)",
    )


def _merge_nodes(outs: list[DataNode], scopes: list[Scope], name: str) -> DataNode:
    """One value in the enclosing scope from one DataNode per case."""
    graph = _graph()
    values = list(outs)
    if any(v.device != "cpu" for v in values):
        for k, scope in enumerate(scopes):
            if values[k].device == "cpu":
                with inside(scope):
                    values[k] = graph.bring_into(values[k], scope).gpu()
    inputs = [graph.bring_into(v, scope) for v, scope in zip(values, scopes, strict=True)]
    node = graph.add_crossing(
        _node_operator("merge"),
        inputs[0].device,
        [*inputs, scopes[0].predicate],
        {"name": name, "where": scopes[0].where},
        scopes[0].parent,
    )
    return node.outputs[0]
