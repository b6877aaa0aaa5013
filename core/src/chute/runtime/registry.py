"""The one list of public operators, filled by the operators themselves.

An operator class becomes public by one decorator on its header line::

    @register
    class Resize(Operator):
        schema = Schema(name="resize", ...)

The schema name is the operator's ``fn`` path ("resize", "decoders.image",
"readers.file"); ``chute.fn`` and ``chute.ops`` are generated from this list
(:func:`ops_entries`, :func:`populate`; ``fn``'s functions in :mod:`chute.surface`),
and so is the docs' operator reference. Functions that
are not operator classes (``fn.math.sqrt``) are listed with
:func:`register_function`.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, TypeVar

from chute.runtime.deprecated import DEPRECATED, deprecated_class

__all__ = [
    "Entry",
    "camel",
    "functions",
    "operators",
    "ops_entries",
    "ops_name",
    "populate",
    "register",
    "register_function",
]

T = TypeVar("T", bound=type)


@dataclass(frozen=True)
class Entry:
    """One registered operator class and the extra names it answers to.

    ``legacy``: DALI's pre-1.0 names, snake case ("file_reader"), each one of
    chute.runtime.deprecated.DEPRECATED; each gives ``fn.file_reader`` and
    ``ops.FileReader``, which warn. (The table alone makes these names where its
    operator is registered; ``legacy`` says so at the class.) ``ops_name``: the class name in
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


# ---- public names: how chute.ops and chute.fn lay the registry out ----------------------
def camel(snake: str) -> str:
    """DALI's class name for a function name: "image_random_crop" -> "ImageRandomCrop"."""
    return "".join(part[:1].upper() + part[1:] for part in snake.split("_"))


def ops_name(entry: Entry) -> str:
    """The dotted ``ops`` name of an operator: "decoders.image" -> "decoders.Image"."""
    namespace, _, short = entry.name.rpartition(".")
    name = entry.ops_name or camel(short)
    return f"{namespace}.{name}" if namespace else name


def _dotted_camel(name: str) -> str:
    """A legacy name's ``ops`` class: "file_reader" -> "FileReader",
    "experimental.inflate" -> "experimental.Inflate"."""
    namespace, _, short = name.rpartition(".")
    return f"{namespace}.{camel(short)}" if namespace else camel(short)


def ops_entries() -> tuple[tuple[str, type], ...]:
    """(dotted name under ``chute.ops``, operator class), sorted; legacy names included.

    Lists what is registered: chute.ops imports every operator module first. DALI's
    deprecated names (chute.runtime.deprecated) are subclasses that warn when applied;
    those whose operator chute has are here even where no operator registered them.
    """
    found: dict[str, type] = {}
    registered = operators()
    for entry in registered.values():
        for name in [ops_name(entry), *entry.ops_aliases]:
            known = found.setdefault(name, entry.op_class)
            if known is not entry.op_class:
                raise ValueError(f"ops.{name} names both {known.__name__} and {entry.name}")
        for legacy in entry.legacy:
            if legacy not in DEPRECATED:
                raise ValueError(
                    f"{entry.name}: legacy name {legacy!r} is not one of DALI's deprecated "
                    "names (chute.runtime.deprecated.DEPRECATED)"
                )
    for old in DEPRECATED.values():
        target = registered.get(old.fn_name) or registered.get(old.use_instead or "")
        if target is not None:
            found[old.ops_name] = deprecated_class(target.op_class, old)
    return tuple(sorted(found.items()))


def populate(root: ModuleType, entries: tuple[tuple[str, Any], ...]) -> list[str]:
    """Bind every dotted name of ``entries`` under ``root``; return root's sorted ``__all__``."""
    for dotted, value in entries:
        namespace, _, short = dotted.rpartition(".")
        module = _namespace(root, namespace) if namespace else root
        setattr(module, short, value)
        _publish(module, short)
    return sorted(root.__dict__.setdefault("__all__", []))


def _namespace(root: ModuleType, dotted: str) -> ModuleType:
    """The module ``root.<dotted>``: an existing one (``chute.ops.random``) or a new one."""
    module = root
    for part in dotted.split("."):
        full = f"{module.__name__}.{part}"
        child = sys.modules.get(full)
        if child is None:
            child = ModuleType(full, f"``{full.replace('chute.', '', 1)}.*`` operators.")
            child.__all__ = []  # type: ignore[attr-defined]
            sys.modules[full] = child
        if module.__dict__.get(part) is not child:
            setattr(module, part, child)
        _publish(module, part)
        module = child
    return module


def _publish(module: ModuleType, name: str) -> None:
    public = module.__dict__.setdefault("__all__", [])
    if name not in public:
        public.append(name)
        public.sort()
