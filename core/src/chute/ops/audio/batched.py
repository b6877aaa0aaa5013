"""Audio feature math over a whole batch, written once for NumPy and CuPy.

Every function takes the array module ``xp`` (``numpy`` or ``cupy``) and a
list of samples, and returns the results as one dense array with a leading
batch axis when every result has the same shape, else as a list. Samples of
equal shape are stacked; ragged ones are concatenated (flattened) with an
index of which sample each element belongs to, so that a batch costs a fixed
number of array operations (one FFT, one matrix product, ...) whatever its
size. The CPU operators call these with a batch of one and ``xp=numpy``; the
GPU operators (:mod:`chute.ops.audio.audio_gpu`) with the whole batch and ``cupy``.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import Any

import numpy as np

__all__ = [
    "Batch",
    "frame_signals",
    "matrix_along",
    "nonsilent_regions",
    "preemphasis",
    "spectrogram",
    "to_decibels",
]

# A batch result: a dense (batch, ...) array when every sample has the same shape, else a list.
Batch = Any


def _uniform(samples: Sequence[Any]) -> bool:
    return len({tuple(s.shape) for s in samples}) <= 1


def _split(xp: ModuleType, flat: Any, sizes: Sequence[int]) -> list[Any]:
    """Consecutive pieces of ``flat`` (along axis 0) with the given sizes, as views."""
    bounds = np.cumsum(sizes)[:-1].tolist()
    return list(xp.split(flat, bounds, axis=0)) if len(sizes) > 1 else [flat]


def _segment_ids(xp: ModuleType, sizes: Sequence[int]) -> tuple[Any, Any]:
    """Per element of a concatenation: which sample it comes from and its index inside it."""
    sizes_np = np.asarray(sizes, np.int64)
    offsets_np = np.concatenate(([0], np.cumsum(sizes_np)[:-1]))
    total = int(sizes_np.sum())
    position = xp.arange(total, dtype=xp.int64)
    if len(sizes) == 1:
        return xp.zeros(total, xp.int64), position
    # searchsorted over the sample starts runs on the device: only len(sizes) values travel
    starts = xp.asarray(np.cumsum(sizes_np)[:-1])
    sample = xp.searchsorted(starts, position, side="right")
    local = position - xp.asarray(offsets_np)[sample]
    return sample, local


def frame_signals(
    xp: ModuleType,
    signals: Sequence[Any],
    window_length: int,
    window_step: int,
    center: bool,
    reflect: bool,
) -> tuple[Any, list[int]]:
    """All analysis windows of all signals as one (windows, window_length) float32 array.

    With ``center`` window k of a signal is centred at ``k * window_step``: the
    signal is extended by ``window_length // 2`` on each side, mirrored (numpy's
    "reflect", repeated for extensions longer than the signal) when
    ``reflect`` and the signal has 2 samples or more, else with zeros. Returns
    the windows and how many belong to each signal.
    """
    lengths = [int(s.shape[0]) for s in signals]
    pad = window_length // 2
    if center:
        counts = [n // window_step + 1 for n in lengths]
    else:
        counts = [max(0, (n - window_length) // window_step + 1) for n in lengths]
    total = sum(counts)
    if total == 0:
        return xp.zeros((0, window_length), xp.float32), counts
    # one flat buffer with a zero at the end, which every zero-padding position reads
    flat = xp.concatenate(
        [*(xp.ravel(s).astype(xp.float32) for s in signals), xp.zeros(1, xp.float32)]
    )
    zero_at = flat.shape[0] - 1
    # per window (host, small): its sample's offset and length, and its first position
    owner = np.repeat(np.arange(len(signals)), counts)
    first = np.concatenate([np.arange(c, dtype=np.int64) * window_step for c in counts])
    n = np.asarray(lengths, np.int64)[owner]
    offset = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)[owner]
    if center:
        first -= pad
    taps = xp.arange(window_length, dtype=xp.int64)[None, :]
    q = xp.asarray(first)[:, None] + taps  # position in the signal; may leave it when centred
    n_dev = xp.asarray(n)[:, None]
    off_dev = xp.asarray(offset)[:, None]
    if center and reflect:
        period = xp.maximum(2 * (n_dev - 1), 1)
        m = xp.remainder(q, period)
        m = xp.where(m >= n_dev, period - m, m)
        mirrored = off_dev + m
        inside = (q >= 0) & (q < n_dev)
        padded = xp.where(inside, off_dev + q, zero_at)
        index = xp.where(n_dev > 1, mirrored, padded)
    else:
        inside = (q >= 0) & (q < n_dev)
        index = xp.where(inside, off_dev + q, zero_at)
    return flat[index], counts


def spectrogram(
    xp: ModuleType,
    signals: Sequence[Any],
    nfft: Sequence[int],
    window_length: int,
    window_step: int,
    window: np.ndarray,
    power: int,
    center: bool,
    reflect: bool,
    layout: str,
) -> Batch:
    """Short-time power (2) or magnitude (1) spectra, one FFT call per distinct ``nfft``.

    ``nfft`` has one value per signal. Each result is (nfft // 2 + 1, windows)
    for layout "ft", transposed for "tf", float32.
    """
    if power not in (1, 2):
        raise ValueError(f"power must be 1 or 2, got {power}")
    frames, counts = frame_signals(xp, signals, window_length, window_step, center, reflect)
    frames = frames * xp.asarray(window, dtype=xp.float32)
    owner = np.repeat(np.arange(len(signals)), counts)
    sizes = sorted(set(int(n) for n in nfft))
    results: list[Any] = [None] * len(signals)
    for size in sizes:
        members = [i for i, n in enumerate(nfft) if int(n) == size]
        if len(sizes) == 1:
            rows = frames
        else:
            rows = frames[xp.asarray(np.flatnonzero(np.isin(owner, members)))]
        if rows.shape[0] == 0:  # no window fits: cuFFT plans need at least one row
            out = xp.zeros((0, size // 2 + 1), xp.float32)
        else:
            spectrum = xp.fft.rfft(rows, n=size, axis=-1)
            out = spectrum.real**2 + spectrum.imag**2
            if power == 1:
                out = xp.sqrt(out)
            out = out.astype(xp.float32, copy=False)
        for i, piece in zip(members, _split(xp, out, [counts[i] for i in members])):
            results[i] = piece
    if len(set(counts)) == 1 and len(sizes) == 1:
        dense = out.reshape(len(signals), counts[0], sizes[0] // 2 + 1)
        return xp.ascontiguousarray(dense.transpose(0, 2, 1) if layout == "ft" else dense)
    return [xp.ascontiguousarray(r.T if layout == "ft" else r) for r in results]


def matrix_along(xp: ModuleType, matrix: Any, samples: Sequence[Any], axis: int) -> Batch:
    """Multiply ``matrix`` (out, in) into every sample along ``axis``: one matrix product.

    Used by the mel filter bank and by the DCT of MFCC.
    """
    matrix = xp.asarray(matrix, dtype=xp.float32)
    if _uniform(samples):
        stacked = xp.stack([xp.asarray(s, dtype=xp.float32) for s in samples])
        moved = xp.moveaxis(stacked, axis + 1, -1)
        return xp.ascontiguousarray(xp.moveaxis(moved @ matrix.T, -1, axis + 1))
    moved = [xp.moveaxis(xp.asarray(s, dtype=xp.float32), axis, -1) for s in samples]
    rows = xp.concatenate([m.reshape(-1, m.shape[-1]) for m in moved])
    product = rows @ matrix.T
    pieces = _split(xp, product, [int(np.prod(m.shape[:-1])) for m in moved])
    return [
        xp.ascontiguousarray(xp.moveaxis(p.reshape(*m.shape[:-1], -1), -1, axis))
        for p, m in zip(pieces, moved)
    ]


def to_decibels(
    xp: ModuleType,
    samples: Sequence[Any],
    multiplier: float,
    reference: float,
    cutoff_db: float,
) -> Batch:
    """``multiplier * log10(max(min_ratio, x / ref))`` per sample; ``reference`` 0 = its maximum.

    A sample whose reference is 0 or less (all zeros) comes out at ``cutoff_db``.
    """
    min_ratio = np.float32(10.0 ** (cutoff_db / multiplier))
    uniform = _uniform(samples)
    if uniform:
        x = xp.stack([xp.asarray(s, dtype=xp.float32) for s in samples])
        x = x.reshape(len(samples), -1)
    else:
        sizes = [int(np.prod(s.shape)) for s in samples]
        flat = xp.concatenate([xp.ravel(xp.asarray(s, dtype=xp.float32)) for s in samples])
    if reference != 0.0:
        refs = xp.full(len(samples), reference, xp.float32)
    elif uniform:
        refs = x.max(axis=1) if x.shape[1] else xp.zeros(len(samples), xp.float32)
    else:
        refs = _segment_max(xp, flat, sizes)
    ok = refs > 0
    safe = xp.where(ok, refs, xp.float32(1)).astype(xp.float32)
    if uniform:
        ratio = xp.maximum(x / safe[:, None], min_ratio)
        out = xp.float32(multiplier) * xp.log10(ratio)
        out = xp.where(ok[:, None], out, xp.float32(cutoff_db)).astype(xp.float32)
        return out.reshape(len(samples), *samples[0].shape) if samples else out
    sample, _ = _segment_ids(xp, sizes)
    ratio = xp.maximum(flat / safe[sample], min_ratio)
    out = xp.float32(multiplier) * xp.log10(ratio)
    out = xp.where(ok[sample], out, xp.float32(cutoff_db)).astype(xp.float32)
    return [p.reshape(s.shape) for p, s in zip(_split(xp, out, sizes), samples)]


def _segment_max(xp: ModuleType, flat: Any, sizes: Sequence[int]) -> Any:
    """The maximum of each consecutive piece of ``flat`` (0 for empty pieces), via one padded max."""
    sample, local = _segment_ids(xp, sizes)
    width = max(max(sizes), 1)
    padded = xp.full((len(sizes), width), -xp.inf, flat.dtype)
    padded[sample, local] = flat
    out = padded.max(axis=1)
    return xp.where(xp.isfinite(out), out, 0).astype(flat.dtype)


def preemphasis(
    xp: ModuleType, signals: Sequence[Any], coeffs: Sequence[float], border: str
) -> Batch:
    """``y[t] = x[t] - c * x[t-1]`` along the first axis of each signal, float32.

    x[-1] is 0 ("zero"), x[0] ("clamp") or x[1] ("reflect"; x[0] for one-sample signals).
    """
    if border not in ("zero", "clamp", "reflect"):
        raise ValueError(f"border must be 'zero', 'clamp' or 'reflect', got {border!r}")
    if _uniform(signals):
        x = xp.stack([xp.asarray(s, dtype=xp.float32) for s in signals])
        if x.shape[1] == 0:
            return x.copy()
        c = xp.asarray(np.asarray(coeffs, np.float32)).reshape(-1, *([1] * (x.ndim - 1)))
        previous = xp.empty_like(x)
        previous[:, 1:] = x[:, :-1]
        if border == "zero":
            previous[:, 0] = 0
        elif border == "clamp" or x.shape[1] == 1:
            previous[:, 0] = x[:, 0]
        else:
            previous[:, 0] = x[:, 1]
        return x - c * previous
    lengths = [int(s.shape[0]) for s in signals]
    flat = xp.concatenate([xp.asarray(s, dtype=xp.float32) for s in signals])
    sample, _ = _segment_ids(xp, lengths)
    previous = xp.empty_like(flat)
    previous[1:] = flat[:-1]
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64)
    live = [i for i, n in enumerate(lengths) if n > 0]
    first = xp.asarray(starts[live])
    if border == "zero":
        previous[first] = 0
    elif border == "clamp":
        previous[first] = flat[first]
    else:
        second = xp.asarray([starts[i] + (1 if lengths[i] > 1 else 0) for i in live])
        previous[first] = flat[second]
    c = xp.asarray(np.asarray(coeffs, np.float32))[sample]
    out = flat - c.reshape(-1, *([1] * (flat.ndim - 1))) * previous
    return _split(xp, out, lengths)


def nonsilent_regions(
    xp: ModuleType,
    signals: Sequence[Any],
    cutoff_db: float,
    window_length: int,
    reference_power: float,
) -> tuple[Any, Any]:
    """(begin, length) int32 arrays, one value per signal; see :func:`dsp.nonsilent_region`.

    The short-term power is a difference of float64 running sums, which the
    whole batch shares in one padded (batch, longest) array.
    """
    if window_length < 1:
        raise ValueError(f"window_length must be >= 1, got {window_length}")
    lengths = [int(s.shape[0]) for s in signals]
    batch, width = len(signals), max(lengths, default=0)
    if width == 0:
        zeros = xp.zeros(batch, xp.int32)
        return zeros, zeros.copy()
    if _uniform(signals):
        x = xp.stack([xp.ravel(xp.asarray(s, dtype=xp.float64)) for s in signals])
    else:
        flat = xp.concatenate([xp.ravel(xp.asarray(s, dtype=xp.float64)) for s in signals])
        sample, local = _segment_ids(xp, lengths)
        x = xp.zeros((batch, width), xp.float64)
        x[sample, local] = flat
    cumulative = xp.concatenate([xp.zeros((batch, 1), xp.float64), xp.cumsum(x * x, axis=1)], 1)
    ends = xp.arange(1, width + 1)
    starts = xp.maximum(0, ends - window_length)
    power = (cumulative[:, ends] - cumulative[:, starts]) / window_length
    valid = xp.arange(width)[None, :] < xp.asarray(np.asarray(lengths))[:, None]
    power = xp.where(valid, power, -1.0)
    if reference_power <= 0.0:
        refs = power.max(axis=1)
    else:
        refs = xp.full(batch, reference_power, xp.float64)
    threshold = refs * 10.0 ** (cutoff_db / 10.0)
    loud = valid & (power >= threshold[:, None]) & (refs[:, None] > 0)
    any_loud = loud.any(axis=1)
    loud8 = loud.astype(xp.int8)
    first = xp.argmax(loud8, axis=1)
    last = width - 1 - xp.argmax(loud8[:, ::-1], axis=1)
    begin = xp.maximum(0, first - window_length + 1)
    length = last + 1 - begin
    begin = xp.where(any_loud, begin, 0).astype(xp.int32)
    length = xp.where(any_loud, length, 0).astype(xp.int32)
    return begin, length
