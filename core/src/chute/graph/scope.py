"""Branch scopes of per-sample conditionals: which samples an operator node runs on.

A node traced inside the ``True`` branch of ``if pred:`` runs only on the samples whose
``pred`` is true: its :class:`Scope` says so. Scopes nest (``elif``, an ``if`` inside a
branch); ``None`` is the whole batch. A value made outside a branch and used inside it
is split into the branch first (one split node per value and branch, see
:func:`bring_into`); a branch's values leave it only through a merge node
(chute.graph.conditional). The executor computes each scope's samples per batch from
its predicate (chute.executor.branches).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chute.graph.node import DataNode

__all__ = ["Scope", "ancestors", "is_within"]


@dataclass(eq=False)
class Scope:
    """The samples of the enclosing scope (``parent``) whose ``predicate`` is ``branch``.

    ``predicate`` is a DataNode of the parent scope, one scalar per sample (nonzero is
    true). ``where`` names the conditional for errors: ``"the if at line 12"``. A case of
    an n-way switch has ``cases`` = n and an int ``branch``: its samples are those whose
    predicate, an index clamped to ``[0, n - 1]``, is ``branch``.
    """

    parent: Scope | None
    predicate: DataNode
    branch: bool | int
    where: str = "a conditional"
    cases: int = 0

    @property
    def depth(self) -> int:
        return len(ancestors(self))

    @property
    def label(self) -> str:
        """How errors name the branch: ``the if branch of the if at line 12``."""
        if self.cases:
            return f"case {self.branch} of {self.where}"
        return f"the {'if' if self.branch else 'else'} branch of {self.where}"


def ancestors(scope: Scope | None) -> list[Scope]:
    """``scope`` and its enclosing scopes, innermost first (empty for the whole batch)."""
    chain = []
    while scope is not None:
        chain.append(scope)
        scope = scope.parent
    return chain


def is_within(inner: Scope | None, outer: Scope | None) -> bool:
    """True when ``inner`` is ``outer`` or nested inside it (every scope is within None)."""
    return outer is None or outer in ancestors(inner)


def scope_of(node: Any) -> Scope | None:
    """The scope of a DataNode's producer (None: the whole batch)."""
    return node.producer.scope
