"""Audio signal processing on one NumPy sample, with DALI's conventions.

Every function takes and returns NumPy arrays and holds no state, so the
operators in :mod:`chute.ops.audio.audio_ops` and :mod:`chute.ops.audio.features_ops`
are thin wrappers and the tests can call these directly. The feature math itself lives in
:mod:`chute.ops.audio.batched`, written once for NumPy and CuPy: these
functions check arguments and run it on a batch of one. The heavy work is
vectorized (FFT, matrix products, cumulative sums), in native code.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np

from chute.ops.audio import batched

__all__ = [
    "dct_matrix",
    "hann_window",
    "mel_filters",
    "mfcc",
    "mfcc_basis",
    "nonsilent_region",
    "output_length",
    "preemphasis",
    "resample",
    "spectrogram",
    "to_decibels",
]


def hann_window(length: int) -> np.ndarray:
    """The Hann window DALI uses: sampled at bin centres (t + 0.5), so it is symmetric and nonzero."""
    t = np.arange(length, dtype=np.float64) + 0.5
    return (0.5 - 0.5 * np.cos(2.0 * np.pi * t / length)).astype(np.float32)


def spectrogram(
    signal: np.ndarray,
    nfft: int | None = None,
    window_length: int = 512,
    window_step: int = 256,
    window_fn: np.ndarray | None = None,
    power: int = 2,
    center_windows: bool = True,
    reflect_padding: bool = True,
    layout: str = "ft",
) -> np.ndarray:
    """Short-time Fourier magnitude (power 1) or power (power 2) of a 1-D signal, float32.

    With ``center_windows`` window i is centred at ``i * window_step`` (the
    signal is padded by ``window_length // 2`` on each side, mirrored or with
    zeros) and there are ``n // window_step + 1`` windows; otherwise only
    windows inside the signal are taken. Output is (nfft // 2 + 1, windows)
    for layout "ft", transposed for "tf".
    """
    x = _as_mono(signal, "spectrogram").astype(np.float32, copy=False)
    nfft = window_length if nfft is None else nfft
    if nfft < window_length:
        raise ValueError(f"nfft ({nfft}) must be >= window_length ({window_length})")
    if window_step < 1:
        raise ValueError(f"window_step must be >= 1, got {window_step}")
    window = hann_window(window_length) if window_fn is None else np.asarray(window_fn, np.float32)
    if window.shape != (window_length,):
        raise ValueError(f"window_fn has {window.size} values but window_length is {window_length}")
    out = batched.spectrogram(
        np,
        [x],
        [nfft],
        window_length,
        window_step,
        window,
        power,
        center_windows,
        reflect_padding,
        layout,
    )
    return out[0]


def _as_mono(signal: np.ndarray, op: str) -> np.ndarray:
    x = np.asarray(signal)
    if x.ndim == 2 and 1 in x.shape:
        x = x.reshape(-1)
    if x.ndim != 1:
        raise ValueError(
            f"{op} expects one channel: shape (n,), (n, 1) or (1, n), got {tuple(x.shape)}"
        )
    return x


def hz_to_mel(freq: np.ndarray, formula: str) -> np.ndarray:
    """Hertz to mel: "htk" (2595 log10(1 + f/700)) or "slaney" (linear below 1 kHz, log above)."""
    f = np.asarray(freq, np.float64)
    if formula == "htk":
        return 2595.0 * np.log10(1.0 + f / 700.0)
    linear = f / (200.0 / 3.0)
    log_part = 15.0 + np.log(np.maximum(f, 1e-10) / 1000.0) / (np.log(6.4) / 27.0)
    return np.where(f >= 1000.0, log_part, linear)


def mel_to_hz(mel: np.ndarray, formula: str) -> np.ndarray:
    """Inverse of :func:`hz_to_mel`."""
    m = np.asarray(mel, np.float64)
    if formula == "htk":
        return 700.0 * (10.0 ** (m / 2595.0) - 1.0)
    linear = m * (200.0 / 3.0)
    log_part = 1000.0 * np.exp((m - 15.0) * (np.log(6.4) / 27.0))
    return np.where(m >= 15.0, log_part, linear)


def mel_filters(
    num_bins: int,
    nfilter: int = 128,
    sample_rate: float = 44100.0,
    freq_low: float = 0.0,
    freq_high: float = 0.0,
    normalize: bool = True,
    mel_formula: str = "slaney",
) -> np.ndarray:
    """Triangular mel filters as a (nfilter, num_bins) matrix over the bins of an rfft.

    The filters' corners are spaced evenly in mel between ``freq_low`` and
    ``freq_high`` (0 = Nyquist); ``normalize`` divides each by its width in
    Hz / 2 so that each filter has unit area (Slaney's "constant energy").
    """
    if mel_formula not in ("slaney", "htk"):
        raise ValueError(f"mel_formula must be 'slaney' or 'htk', got {mel_formula!r}")
    nyquist = sample_rate / 2.0
    high = freq_high if freq_high > 0 else nyquist
    if not 0 <= freq_low < high <= nyquist + 1e-6:
        raise ValueError(
            f"need 0 <= freq_low < freq_high <= sample_rate / 2, got freq_low={freq_low}, "
            f"freq_high={high}, sample_rate={sample_rate}"
        )
    nfft = 2 * (num_bins - 1)
    bin_freqs = np.arange(num_bins) * (sample_rate / max(nfft, 1))
    corners = mel_to_hz(
        np.linspace(hz_to_mel(freq_low, mel_formula), hz_to_mel(high, mel_formula), nfilter + 2),
        mel_formula,
    )
    lower, centre, upper = corners[:-2, None], corners[1:-1, None], corners[2:, None]
    rising = (bin_freqs - lower) / (centre - lower)
    falling = (upper - bin_freqs) / (upper - centre)
    weights = np.maximum(0.0, np.minimum(rising, falling))
    if normalize:
        weights *= 2.0 / (upper - lower)
    return weights.astype(np.float32)


def apply_along(matrix: np.ndarray, data: np.ndarray, axis: int) -> np.ndarray:
    """Multiply ``matrix`` (out, in) into ``data`` along ``axis`` (one BLAS call)."""
    data = np.asarray(data)
    return batched.matrix_along(np, matrix, [data], axis % max(data.ndim, 1))[0]


def to_decibels(
    magnitude: np.ndarray,
    multiplier: float = 10.0,
    reference: float = 0.0,
    cutoff_db: float = -200.0,
) -> np.ndarray:
    """``multiplier * log10(max(min_ratio, x / reference))``; reference 0 = the sample's maximum."""
    x = np.asarray(magnitude, np.float32)
    # an all-zero input (reference 0 or less) comes out at the cut-off everywhere
    return batched.to_decibels(np, [x], multiplier, reference, cutoff_db)[0]


def dct_matrix(n_out: int, n_in: int, dct_type: int = 2, normalize: bool = False) -> np.ndarray:
    """Rows 0..n_out-1 of the DCT of type 1-4 (unscaled sums, or orthonormal with ``normalize``)."""
    k = np.arange(n_out, dtype=np.float64)[:, None]
    n = np.arange(n_in, dtype=np.float64)[None, :]
    if dct_type == 1:
        if normalize:
            raise ValueError("normalize is not supported with dct_type=1")
        if n_in < 2:
            raise ValueError("dct_type=1 needs at least 2 input values")
        basis = np.cos(np.pi * n * k / (n_in - 1))
        basis[:, 0] *= 0.5
        basis[:, -1] *= 0.5
        return basis
    if dct_type == 2:
        basis = np.cos(np.pi / n_in * (n + 0.5) * k)
        if normalize:
            basis *= np.sqrt(2.0 / n_in)
            basis[0] *= np.sqrt(0.5)
        return basis
    if dct_type == 3:
        basis = np.cos(np.pi / n_in * n * (k + 0.5))
        if normalize:
            basis *= np.sqrt(2.0 / n_in)
            basis[:, 0] *= np.sqrt(0.5)
        else:
            basis[:, 0] *= 0.5
        return basis
    if dct_type == 4:
        basis = np.cos(np.pi / n_in * (n + 0.5) * (k + 0.5))
        if normalize:
            basis *= np.sqrt(2.0 / n_in)
        return basis
    raise ValueError(f"dct_type must be 1, 2, 3 or 4, got {dct_type}")


def mfcc(
    mel_spectrogram: np.ndarray,
    axis: int = 0,
    dct_type: int = 2,
    lifter: float = 0.0,
    n_mfcc: int = 20,
    normalize: bool = False,
) -> np.ndarray:
    """Mel-frequency cepstral coefficients: a DCT of a (log) mel spectrogram along ``axis``."""
    x = np.asarray(mel_spectrogram, np.float32)
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis {axis} is out of range for a {x.ndim}-D input")
    axis %= x.ndim
    n_in = x.shape[axis]
    if not 0 < n_mfcc <= n_in:
        raise ValueError(f"n_mfcc must be in [1, {n_in}] (the size of axis {axis}), got {n_mfcc}")
    return apply_along(mfcc_basis(n_in, n_mfcc, dct_type, lifter, normalize), x, axis)


def mfcc_basis(
    n_in: int, n_mfcc: int, dct_type: int = 2, lifter: float = 0.0, normalize: bool = False
) -> np.ndarray:
    """The (n_mfcc, n_in) float32 matrix of :func:`mfcc`: DCT rows, scaled by the lifter."""
    basis = dct_matrix(n_mfcc, n_in, dct_type, normalize)
    if lifter > 0:
        i = np.arange(n_mfcc, dtype=np.float64)
        basis = basis * (1.0 + np.sin(np.pi * (i + 1) / lifter) * (lifter / 2.0))[:, None]
    return basis.astype(np.float32)


def nonsilent_region(
    signal: np.ndarray,
    cutoff_db: float = -60.0,
    window_length: int = 2048,
    reference_power: float = 0.0,
    reset_interval: int = 8192,
) -> tuple[int, int]:
    """(begin, length) of the span whose short-term power reaches ``cutoff_db`` below the reference.

    The short-term power at sample j is the mean square of the ``window_length``
    samples ending at j (zeros before the start). Sample j counts as sound
    when that power, in dB relative to ``reference_power`` (0 = the largest
    short-term power of the signal), is at least ``cutoff_db``; the region
    spans every window that contains sound. ``reset_interval`` is accepted
    for DALI compatibility: the running sum here is float64, which needs no
    periodic recomputation.
    """
    x = _as_mono(signal, "nonsilent_region").astype(np.float64)
    begin, length = batched.nonsilent_regions(np, [x], cutoff_db, window_length, reference_power)
    return int(begin[0]), int(length[0])


def preemphasis(
    signal: np.ndarray, preemph_coeff: float = 0.97, border: str = "clamp"
) -> np.ndarray:
    """``y[t] = x[t] - coeff * x[t-1]`` along the first axis; x[-1] is 0, x[0] or x[1] by ``border``."""
    x = np.asarray(signal, np.float32)
    return batched.preemphasis(np, [x], [preemph_coeff], border)[0]


def output_length(length: int, ratio: float) -> int:
    """Samples after resampling ``length`` samples by ``ratio`` (rounded up, as DALI does)."""
    return math.ceil(length * ratio - 1e-9)


def resample(
    signal: np.ndarray,
    in_rate: float,
    out_rate: float,
    out_length: int | None = None,
) -> np.ndarray:
    """Band-limited resampling along the first axis (scipy's polyphase filter), float32.

    The rate ratio is approximated by a fraction with a denominator of at most
    1000 (exact for 8/11.025/16/22.05/44.1/48 kHz pairs); the output has
    ``ceil(n * out_rate / in_rate)`` samples unless ``out_length`` says otherwise.
    """
    try:
        from scipy.signal import resample_poly
    except ImportError as exc:  # scipy is part of the "audio" extra
        raise ImportError("audio resampling needs scipy: pip install 'chute[audio]'") from exc
    if in_rate <= 0 or out_rate <= 0:
        raise ValueError(f"sample rates must be positive, got {in_rate} -> {out_rate}")
    x = np.asarray(signal, np.float32)
    ratio = out_rate / in_rate
    length = output_length(x.shape[0], ratio) if out_length is None else out_length
    if ratio == 1.0 or x.shape[0] == 0:
        out = x.copy()
    else:
        fraction = Fraction(ratio).limit_denominator(1000)
        out = resample_poly(x, fraction.numerator, fraction.denominator, axis=0).astype(np.float32)
    if out.shape[0] > length:
        out = out[:length]
    elif out.shape[0] < length:
        out = np.concatenate([out, np.zeros((length - out.shape[0], *out.shape[1:]), out.dtype)])
    return np.ascontiguousarray(out)
