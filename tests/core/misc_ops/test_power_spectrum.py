"""fn.power_spectrum: |rfft|² (or |rfft|) along an axis, with nfft padding/cropping, as float32."""

from __future__ import annotations

import numpy as np
import pytest
from misc_helpers import run

from chute import OperatorError, fn

RNG = np.random.default_rng(7)


def test_pure_tone_has_its_energy_in_one_bin():
    n = 64
    tone = np.cos(2 * np.pi * 5 * np.arange(n) / n).astype(np.float32)
    (out,) = run(lambda x: fn.power_spectrum(x), [tone])
    spectrum = out.at(0)
    assert out.dtype == np.float32 and spectrum.shape == (n // 2 + 1,)
    # cos(2 pi 5 t / n): rfft has n/2 at bin 5 and ~0 elsewhere
    np.testing.assert_allclose(spectrum[5], (n / 2) ** 2, rtol=1e-5)
    assert np.delete(spectrum, 5).max() < 1e-6


@pytest.mark.parametrize(
    "kwargs, axis",
    [
        ({}, -1),
        ({"axis": 0}, 0),
        ({"nfft": 20}, -1),
        ({"nfft": 6, "axis": 1}, 1),
        ({"power": 1}, -1),
    ],
)
def test_matches_numpy_rfft_on_ragged_batches(kwargs, axis):
    batch = [RNG.normal(size=s).astype(np.float32) for s in [(3, 16), (5, 9), (2, 12)]]
    (out,) = run(lambda x: fn.power_spectrum(x, **kwargs), batch)
    for i, x in enumerate(batch):
        f = np.fft.rfft(x.astype(np.float64), n=kwargs.get("nfft"), axis=axis)
        want = np.abs(f) ** kwargs.get("power", 2)
        np.testing.assert_allclose(out.at(i), want, rtol=1e-5, atol=1e-6)


def test_errors_name_the_argument():
    sig = [np.ones(8, np.float32)]
    with pytest.raises(ValueError, match="argument 'power' got 3"):
        run(lambda x: fn.power_spectrum(x, power=3), sig)
    with pytest.raises(ValueError, match="argument 'nfft' must be >= 1"):
        run(lambda x: fn.power_spectrum(x, nfft=0), sig)
    with pytest.raises(OperatorError, match="argument 'axis' is 2; the sample has 1 dims"):
        run(lambda x: fn.power_spectrum(x, axis=2), sig)
    with pytest.raises(OperatorError, match="expected 1 to 3 dimensions, got 4"):
        run(lambda x: fn.power_spectrum(x), [np.ones((2, 2, 2, 2), np.float32)])
    with pytest.raises(OperatorError, match="nfft >= 1, got 0"):
        run(lambda x: fn.power_spectrum(x), [np.ones(0, np.float32)])
