"""Which keyword arguments an augmentation's function takes: matching a policy's extra
arguments (``shape``, ``fill_value``, ``interp_type``, ...) to each augmentation."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

_NAMED = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class MissingArgException(Exception):
    """An augmentation needs a named argument (e.g. ``shape``) that the call did not give."""

    def __init__(self, message: str, augmentation: Any, missing_args: list[str]):
        super().__init__(message)
        self.augmentation = augmentation
        self.missing_args = missing_args


class UnusedArgException(Exception):
    """A policy got a keyword argument that none of its augmentations takes."""

    def __init__(self, message: str, unused_args: list[str]):
        super().__init__(message)
        self.unused_args = unused_args


def _extra_parameters(
    function: Callable[..., Any], skip_positional: int
) -> list[inspect.Parameter]:
    """The parameters after the first ``skip_positional`` positional ones (data, parameter)."""
    params = list(inspect.signature(function).parameters.values())
    skipped = 0
    extra = []
    for param in params:
        if param.kind in _POSITIONAL and skipped < skip_positional:
            skipped += 1
            continue
        extra.append(param)
    return extra


def num_positional_args(function: Callable[..., Any]) -> int:
    """How many arguments ``function`` can take by position."""
    params = inspect.signature(function).parameters.values()
    return sum(1 for p in params if p.kind in _POSITIONAL)


def accepted_kwargs(
    function: Callable[..., Any], kwargs: Mapping[str, Any], skip_positional: int = 0
) -> dict[str, Any]:
    """The entries of ``kwargs`` that ``function`` takes by name (after the skipped ones)."""
    names = {p.name for p in _extra_parameters(function, skip_positional) if p.kind in _NAMED}
    return {name: value for name, value in kwargs.items() if name in names}


def missing_kwargs(
    function: Callable[..., Any], kwargs: Mapping[str, Any], skip_positional: int = 0
) -> list[str]:
    """The named parameters of ``function`` without a default that ``kwargs`` lacks."""
    return [
        p.name
        for p in _extra_parameters(function, skip_positional)
        if p.kind in _NAMED and p.default is inspect.Parameter.empty and p.name not in kwargs
    ]


def forbid_unused_kwargs(
    augmentations: Iterable[Any], kwargs: Mapping[str, Any], caller: str
) -> None:
    """Raise :class:`UnusedArgException` for the ``kwargs`` no augmentation takes."""
    used: set[str] = set()
    for aug in augmentations:
        used.update(accepted_kwargs(aug.op, kwargs, 2))
    unused = [name for name in kwargs if name not in used]
    if unused:
        plural = len(unused) > 1
        raise UnusedArgException(
            f"The {caller} got unexpected kwarg{'s' if plural else ''}: "
            f"`{', '.join(unused)}` {'are' if plural else 'is'} not used by any of the "
            "augmentations.",
            unused_args=unused,
        )
