"""Operator schemas: the inputs, outputs and arguments an operator declares.

A schema is plain data. It validates arguments at trace time, so that a typo
or an ill-typed value fails where the user wrote it, naming the operator, the
argument and what was accepted.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chute.types import to_dtype


class _Required:
    def __repr__(self) -> str:
        return "<required>"


REQUIRED: Any = _Required()

# Arguments every operator accepts, as in DALI.
COMMON_ARGS = ("device", "name", "seed", "preserve", "bytes_per_sample_hint", "on_error")


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _check_float(v: object) -> float:
    if isinstance(v, np.ndarray) and v.size == 1:
        v = v.item()
    if not (_is_number(v) or isinstance(v, (bool, np.bool_))):
        raise TypeError("expected a number")
    return float(v)  # type: ignore[arg-type]


def _check_int(v: object) -> int:
    if isinstance(v, np.ndarray) and v.size == 1:
        v = v.item()
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return int(v)
    if not isinstance(v, (int, np.integer, bool, np.bool_)):
        raise TypeError("expected an integer")
    return int(v)  # type: ignore[arg-type]


def _check_bool(v: object) -> bool:
    if isinstance(v, np.ndarray) and v.size == 1:
        v = v.item()
    if not isinstance(v, (bool, int, np.bool_, np.integer)):
        raise TypeError("expected a bool")
    return bool(v)


def _check_str(v: object) -> str:
    if isinstance(v, enum.Enum):  # types.RGB -> "RGB", types.INTERP_LINEAR -> "linear"
        v = getattr(v, "arg", v.value)
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v.item()
    if not isinstance(v, str):
        raise TypeError("expected a string")
    return v


def _seq(item: Callable[[object], Any], length: int | None = None) -> Callable[[object], tuple]:
    def check(v: object) -> tuple:
        if isinstance(v, np.ndarray):
            v = v.reshape(-1).tolist()
        elif _is_number(v) or isinstance(v, (bool, np.bool_)):
            v = [v]
        if not isinstance(v, Sequence) or isinstance(v, str):
            raise TypeError("expected a sequence")
        out = tuple(item(x) for x in v)
        if length is not None and len(out) != length:
            raise TypeError(f"expected {length} values, got {len(out)}")
        return out

    return check


def _check_dtype(v: object) -> np.dtype:
    return to_dtype(v)


def _check_any(v: object) -> object:
    return v


CONVERTERS: dict[str, Callable[[object], Any]] = {
    "float": _check_float,
    "int": _check_int,
    "bool": _check_bool,
    "str": _check_str,
    "dtype": _check_dtype,
    "float_list": _seq(_check_float),
    "int_list": _seq(_check_int),
    "float_pair": _seq(_check_float, 2),
    "int_pair": _seq(_check_int, 2),
    "str_list": _seq(_check_str),
    "any": _check_any,
}


@dataclass(frozen=True)
class Arg:
    """One operator argument: its type, default, and whether it may vary per sample."""

    name: str
    type: str = "any"
    default: Any = REQUIRED
    doc: str = ""
    per_sample: bool = True
    choices: tuple | None = None
    finite: bool = True

    def convert(self, op_name: str, value: object) -> Any:
        """Check and normalize a constant value, raising a TypeError/ValueError naming the argument."""
        if value is None and self.default is None:
            return None
        try:
            out = CONVERTERS[self.type](value)
        except (TypeError, ValueError) as exc:
            raise TypeError(
                f"{op_name}: argument '{self.name}' got {value!r}; {exc} ({self.type})"
            ) from None
        if self.finite:
            for x in out if isinstance(out, tuple) else (out,):
                if isinstance(x, float) and not math.isfinite(x):
                    raise ValueError(
                        f"{op_name}: argument '{self.name}' must be finite, got {value!r}"
                    )
        if self.choices is not None and out not in self.choices:
            raise ValueError(
                f"{op_name}: argument '{self.name}' got {value!r}; "
                f"accepted values: {', '.join(map(repr, self.choices))}"
            )
        return out


@dataclass(frozen=True)
class Schema:
    """What an operator takes and gives.

    ``inputs`` names the positional inputs; ``min_inputs`` of them are required.
    ``variadic`` accepts any number of inputs beyond those named (cat, stack).
    ``devices`` lists the backends: "cpu", "gpu", "mixed" (CPU in, GPU out).
    ``maskable`` adds a per-sample ``mask`` argument: samples whose mask is 0
    pass through unchanged.
    """

    name: str
    args: tuple[Arg, ...] = ()
    inputs: tuple[str, ...] = ()
    min_inputs: int | None = None
    variadic: bool = False
    num_outputs: int = 1
    devices: tuple[str, ...] = ("cpu",)
    maskable: bool = False
    doc: str = ""
    arg_index: dict[str, Arg] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        args = self.args
        if self.maskable and not any(a.name == "mask" for a in args):
            args = (
                *args,
                Arg("mask", "bool", True, "Apply to the sample only where true (per sample)."),
            )
            object.__setattr__(self, "args", args)
        self.arg_index.update({a.name: a for a in args})

    @property
    def required_inputs(self) -> int:
        return len(self.inputs) if self.min_inputs is None else self.min_inputs

    @property
    def display_name(self) -> str:
        return f"fn.{self.name}"

    def arg(self, name: str) -> Arg:
        return self.arg_index[name]

    def check_arg_names(self, names: Sequence[str]) -> None:
        """Raise a TypeError listing the valid arguments for any unknown name."""
        unknown = [n for n in names if n not in self.arg_index and n not in COMMON_ARGS]
        if unknown:
            valid = ", ".join(sorted([*self.arg_index, *COMMON_ARGS]))
            raise TypeError(
                f"{self.display_name} got unexpected argument(s) {', '.join(map(repr, unknown))}; "
                f"valid arguments: {valid}"
            )

    def check_num_inputs(self, n: int) -> None:
        lo, hi = self.required_inputs, (None if self.variadic else len(self.inputs))
        if n < lo or (hi is not None and n > hi):
            want = f"{lo}" if lo == hi else (f"at least {lo}" if hi is None else f"{lo} to {hi}")
            names = f" ({', '.join(self.inputs)})" if self.inputs else ""
            raise TypeError(f"{self.display_name} takes {want} input(s){names}, got {n}")
