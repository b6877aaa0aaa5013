"""The placeholder for a variable that a per-sample conditional leaves undefined."""

from __future__ import annotations

from typing import Any

__all__ = ["Undefined", "fail_if_undefined"]


class Undefined:
    """A variable that a per-sample conditional leaves undefined for some samples.

    DALI's rule: a variable assigned in only one branch may not be used after the
    conditional. Any use of this placeholder raises a NameError naming the variable and
    the conditional.
    """

    __slots__ = ("message",)

    def __init__(self, name: str, reason: str):
        object.__setattr__(self, "message", f"variable {name!r} {reason}")

    def fail(self) -> Any:
        raise NameError(self.message)

    def __getattr__(self, attr: str) -> Any:
        raise NameError(self.message)

    def __repr__(self) -> str:
        return f"<undefined: {self.message}>"

    def __bool__(self) -> bool:
        raise NameError(self.message)

    def __iter__(self) -> Any:
        raise NameError(self.message)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise NameError(self.message)

    def __getitem__(self, key: Any) -> Any:
        raise NameError(self.message)


def _fail(self: Undefined, *args: Any) -> Any:
    raise NameError(self.message)


_OPERATORS = "add sub mul truediv floordiv mod pow and or xor lt le gt ge eq ne lshift rshift"
for _op in [*_OPERATORS.split(), "matmul"]:
    setattr(Undefined, f"__{_op}__", _fail)
    setattr(Undefined, f"__r{_op}__", _fail)
for _op in ("neg", "pos", "invert", "abs", "len", "int", "float", "index"):
    setattr(Undefined, f"__{_op}__", _fail)
Undefined.__hash__ = object.__hash__  # type: ignore[method-assign]


def fail_if_undefined(value: Any) -> None:
    """Raise the NameError of an :class:`Undefined` value (anything else passes)."""
    if isinstance(value, Undefined):
        value.fail()
