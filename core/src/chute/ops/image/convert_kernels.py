"""Saturating dtype conversion shared by the color, filter and normalization kernels.

Float to integer conversion rounds half away from zero (``rounding="round"``) or toward
zero (``"truncate"``) and clamps to the target type's range, so ``300.0 -> 255`` and
``-2.5 -> -3`` for int8. Float to float is a plain cast.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "cast",
    "convert_saturate",
    "full_range",
    "half_range",
    "saturate_scalar",
]

DTypeLike = Any


def full_range(dtype: DTypeLike) -> float:
    """Return the value that stands for "full intensity": the max of an integer type, else 1."""
    dt = np.dtype(dtype)
    if dt.kind in "ui":
        return float(np.iinfo(dt).max)
    return 1.0


def half_range(dtype: DTypeLike) -> float:
    """Return the mid-gray of a type: 2**(bits - signed - 1) for integers (128 for uint8), else 0.5."""
    dt = np.dtype(dtype)
    if dt.kind in "ui":
        return float(1 << (8 * dt.itemsize - (dt.kind == "i") - 1))
    return 0.5


def _check_rounding(rounding: str) -> None:
    if rounding not in ("round", "truncate"):
        raise ValueError(f"rounding must be 'round' or 'truncate', got {rounding!r}")


def convert_saturate(
    values: np.ndarray,
    dtype: DTypeLike,
    *,
    rounding: str = "round",
    out: np.ndarray | None = None,
    overwrite: bool = False,
) -> np.ndarray:
    """Convert ``values`` to ``dtype``: round (half away from zero) and clamp for integer types.

    ``overwrite=True`` lets the conversion use ``values`` (a float array the caller owns) as
    scratch space, which saves one temporary as large as the data.
    """
    _check_rounding(rounding)
    dt = np.dtype(dtype)
    values = np.asarray(values)
    if out is not None and out.dtype != dt:
        raise TypeError(f"out has dtype {out.dtype}, expected {dt}")
    if dt == np.uint8 and values.dtype == np.float32 and rounding == "round":
        return _float32_to_uint8(values, out, overwrite)
    src_kind = values.dtype.kind
    if dt.kind not in "ui" or src_kind in "uib":
        if dt.kind in "ui" and src_kind in "ui":
            info = np.iinfo(dt)
            lo, hi = np.iinfo(values.dtype).min, np.iinfo(values.dtype).max
            if lo < info.min or hi > info.max:
                values = np.clip(values, max(lo, info.min), min(hi, info.max))
        with np.errstate(over="ignore"):  # float narrowing overflows to inf, as IEEE says
            if out is None:
                return values.astype(dt, copy=False)
            np.copyto(out, values, casting="unsafe")
        return out
    info = np.iinfo(dt)
    work = values
    if values.dtype.itemsize < 4 or (dt.itemsize >= 4 and values.dtype != np.float64):
        # float16 has no fast ufunc loops; float32 cannot hold int32's bounds.
        work = values.astype(np.float64 if dt.itemsize >= 4 else np.float32)
        overwrite = True
    with np.errstate(invalid="ignore"):  # inf - inf and NaN casts
        if rounding == "round":
            tmp = np.rint(work)
            _round_ties_away(work, tmp, signed=dt.kind == "i", overwrite=overwrite)
        else:
            tmp = np.trunc(work)
        np.clip(tmp, info.min, _float_below(info.max, tmp.dtype), out=tmp)
        if out is None:
            return tmp.astype(dt)
        np.copyto(out, tmp, casting="unsafe")
    return out


# the largest float32 below 0.5
_JUST_BELOW_HALF = np.nextafter(np.float32(0.5), np.float32(0))


def _float32_to_uint8(values: np.ndarray, out: np.ndarray | None, overwrite: bool) -> np.ndarray:
    """float32 -> uint8, rounding half away from zero and saturating, in three passes.

    ``trunc(clip(x + 0.49999997, 0, 255))`` in float32 equals half-away rounding of every
    float32 (checked exhaustively over [-2, 300]; beyond, both saturate): exact ties
    ``k + 0.5`` sum to ``k + 0.99999997``, which float32 rounds up to ``k + 1``, and no
    value below a tie reaches ``k + 1`` (adding exactly 0.5 would send 0.49999997 to 1).
    NaN converts to an unspecified value.
    """
    work = values if overwrite and values.flags.writeable else None
    with np.errstate(invalid="ignore"):
        tmp = np.add(values, _JUST_BELOW_HALF, out=work)
        np.clip(tmp, np.float32(0), np.float32(255), out=tmp)
    if out is None:
        return tmp.astype(np.uint8)
    np.copyto(out, tmp, casting="unsafe")
    return out


def _round_ties_away(work: np.ndarray, rounded: np.ndarray, signed: bool, overwrite: bool) -> None:
    """Turn ``rounded = rint(work)`` (half to even) into round half away from zero, in place.

    rint is exact in every float precision and differs from half-away only on exact ties
    k + 0.5; ``work - rounded`` is exact too and equals +0.5 where rint went down and -0.5
    where it went up, so the ties are found without a float64 round trip. NaN converts to an
    unspecified value.
    """
    diff = np.subtract(work, rounded, out=work if overwrite else None)
    went_down = diff == 0.5
    if went_down.any():
        # Flat (C-order) indices: np.nonzero on n-d masks is ~40x slower.
        where = np.flatnonzero(went_down)
        tied = np.take(rounded, where)
        # Positive ties rounded down must go up; a negative tie rounded down is already away.
        np.put(rounded, where, tied + (tied >= 0))
    if signed:
        went_up = diff == -0.5
        if went_up.any():
            where = np.flatnonzero(went_up)
            tied = np.take(rounded, where)
            np.put(rounded, where, tied - (tied <= 0))


def _float_below(limit: int, dtype: np.dtype) -> float:
    """Return the largest float of ``dtype`` not above ``limit`` (int64's max is not a float)."""
    f = np.dtype(dtype).type(limit)
    while int(f) > limit:
        f = np.nextafter(f, f.dtype.type(0))
    return float(f)


def saturate_scalar(value: float, dtype: DTypeLike, rounding: str = "round") -> float | int:
    """Convert one Python number to ``dtype``'s value set (used for fill values)."""
    return convert_saturate(np.array([value], dtype=np.float64), dtype, rounding=rounding)[0].item()


def cast(data: np.ndarray, dtype: DTypeLike) -> np.ndarray:
    """Cast ``data`` to ``dtype`` as ``fn.cast`` does: saturating, rounding half away from zero."""
    return convert_saturate(np.asarray(data), dtype)
