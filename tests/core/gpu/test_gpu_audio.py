"""Audio features on the GPU (CuPy, cuFFT) against the CPU operators on the same inputs.

Tolerances, per operator and on identical inputs: preemphasis 1e-6; spectrogram
and mel filter bank 1e-4 of each sample's largest value (cuFFT and pocketfft
round differently); to_decibels 1e-3 dB; mfcc 1e-3 of the largest coefficient;
nonsilent_region exact.
"""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, pipeline_def

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")

RATE = 16000


def run(make, samples: list[np.ndarray], device: str) -> list[list[np.ndarray]]:
    """One batch through ``make(x)`` on ``device``; every output as host arrays."""

    @pipeline_def(batch_size=len(samples), num_threads=2, device_id=0, seed=1)
    def pipe():
        x = fn.external_source(source=lambda: samples)
        outs = make(x.gpu() if device == "gpu" else x, device)
        return outs if isinstance(outs, (list, tuple)) else [outs]

    p = pipe()
    p.build()
    outs = p.run()
    result = []
    for out in outs:
        if device == "gpu":
            from chute.tensors.gpu import TensorListGPU

            assert isinstance(out, TensorListGPU)
            out = out.as_cpu()
        result.append([np.asarray(out.at(i)) for i in range(len(samples))])
    p.close()
    return result


def signals(lengths, seed=0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    t = [np.arange(n) / RATE for n in lengths]
    return [
        (
            0.3 * np.sin(2 * np.pi * (300 + 200 * i) * ti) + 0.05 * rng.standard_normal(len(ti))
        ).astype(np.float32)
        for i, ti in enumerate(t)
    ]


BATCHES = {"ragged": (16000, 12345, 800, 20000), "uniform": (16000,) * 4}


def both(make, samples):
    return run(make, samples, "cpu"), run(make, samples, "gpu")


def assert_close_to_scale(got, want, rel):
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype
        scale = float(np.abs(w).max()) if w.size else 1.0
        np.testing.assert_allclose(g, w, rtol=0, atol=rel * scale)


@pytest.mark.parametrize("kind", BATCHES)
def test_preemphasis(kind):
    xs = signals(BATCHES[kind])
    coeff = [np.array(c, np.float32) for c in (0.9, 0.95, 0.97, 0.5)]

    def make(x, device):
        c = fn.external_source(source=lambda: coeff)
        return fn.preemphasis_filter(x, preemph_coeff=c, border="reflect", device=device)

    (cpu,), (gpu,) = both(make, xs)
    for g, c in zip(gpu, cpu):
        np.testing.assert_allclose(g, c, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("kind", BATCHES)
@pytest.mark.parametrize("power,center", [(2, True), (1, False)])
def test_spectrogram(kind, power, center):
    xs = signals(BATCHES[kind])

    def make(x, device):
        return fn.spectrogram(
            x,
            nfft=512,
            window_length=400,
            window_step=160,
            power=power,
            center_windows=center,
            device=device,
        )

    (cpu,), (gpu,) = both(make, xs)
    assert_close_to_scale(gpu, cpu, 1e-4)


@pytest.mark.parametrize("kind", ["ragged", "uniform"])
def test_mel_decibels_and_mfcc_on_identical_inputs(kind):
    from chute.ops.audio import dsp

    specs = [dsp.spectrogram(x, 512, 400, 160) for x in signals(BATCHES[kind])]
    (mel_c,), (mel_g,) = both(
        lambda x, d: fn.mel_filter_bank(x, nfilter=64, sample_rate=RATE, device=d), specs
    )
    assert_close_to_scale(mel_g, mel_c, 1e-4)
    (db_c,), (db_g,) = both(lambda x, d: fn.to_decibels(x, cutoff_db=-80.0, device=d), mel_c)
    for g, c in zip(db_g, db_c):
        np.testing.assert_allclose(g, c, atol=1e-3)
    (mf_c,), (mf_g,) = both(
        lambda x, d: fn.mfcc(x, n_mfcc=13, lifter=22.0, normalize=True, device=d), db_c
    )
    assert_close_to_scale(mf_g, mf_c, 1e-3)


def test_feature_chain_end_to_end():
    xs = signals(BATCHES["ragged"])

    def make(x, device):
        emph = fn.preemphasis_filter(x, device=device)
        spec = fn.spectrogram(emph, nfft=512, window_length=400, window_step=160, device=device)
        mel = fn.mel_filter_bank(spec, nfilter=40, sample_rate=RATE, device=device)
        return [mel, fn.to_decibels(mel, cutoff_db=-80.0, device=device)]

    (mel_c, db_c), (mel_g, db_g) = both(make, xs)
    assert_close_to_scale(mel_g, mel_c, 1e-4)
    for g, c in zip(db_g, db_c):
        loud = c > -40  # quiet bins carry the FFTs' rounding, amplified by the log
        np.testing.assert_allclose(g[loud], c[loud], atol=1e-2)


def test_nonsilent_region():
    rng = np.random.default_rng(4)
    xs = []
    for n, start, stop in ((20000, 3000, 9000), (8000, 100, 400), (12000, 11000, 12000)):
        x = (rng.standard_normal(n) * 1e-5).astype(np.float32)
        x[start:stop] += np.sin(np.arange(stop - start) * 0.2).astype(np.float32)
        xs.append(x)
    xs.append(np.zeros(5000, np.float32))
    (b_c, l_c), (b_g, l_g) = both(
        lambda x, d: fn.nonsilent_region(x, cutoff_db=-50.0, window_length=512, device=d), xs
    )
    assert [int(v) for v in b_g] == [int(v) for v in b_c]
    assert [int(v) for v in l_g] == [int(v) for v in l_c]
    assert int(l_g[3]) == 0 and int(b_g[0]) > 2000
