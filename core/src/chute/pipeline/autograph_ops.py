"""What converted pipeline code calls (``__chute.if_stmt(...)`` and the rest).

chute.pipeline.autograph rewrites ``if``, conditional expressions, ``and``/``or``/``not``,
comparison chains, loops' conditions and calls into calls of these functions. Each one
does what Python does when its operands are Python values, and the per-sample form
(chute.graph.conditional) when the deciding operand is a DataNode.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence
from typing import Any

from chute.graph.conditional import Undefined, branch_scopes, if_else, inside, merge_values
from chute.graph.node import DataNode

__all__ = [
    "and_",
    "call",
    "compare_chain",
    "if_exp",
    "if_stmt",
    "iterable",
    "load",
    "not_",
    "or_",
    "python_bool",
]

# set by chute.pipeline.autograph (which imports this module): converts a called function
converted_function: Callable[[Any], Any] = lambda f: f  # noqa: E731


def load(read: Callable[[], Any], name: str) -> Any:
    """The value of a variable before an ``if`` that assigns it, or an :class:`Undefined`
    placeholder when it has none yet."""
    try:
        return read()
    except NameError:
        return Undefined(name, "is used before it is assigned")


def if_stmt(
    test: Any,
    body: Callable[..., tuple],
    orelse: Callable[..., tuple],
    values: tuple,
    names: Sequence[str],
    where: str,
) -> tuple:
    """An ``if`` statement: the new values of the variables ``names`` that its branches
    assign (``values`` are those before it).

    On a DataNode each branch is traced in its scope and every variable is merged per
    sample; one assigned in a single branch becomes :class:`Undefined` (an error where
    it is used). On a Python value only the branch it selects runs, as in Python.
    """
    if not isinstance(test, DataNode):
        return body(*values) if test else orelse(*values)
    scopes = branch_scopes(test, where)
    with inside(scopes[0]):
        out_true = body(*values)
    with inside(scopes[1]):
        out_false = orelse(*values)
    return tuple(
        merge_values(name, t, f, scopes)
        for name, t, f in zip(names, out_true, out_false, strict=True)
    )


def if_exp(test: Any, body: Callable[[], Any], orelse: Callable[[], Any], where: str) -> Any:
    """``body() if test else orelse()``; per sample when ``test`` is a DataNode."""
    if not isinstance(test, DataNode):
        return body() if test else orelse()
    return if_else(test, body, orelse, where)


def _constant_like(node: DataNode, value: bool) -> DataNode:
    """A bool DataNode of the current scope that is ``value`` for every sample (built from
    ``node``, so it has its samples)."""
    truth = node != 0
    return truth == truth if value else truth != truth


def _logical(first: DataNode, rest: Callable[[], Any], is_and: bool, where: str) -> DataNode:
    """``first and rest()`` / ``first or rest()`` per sample, ``rest()`` traced only for
    the samples that need it (DALI: the operands are boolean)."""
    scopes = branch_scopes(first, where)
    decided, undecided = (scopes[1], scopes[0]) if is_and else (scopes[0], scopes[1])
    with inside(undecided):
        value = rest()
        if not isinstance(value, DataNode):  # a Python operand: true or false everywhere here
            value = _constant_like(first, bool(value))
    with inside(decided):
        kept = first
    pair = (value, kept) if is_and else (kept, value)
    name = f"the value of `{'and' if is_and else 'or'}`"
    return merge_values(name, pair[0], pair[1], scopes)


def and_(first: Any, *rest: Callable[[], Any], where: str = "`and`") -> Any:
    """``first and rest[0]() and ...``: Python's short circuit, per sample on DataNodes."""
    value = first
    for operand in rest:
        if isinstance(value, DataNode):
            value = _logical(value, operand, True, where)
        elif not value:
            return value
        else:
            value = operand()
    return value


def or_(first: Any, *rest: Callable[[], Any], where: str = "`or`") -> Any:
    """``first or rest[0]() or ...``: Python's short circuit, per sample on DataNodes."""
    value = first
    for operand in rest:
        if isinstance(value, DataNode):
            value = _logical(value, operand, False, where)
        elif value:
            return value
        else:
            value = operand()
    return value


def not_(value: Any) -> Any:
    """``not value``; on a DataNode, per sample (true where the sample is zero)."""
    if isinstance(value, DataNode):
        return value == 0
    return not value


_COMPARE = {
    "Eq": operator.eq,
    "NotEq": operator.ne,
    "Lt": operator.lt,
    "LtE": operator.le,
    "Gt": operator.gt,
    "GtE": operator.ge,
    "Is": operator.is_,
    "IsNot": operator.is_not,
    "In": lambda a, b: a in b,
    "NotIn": lambda a, b: a not in b,
}


def compare_chain(
    first: Any, ops: Sequence[str], operands: Sequence[Callable[[], Any]], where: str
) -> Any:
    """``a < b < c`` as Python evaluates it (``a < b and b < c``, each operand once), with
    the ``and`` per sample where a comparison gives a DataNode."""
    state = {"left": first}  # the left operand of the next comparison

    def term(k: int) -> Callable[[], Any]:
        def compare() -> Any:
            left, right = state["left"], operands[k]()
            state["left"] = right
            return _COMPARE[ops[k]](left, right)

        return compare

    terms = [term(k) for k in range(len(ops))]
    return and_(terms[0](), *terms[1:], where=where)


def python_bool(test: Any, where: str, construct: str) -> bool:
    """The truth of a condition that only a Python value may decide: a ``while``, an
    ``assert``, or an ``if`` whose branches ``return``/``break``/``continue``."""
    if isinstance(test, DataNode):
        raise TypeError(
            f"{where}: {construct} cannot depend on a per-sample value (a DataNode); "
            "per-sample conditions are supported in `if`/`elif`/`else` whose branches "
            "assign variables, and in conditional expressions (see docs/conditionals.md)"
        )
    if isinstance(test, Undefined):
        test.fail()
    return bool(test)


def iterable(value: Any, where: str) -> Any:
    """What a ``for`` loop iterates: not a DataNode (its samples are not known when tracing)."""
    if isinstance(value, DataNode):
        raise TypeError(
            f"{where}: a `for` loop cannot iterate over a DataNode (its samples exist only "
            "when the pipeline runs); index it (x[0]) or use per-sample operators"
        )
    return value


def call(callee: Any, /, *args: Any, **kwargs: Any) -> Any:
    """Call ``callee``, converted first when it is user code (see autograph.convert)."""
    return converted_function(callee)(*args, **kwargs)
