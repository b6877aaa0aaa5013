"""Argument declarations and checks shared by the geometry operators."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import NO_HINTS, NodeHints
from chute.graph.schema import Arg
from chute.graph.spec import Spec
from chute.ops.geometry._border import BORDER_MODES
from chute.runtime.operator import Operator

INTERP_CHOICES = ("nn", "linear", "cubic", "lanczos3", "triangular", "gaussian")
BORDER_CHOICES = tuple(sorted(BORDER_MODES))

DTYPE = Arg("dtype", "dtype", None, "Output data type (default: the input's).", per_sample=False)


def interp_arg(default: str = "linear", doc: str = "Interpolation (types.INTERP_*).") -> Arg:
    """The ``interp_type`` argument with its accepted values."""
    return Arg("interp_type", "str", default, doc, choices=INTERP_CHOICES)


def border_arg(default: str | None = "constant") -> Arg:
    """The ``border`` argument: how pixels outside the input are invented."""
    doc = (
        "How pixels outside the input are made: constant (fill value), reflect (fedcba|abcdef), "
        "reflect_101 (gfedcb|abcdef), replicate (aaaaaa|abcdef) or wrap (cdefgh|abcdefgh)."
    )
    if default is None:
        doc += " Default: constant when fill_value is given, else replicate (as DALI)."
    return Arg("border", "str", default, doc, per_sample=False, choices=BORDER_CHOICES)


def check_image(name: str, spec: Spec, ndims: tuple[int, ...] = (2, 3)) -> None:
    """Raise unless the spec can be an HW/HWC image."""
    if spec.ndim is not None and spec.ndim not in ndims:
        raise ValueError(f"{name} expects HWC (or HW) images, got {spec.ndim} dimensions")
    if spec.layout and not spec.layout.startswith("HW"):
        raise ValueError(f"{name} expects HWC (or HW) images, got layout {spec.layout!r}")


def as_float(value: Any) -> float | None:
    """A scalar argument that may arrive as a 1-element array or tuple."""
    if value is None:
        return None
    return float(np.asarray(value, dtype=np.float64).ravel()[0])


class LayoutAware(Operator):
    """Remembers each node's input layout at build time and hands it to ``run_sample`` as
    ``ctx.state`` (for arguments such as ``axis_names``)."""

    def remember_layout(self, node: OpNode, spec: Spec) -> None:
        layouts = self.__dict__.setdefault("_layouts", {})
        layouts[node.id] = spec.layout

    def setup(self, node: OpNode, hints: NodeHints = NO_HINTS, pipeline: Any = None) -> Any:
        return self.__dict__.get("_layouts", {}).get(node.id)


def default_layout(ndim: int, layout: str | None) -> str | None:
    """The layout to resolve axis names against: the known one, else HW/HWC by rank."""
    if layout:
        return layout
    return {2: "HW", 3: "HWC"}.get(ndim)


def per_distinct(values: Sequence[Any], func: Any) -> list:
    """``[func(v) for v in values]``, calling ``func`` once per distinct (hashable) value.

    Constant arguments repeat one value for every sample of a batch.
    """
    done: dict = {}
    out = []
    for v in values:
        key = (type(v), v) if not isinstance(v, np.ndarray) else (v.dtype.str, v.shape, v.tobytes())
        if key not in done:
            done[key] = func(v)
        out.append(done[key])
    return out
