"""The audio DSP functions against references written here, independently, in NumPy/SciPy.

Tolerances: float32 results against float64 references, relative to the
largest reference value: 1e-5 for spectrograms, mel and MFCC; resampling of
a tone 2e-3 of full scale away from the ends.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.fft
import scipy.signal

from chute.ops.audio import dsp

RNG = np.random.default_rng(7)


def rel_err(actual: np.ndarray, expected: np.ndarray) -> float:
    return float(np.abs(actual - expected).max() / np.abs(expected).max())


def chirp(n: int = 4000, rate: float = 16000.0) -> np.ndarray:
    t = np.arange(n) / rate
    return scipy.signal.chirp(t, f0=100, t1=t[-1], f1=6000).astype(np.float32)


# ---- spectrogram -------------------------------------------------------------------------
def reference_spectrogram(x, nfft, length, step, power, center, reflect):
    """One frame at a time with a full complex FFT; window = sin^2(pi (t + 0.5) / N)."""
    x = x.astype(np.float64)
    window = np.sin(np.pi * (np.arange(length) + 0.5) / length) ** 2
    if center:
        half = length // 2
        idx = np.arange(-half, len(x) + half)
        if reflect:
            # mirror without repeating the edge sample: -1 -> 1, n -> n - 2
            idx = np.abs(idx)
            idx = np.where(idx >= len(x), 2 * (len(x) - 1) - idx, idx)
            padded = x[idx]
        else:
            padded = np.concatenate([np.zeros(half), x, np.zeros(half)])
        count = len(x) // step + 1
    else:
        padded = x
        count = (len(x) - length) // step + 1
    columns = []
    for i in range(count):
        frame = np.zeros(nfft)
        frame[:length] = padded[i * step : i * step + length] * window
        full = np.fft.fft(frame)[: nfft // 2 + 1]
        columns.append(np.abs(full) ** power)
    return np.stack(columns, axis=1)


@pytest.mark.parametrize(
    "nfft,length,step,power,center,reflect",
    [
        (512, 512, 256, 2, True, True),
        (256, 200, 80, 1, True, False),
        (128, 128, 64, 2, False, True),
        (64, 40, 16, 1, True, True),
    ],
)
def test_spectrogram_matches_reference(nfft, length, step, power, center, reflect):
    x = chirp()
    got = dsp.spectrogram(x, nfft, length, step, None, power, center, reflect, "ft")
    want = reference_spectrogram(x, nfft, length, step, power, center, reflect)
    assert got.dtype == np.float32
    assert got.shape == want.shape
    assert rel_err(got, want) < 1e-5


def test_spectrogram_layout_window_and_peak():
    rate, nfft = 8000.0, 256
    freq = 40 * rate / nfft  # exactly bin 40
    x = np.sin(2 * np.pi * freq * np.arange(2048) / rate).astype(np.float32)
    ft = dsp.spectrogram(x, nfft, nfft, 128)
    tf = dsp.spectrogram(x, nfft, nfft, 128, layout="tf")
    np.testing.assert_array_equal(ft.T, tf)
    assert np.all(np.argmax(ft[:, 2:-2], axis=0) == 40)
    box = dsp.spectrogram(x, nfft, nfft, 128, window_fn=np.ones(nfft), center_windows=False)
    # rectangular window on a bin-centred tone: all energy in bin 40, amplitude nfft / 2
    np.testing.assert_allclose(box[40], (nfft / 2) ** 2, rtol=1e-4)


def test_spectrogram_rejects_bad_arguments():
    with pytest.raises(ValueError, match="nfft"):
        dsp.spectrogram(chirp(), nfft=100, window_length=200)
    with pytest.raises(ValueError, match="one channel"):
        dsp.spectrogram(np.zeros((100, 2), np.float32))


# ---- mel filter bank ---------------------------------------------------------------------
def reference_mel(bins, nfilter, rate, low, high, normalize, htk):
    def to_mel(f):
        if htk:
            return 2595.0 * np.log10(1.0 + f / 700.0)
        return f * 3.0 / 200.0 if f < 1000 else 15.0 + 27.0 * np.log(f / 1000.0) / np.log(6.4)

    def to_hz(m):
        if htk:
            return 700.0 * (10 ** (m / 2595.0) - 1.0)
        return m * 200.0 / 3.0 if m < 15 else 1000.0 * 6.4 ** ((m - 15.0) / 27.0)

    high = high or rate / 2
    step = (to_mel(high) - to_mel(low)) / (nfilter + 1)
    edges = [to_hz(to_mel(low) + i * step) for i in range(nfilter + 2)]
    nfft = 2 * (bins - 1)
    out = np.zeros((nfilter, bins))
    for m in range(nfilter):
        a, b, c = edges[m], edges[m + 1], edges[m + 2]
        for k in range(bins):
            f = k * rate / nfft
            if a < f <= b:
                out[m, k] = (f - a) / (b - a)
            elif b < f < c:
                out[m, k] = (c - f) / (c - b)
        if normalize:
            out[m] *= 2.0 / (c - a)
    return out


@pytest.mark.parametrize(
    "nfilter,rate,low,high,normalize,formula",
    [
        (40, 16000.0, 0.0, 0.0, True, "slaney"),
        (20, 16000.0, 100.0, 6000.0, False, "htk"),
        (64, 44100.0, 30.0, 0.0, True, "htk"),
    ],
)
def test_mel_filter_bank_matches_reference(nfilter, rate, low, high, normalize, formula):
    spec = RNG.random((257, 30)).astype(np.float32)
    matrix = dsp.mel_filters(257, nfilter, rate, low, high, normalize, formula)
    got = dsp.apply_along(matrix, spec, 0)
    want = reference_mel(257, nfilter, rate, low, high, normalize, formula == "htk") @ spec
    assert got.shape == (nfilter, 30)
    assert rel_err(got, want) < 1e-5
    # time-major input: the same result along the other axis
    np.testing.assert_allclose(dsp.apply_along(matrix, spec.T.copy(), 1), got.T, rtol=1e-5)


def test_mel_filter_bank_rejects_bad_range():
    with pytest.raises(ValueError, match="freq_low"):
        dsp.mel_filters(129, 10, 16000.0, freq_low=9000.0)


# ---- to_decibels and mfcc ----------------------------------------------------------------
def test_to_decibels():
    x = RNG.random((20, 10)).astype(np.float32) + 1e-3
    x[0, 0] = 0.0
    got = dsp.to_decibels(x, multiplier=20.0, reference=0.5, cutoff_db=-60.0)
    want = 20.0 * np.log10(np.maximum(x.astype(np.float64) / 0.5, 1e-3))
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
    assert got[0, 0] == pytest.approx(-60.0)
    top = dsp.to_decibels(x)  # reference = the maximum: the largest value is 0 dB
    assert top.max() == pytest.approx(0.0, abs=1e-6)
    np.testing.assert_array_equal(dsp.to_decibels(np.zeros(4)), np.full(4, -200.0, np.float32))


@pytest.mark.parametrize("dct_type", [1, 2, 3, 4])
@pytest.mark.parametrize("normalize", [False, True])
def test_mfcc_matches_scipy_dct(dct_type, normalize):
    if dct_type == 1 and normalize:
        with pytest.raises(ValueError, match="dct_type=1"):
            dsp.mfcc(np.ones((8, 3)), dct_type=1, n_mfcc=4, normalize=True)
        return
    mel = RNG.standard_normal((40, 12)).astype(np.float32)
    got = dsp.mfcc(mel, axis=0, dct_type=dct_type, n_mfcc=13, normalize=normalize)
    full = scipy.fft.dct(
        mel.astype(np.float64), type=dct_type, axis=0, norm="ortho" if normalize else None
    )
    want = full[:13] if normalize else full[:13] / 2.0  # DALI sums without scipy's factor 2
    assert got.shape == (13, 12)
    assert rel_err(got, want) < 1e-5


def test_mfcc_lifter_and_axis():
    mel = RNG.standard_normal((12, 40)).astype(np.float32)
    lifter = 22.0
    got = dsp.mfcc(mel, axis=1, n_mfcc=10, lifter=lifter, normalize=True)
    base = scipy.fft.dct(mel.astype(np.float64), type=2, axis=1, norm="ortho")[:, :10]
    scale = 1.0 + (lifter / 2.0) * np.sin(np.pi * np.arange(1, 11) / lifter)
    assert got.shape == (12, 10)
    assert rel_err(got, base * scale) < 1e-5


# ---- nonsilent_region --------------------------------------------------------------------
def reference_nonsilent(x, cutoff_db, window, reference):
    x = x.astype(np.float64)
    power = np.array(
        [np.sum(x[max(0, j - window + 1) : j + 1] ** 2) / window for j in range(len(x))]
    )
    ref = power.max() if reference == 0 else reference
    loud = [j for j in range(len(x)) if 10 * np.log10(power[j] / ref + 1e-300) >= cutoff_db]
    if not loud:
        return 0, 0
    begin = max(0, loud[0] - window + 1)
    return begin, loud[-1] + 1 - begin


@pytest.mark.parametrize("cutoff,window,reference", [(-60.0, 64, 0.0), (-20.0, 32, 0.01)])
def test_nonsilent_region_matches_reference(cutoff, window, reference):
    x = np.zeros(1500, np.float32)
    x[400:900] = RNG.standard_normal(500) * 0.3
    x[400:420] *= 1e-4
    got = dsp.nonsilent_region(x, cutoff, window, reference)
    assert got == reference_nonsilent(x, cutoff, window, reference)
    assert got[0] <= 420 and got[0] + got[1] >= 900


def test_nonsilent_region_of_silence_is_empty():
    assert dsp.nonsilent_region(np.zeros(100, np.float32)) == (0, 0)
    assert dsp.nonsilent_region(np.zeros(0, np.float32)) == (0, 0)


# ---- preemphasis and resampling ----------------------------------------------------------
@pytest.mark.parametrize("border,first", [("zero", 0), ("clamp", 0), ("reflect", 1)])
def test_preemphasis_matches_lfilter(border, first):
    x = RNG.standard_normal(300).astype(np.float32)
    coeff = 0.9
    previous = 0.0 if border == "zero" else float(x[first])
    want, _ = scipy.signal.lfilter(
        [1.0, -coeff], [1.0], x.astype(np.float64), zi=[-coeff * previous]
    )
    np.testing.assert_allclose(dsp.preemphasis(x, coeff, border), want, rtol=1e-5, atol=1e-6)


def test_preemphasis_works_per_channel():
    x = RNG.standard_normal((50, 2)).astype(np.float32)
    got = dsp.preemphasis(x, 0.5, "clamp")
    for c in range(2):
        np.testing.assert_allclose(got[:, c], dsp.preemphasis(x[:, c], 0.5, "clamp"), rtol=1e-6)


@pytest.mark.parametrize("in_rate,out_rate", [(16000, 22050), (44100, 16000), (8000, 12000)])
def test_resample_tone(in_rate, out_rate):
    n = 4001
    tone = lambda rate, count: np.sin(2 * np.pi * 440.0 * np.arange(count) / rate)  # noqa: E731
    got = dsp.resample(tone(in_rate, n).astype(np.float32), in_rate, out_rate)
    count = int(np.ceil(n * out_rate / in_rate))
    assert got.shape == (count,)
    edge = count // 10  # the filter's transient at both ends
    np.testing.assert_allclose(got[edge:-edge], tone(out_rate, count)[edge:-edge], atol=2e-3)


def test_resample_keeps_channels_and_length():
    x = RNG.standard_normal((1001, 2)).astype(np.float32)
    assert dsp.resample(x, 16000, 8000).shape == (501, 2)
    assert dsp.resample(x, 1.0, 1.0, out_length=1200).shape == (1200, 2)
