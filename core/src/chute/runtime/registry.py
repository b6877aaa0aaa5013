"""The one list of public operators, filled by the operators themselves.

An operator class becomes public by one decorator on its header line::

    @register
    class Resize(Operator):
        schema = Schema(name="resize", ...)

The schema name is the operator's ``fn`` path ("resize", "decoders.image",
"readers.file"); ``chute.fn`` and ``chute.ops`` are generated from this list
(:mod:`chute.surface`), and so is the docs' operator reference. Functions that
are not operator classes (``fn.math.sqrt``) are listed with
:func:`register_function`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

__all__ = ["Entry", "functions", "operators", "register", "register_function"]

T = TypeVar("T", bound=type)


@dataclass(frozen=True)
class Entry:
    """One registered operator class and the extra names it answers to.

    ``legacy``: DALI's pre-1.0 names, snake case ("file_reader"); each gives both
    ``fn.file_reader`` and ``ops.FileReader``. ``ops_name``: the class name in
    ``ops`` where CamelCase of the schema name is not it ("MFCC").
    ``ops_aliases``: more dotted ``ops`` names ("readers.FileReader").
    """

    name: str
    op_class: type
    legacy: tuple[str, ...] = ()
    ops_name: str | None = None
    ops_aliases: tuple[str, ...] = ()


_OPERATORS: dict[str, Entry] = {}
_FUNCTIONS: dict[str, Callable[..., Any]] = {}


def register(
    op_class: T | None = None,
    *,
    legacy: tuple[str, ...] = (),
    ops_name: str | None = None,
    ops_aliases: tuple[str, ...] = (),
) -> Any:
    """Record an operator class under its schema name; usable as ``@register`` or ``@register(...)``."""

    def record(cls: T) -> T:
        name = cls.schema.name
        known = _OPERATORS.get(name)
        if known is not None and known.op_class is not cls:
            raise ValueError(
                f"operator {name!r} is registered twice: {_where(known.op_class)} and {_where(cls)}"
            )
        _OPERATORS[name] = Entry(name, cls, tuple(legacy), ops_name, tuple(ops_aliases))
        return cls

    return record if op_class is None else record(op_class)


def register_function(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """Record a public ``fn`` function that is not an operator class ("math.sqrt")."""
    known = _FUNCTIONS.get(name)
    if name in _OPERATORS or (known is not None and known is not func):
        raise ValueError(f"fn.{name} is registered twice")
    _FUNCTIONS[name] = func
    return func


def operators() -> dict[str, Entry]:
    """Schema name -> entry, for every registered operator class (import chute.ops first)."""
    return dict(_OPERATORS)


def functions() -> dict[str, Callable[..., Any]]:
    """Dotted fn name -> function, for the public functions that are not classes."""
    return dict(_FUNCTIONS)


def _where(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
