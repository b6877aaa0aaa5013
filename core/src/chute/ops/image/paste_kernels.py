"""fn.multi_paste's plan and CPU kernel: regions of input samples pasted onto zero canvases.

The plan (:func:`sample_regions`) turns one output sample's arguments into its regions,
with DALI's rules: absolute or relative (``*_rel``, fractions in [0, 1]) anchors and
shapes; a relative shape rounds up and a relative anchor down, so that shape 0.5 at
anchor 0.5 fits; a region without a shape runs from its input anchor to the end of the
input; every region must lie within its input and within the canvas. Later regions
cover earlier ones. The GPU backend runs the same plan.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from chute.ops.image.convert_kernels import convert_saturate

__all__ = ["Region", "canvas", "paste", "sample_regions"]

OP = "fn.multi_paste"


@dataclass(frozen=True)
class Region:
    """One paste: ``shape`` (h, w) of input ``source`` = (input index, sample index) at
    ``in_anchor`` (y, x) goes to ``out_anchor`` (y, x) of the canvas."""

    source: tuple[int, int]
    in_anchor: tuple[int, int]
    shape: tuple[int, int]
    out_anchor: tuple[int, int]


def _rows(name: str, value: Any, count: int, sample: int, rel: bool) -> np.ndarray:
    """An anchors / shapes argument as a (count, 2) array, checked."""
    arr = np.asarray(value, np.float64 if rel else np.int64)
    if arr.size == 0 and count == 0:
        return np.zeros((0, 2), arr.dtype)
    if arr.ndim != 2 or arr.shape != (count, 2):
        raise ValueError(
            f"{OP}: argument '{name}' of output sample {sample} must be (number of regions, 2) "
            f"= ({count}, 2), got shape {arr.shape}"
        )
    if rel and not np.all((arr >= 0.0) & (arr <= 1.0)):
        raise ValueError(
            f"{OP}: argument '{name}' of output sample {sample} must be in [0, 1], got "
            f"{arr.tolist()}"
        )
    return arr


def sample_regions(
    sample: int,
    sources: Sequence[tuple[int, int]],
    source_hw: Callable[[tuple[int, int]], tuple[int, int]],
    out_hw: tuple[int, int],
    get: Callable[[str], Any],
) -> list[Region]:
    """The regions of output ``sample``: one per entry of ``sources``, from the arguments
    ``get(name)`` gives (None where not given), checked against the inputs and canvas."""
    n = len(sources)

    def arg(name: str) -> np.ndarray | None:
        value = get(name)
        return None if value is None else _rows(name, value, n, sample, name.endswith("_rel"))

    in_abs, in_rel = arg("in_anchors"), arg("in_anchors_rel")
    sh_abs, sh_rel = arg("shapes"), arg("shapes_rel")
    out_abs, out_rel = arg("out_anchors"), arg("out_anchors_rel")
    regions = []
    for k, src in enumerate(sources):
        hw = source_hw(src)
        if in_abs is not None:
            anchor = [int(v) for v in in_abs[k]]
        elif in_rel is not None:
            anchor = [math.floor(hw[d] * float(in_rel[k, d])) for d in range(2)]
        else:
            anchor = [0, 0]
        if sh_abs is not None:
            shape = [int(v) for v in sh_abs[k]]
        elif sh_rel is not None:
            shape = [math.ceil(hw[d] * float(sh_rel[k, d])) for d in range(2)]
        else:
            shape = [hw[d] - anchor[d] for d in range(2)]
        if out_abs is not None:
            out = [int(v) for v in out_abs[k]]
        elif out_rel is not None:
            out = [math.floor(out_hw[d] * float(out_rel[k, d])) for d in range(2)]
        else:
            out = [0, 0]
        for d in range(2):
            if anchor[d] < 0 or shape[d] < 0 or anchor[d] + shape[d] > hw[d]:
                raise ValueError(
                    f"{OP}: region {k} of output sample {sample} must lie within its input: "
                    f"anchor {tuple(anchor)}, shape {tuple(shape)}, input {tuple(hw)}"
                )
            if out[d] < 0 or out[d] + shape[d] > out_hw[d]:
                raise ValueError(
                    f"{OP}: region {k} of output sample {sample} must lie within the output: "
                    f"anchor {tuple(out)}, shape {tuple(shape)}, output {tuple(out_hw)}"
                )
        regions.append(Region(src, tuple(anchor), tuple(shape), tuple(out)))
    return regions


def canvas(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """The zero canvas of an output sample."""
    return np.zeros(shape, np.dtype(dtype))


def paste(out: np.ndarray, regions: Sequence[Region], fetch: Callable[[tuple[int, int]], Any]):
    """Copy each region (in order: later ones cover earlier ones) from ``fetch(source)``
    (HWC or FHWC) into ``out`` (same rank), converting to ``out``'s dtype (rounding halves
    away from zero and saturating, as DALI)."""
    seq = out.ndim == 4
    for r in regions:
        (iy, ix), (h, w), (oy, ox) = r.in_anchor, r.shape, r.out_anchor
        if h == 0 or w == 0:
            continue
        src = fetch(r.source)
        part = src[:, iy : iy + h, ix : ix + w] if seq else src[iy : iy + h, ix : ix + w]
        if part.dtype != out.dtype:
            part = convert_saturate(part, out.dtype)
        if seq:
            out[:, oy : oy + h, ox : ox + w] = part
        else:
            out[oy : oy + h, ox : ox + w] = part
    return out
