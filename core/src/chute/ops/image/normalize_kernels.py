"""Per-sample and per-batch CPU kernels of DALI's ``normalize``.

``out = (in - mean) * scale / sqrt(var + epsilon) + shift`` where ``var = stddev ** 2`` when
``stddev`` is given. When ``mean`` / ``stddev`` are not given they are computed over ``axes``
(all axes by default) of each sample, or - with :func:`normalize_batch` - over those axes of
every sample of the batch together (the kept axes must then agree across samples). The
variance divides by ``N - ddof``. A zero ``var + epsilon`` gives a factor of 0 (the output is
``shift``) instead of infinities. Statistics accumulate in float64; the arithmetic runs in
float32 (float64 for float64 data) and the result is converted, saturating, to ``dtype``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from chute.ops.image.convert_kernels import convert_saturate

__all__ = ["normalize", "normalize_batch", "normalize_with"]

DTypeLike = Any
ArrayLike = Any


def _axes(ndim: int, axes: int | Sequence[int] | None) -> tuple[int, ...]:
    if axes is None:
        return tuple(range(ndim))
    flat = (axes,) if isinstance(axes, (int, np.integer)) else tuple(axes)
    if not flat:
        return tuple(range(ndim))
    out = []
    for a in flat:
        if not -ndim <= int(a) < ndim:
            raise ValueError(f"axis {a} out of range for {ndim}-d data")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"repeated axis in {flat}")
    return tuple(sorted(out))


def _stat_shape(data: np.ndarray, axes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(1 if i in axes else n for i, n in enumerate(data.shape))


def _inv_std(var: np.ndarray, scale: float, epsilon: float) -> np.ndarray:
    denom = np.asarray(var, dtype=np.float64) + float(epsilon)
    with np.errstate(divide="ignore", invalid="ignore"):
        factor = float(scale) / np.sqrt(denom)
    return np.where(denom > 0, factor, 0.0)


def normalize_with(
    data: np.ndarray,
    mean: ArrayLike,
    inv_std: ArrayLike,
    shift: float = 0.0,
    dtype: DTypeLike = np.float32,
) -> np.ndarray:
    """Return ``(data - mean) * inv_std + shift`` (broadcast) converted to ``dtype``."""
    work_dtype = np.float64 if data.dtype == np.float64 else np.float32
    mean = np.asarray(mean, dtype=np.float64)
    inv_std = np.asarray(inv_std, dtype=np.float64)
    # One multiply-add: (x - m) * k + s == x * k + (s - m * k).
    gain = inv_std.astype(work_dtype)
    bias = (float(shift) - mean * inv_std).astype(work_dtype)
    out = np.multiply(data, gain, dtype=work_dtype)
    out += bias
    if out.shape != data.shape:
        raise ValueError(f"mean/stddev of shape {mean.shape} do not broadcast to {data.shape}")
    return out if np.dtype(dtype) == out.dtype else convert_saturate(out, dtype)


def _moments(
    samples: Sequence[np.ndarray], axes: tuple[int, ...], ddof: int
) -> tuple[np.ndarray, np.ndarray]:
    """Mean and variance over ``axes`` of all ``samples`` together, kept dims of extent 1."""
    count = sum(int(np.prod([s.shape[a] for a in axes], dtype=np.int64)) for s in samples)
    total = sum(np.sum(s, axis=axes, dtype=np.float64, keepdims=True) for s in samples)
    mean = total / max(count, 1)
    # Two-pass variance: sum((x - mean)^2) stays accurate where E[x^2] - mean^2 cancels.
    sq = sum(
        np.sum(np.square(s - mean.astype(np.float64)), axis=axes, keepdims=True) for s in samples
    )
    var = sq / max(count - ddof, 1)
    return mean, var


def normalize(
    data: np.ndarray,
    mean: ArrayLike | None = None,
    stddev: ArrayLike | None = None,
    axes: int | Sequence[int] | None = None,
    scale: float = 1.0,
    shift: float = 0.0,
    epsilon: float = 0.0,
    ddof: int = 0,
    dtype: DTypeLike = np.float32,
) -> np.ndarray:
    """Normalize one sample; missing ``mean`` / ``stddev`` are computed over its ``axes``."""
    data = np.asarray(data)
    return normalize_batch([data], mean, stddev, axes, scale, shift, epsilon, ddof, dtype)[0]


def normalize_batch(
    batch: Sequence[np.ndarray],
    mean: ArrayLike | None = None,
    stddev: ArrayLike | None = None,
    axes: int | Sequence[int] | None = None,
    scale: float = 1.0,
    shift: float = 0.0,
    epsilon: float = 0.0,
    ddof: int = 0,
    dtype: DTypeLike = np.float32,
) -> list[np.ndarray]:
    """Normalize every sample with statistics taken over ``axes`` of the whole batch."""
    samples = [np.asarray(s) for s in batch]
    if not samples:
        return []
    ndim = samples[0].ndim
    if any(s.ndim != ndim for s in samples):
        raise ValueError("all samples of a batch must have the same number of dimensions")
    red = _axes(ndim, axes)
    if mean is None or stddev is None:
        kept = {tuple(n for i, n in enumerate(s.shape) if i not in red) for s in samples}
        if len(kept) > 1:
            raise ValueError(
                f"batch statistics need equal extents on the non-reduced axes, got {sorted(kept)}"
            )
        if mean is not None:
            # Variance around the given mean, as the user asked for that centre.
            m = np.asarray(mean, dtype=np.float64)
            count = sum(int(np.prod([s.shape[a] for a in red], dtype=np.int64)) for s in samples)
            sq = sum(np.sum(np.square(s - m), axis=red, keepdims=True) for s in samples)
            var = sq / max(count - ddof, 1)
        else:
            mean, var = _moments(samples, red, ddof)
            if stddev is not None:
                var = np.square(np.asarray(stddev, dtype=np.float64))
    else:
        var = np.square(np.asarray(stddev, dtype=np.float64))
    inv = _inv_std(var, scale, epsilon)
    return [normalize_with(s, mean, inv, shift, dtype) for s in samples]
