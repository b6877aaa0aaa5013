"""The batch audio math shared by the CPU and GPU backends, run here with xp=numpy.

Whole batches (equal-length and ragged) must give what the per-sample CPU
functions give; the GPU backends' glue (argument handling, filter matrices,
output wrapping) is run with NumPy standing in for CuPy.
"""

from __future__ import annotations

import numpy as np
import pytest

from chute.ops.audio import audio_gpu, audio_ops, batched, dsp, features_ops

RATE = 16000


def signals(lengths, seed=0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [(rng.standard_normal(n) * 0.1).astype(np.float32) for n in lengths]


def as_list(result) -> list[np.ndarray]:
    return list(result)


RAGGED = (3000, 1, 0, 4501, 2, 700)
UNIFORM = (2400, 2400, 2400)


@pytest.mark.parametrize("lengths", [RAGGED, UNIFORM], ids=["ragged", "uniform"])
@pytest.mark.parametrize("center,reflect", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("power", [1, 2])
def test_spectrogram_batch_equals_per_sample(lengths, center, reflect, power):
    xs = signals(lengths)
    window = dsp.hann_window(400)
    got = batched.spectrogram(
        np, xs, [512] * len(xs), 400, 160, window, power, center, reflect, "ft"
    )
    if lengths == UNIFORM:
        assert isinstance(got, np.ndarray) and got.shape[0] == len(xs)
    for x, g in zip(xs, as_list(got)):
        want = dsp.spectrogram(x, 512, 400, 160, None, power, center, reflect)
        assert g.shape == want.shape and g.dtype == np.float32
        np.testing.assert_array_equal(g, want)


def test_framing_reflects_past_short_signals_like_repeated_numpy_pad():
    # windows longer than the signal: the mirror bounces between the ends
    x = np.arange(5, dtype=np.float32)
    want, pad = x, 8
    while pad > 0:
        step = min(pad, len(x) - 1)
        want, pad = np.pad(want, step, mode="reflect"), pad - step
    frames, counts = batched.frame_signals(np, [x, x[:1]], 16, 3, True, True)
    assert counts == [2, 1]
    np.testing.assert_array_equal(frames[0], want[:16])
    np.testing.assert_array_equal(frames[1], want[3:19])
    # one sample cannot be mirrored: zeros around it, as on the CPU
    np.testing.assert_array_equal(frames[2], np.eye(16, dtype=np.float32)[8] * 0)


def test_spectrogram_per_sample_nfft_and_tf_layout():
    xs = signals((1600, 2000, 1600))
    window = dsp.hann_window(256)
    got = batched.spectrogram(np, xs, [256, 512, 512], 256, 128, window, 2, True, True, "tf")
    for x, n, g in zip(xs, [256, 512, 512], got):
        np.testing.assert_allclose(g, dsp.spectrogram(x, n, 256, 128, layout="tf"), rtol=1e-6)


@pytest.mark.parametrize("lengths", [(30, 41, 30), (25, 25)], ids=["ragged", "uniform"])
def test_matrix_along_equals_apply_along(lengths):
    rng = np.random.default_rng(1)
    specs = [rng.random((257, n)).astype(np.float32) for n in lengths]
    matrix = dsp.mel_filters(257, 40, RATE)
    for axis, inputs in ((0, specs), (1, [s.T.copy() for s in specs])):
        got = batched.matrix_along(np, matrix, inputs, axis)
        for s, g in zip(inputs, got):
            np.testing.assert_allclose(g, dsp.apply_along(matrix, s, axis), rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("lengths", [(30, 41, 0, 30), (25, 25)], ids=["ragged", "uniform"])
@pytest.mark.parametrize("reference", [0.0, 2.0])
def test_to_decibels_batch(lengths, reference):
    rng = np.random.default_rng(2)
    xs = [rng.random((40, n)).astype(np.float32) ** 4 for n in lengths]
    xs.append(np.zeros((40, lengths[0]), np.float32))  # all zero: at the cut-off everywhere
    got = batched.to_decibels(np, xs, 10.0, reference, -80.0)
    for x, g in zip(xs, got):
        np.testing.assert_array_equal(g, dsp.to_decibels(x, 10.0, reference, -80.0))
    np.testing.assert_allclose(got[-1], np.full_like(xs[-1], -80.0), rtol=1e-6)
    assert np.ptp(got[0]) > 10


@pytest.mark.parametrize("border", ["zero", "clamp", "reflect"])
def test_preemphasis_batch(border):
    xs = signals((500, 1, 0, 64, 500))
    coeffs = [0.97, 0.5, 0.9, 0.1, 0.0]
    for group in (xs, [xs[0], xs[4]]):  # ragged, then uniform
        got = batched.preemphasis(np, group, coeffs[: len(group)], border)
        for x, c, g in zip(group, coeffs, got):
            np.testing.assert_array_equal(g, dsp.preemphasis(x, c, border))


def test_preemphasis_batch_keeps_channels():
    x = np.random.default_rng(3).standard_normal((300, 2)).astype(np.float32)
    got = batched.preemphasis(np, [x, x[:100]], [0.5, 0.5], "clamp")
    np.testing.assert_array_equal(got[1], dsp.preemphasis(x[:100], 0.5))
    np.testing.assert_array_equal(got[0][:, 1], dsp.preemphasis(x[:, 1], 0.5))


def burst(n: int, start: int, stop: int, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal(n) * 1e-5
    x[start:stop] += np.sin(np.arange(stop - start) * 0.3)
    return x


@pytest.mark.parametrize("reference", [0.0, 0.3])
def test_nonsilent_regions_batch(reference):
    xs = [burst(9000, 2000, 5000, 0), burst(5000, 100, 200, 1), np.zeros(3000), np.zeros(0)]
    xs.append(burst(9000, 7000, 9000, 2))
    begin, length = batched.nonsilent_regions(np, xs, -60.0, 512, reference)
    assert begin.dtype == length.dtype == np.int32
    for i, x in enumerate(xs):
        assert (begin[i], length[i]) == dsp.nonsilent_region(x, -60.0, 512, reference), i
    assert (begin[2], length[2]) == (0, 0)


# ---- the GPU glue, with NumPy standing in for CuPy -------------------------------------


class FakeBatch:
    def __init__(self, samples, layout=""):
        self._samples = samples
        self._layout = layout

    def samples(self):
        return list(self._samples)

    def layout(self):
        return self._layout


class FakeArgs:
    """BatchArgs' interface over constants (and per-sample columns where given as lists)."""

    def __init__(self, op, n, **given):
        self.schema, self.n, self.given = op.schema, n, given

    def __getitem__(self, name):
        return self.given[name] if name in self.given else self.schema.arg(name).default

    def column(self, name):
        value = self[name]
        return list(value) if isinstance(value, list) else [value] * self.n


class FakeContext:
    device_id = 0
    stream = None

    def __init__(self, state=None):
        self.state = state


@pytest.fixture
def numpy_for_cupy(monkeypatch):
    monkeypatch.setattr(audio_gpu, "_cupy", lambda ctx: np)
    monkeypatch.setattr(audio_gpu, "gpu_batch", lambda result, layout, ctx: (result, layout))
    audio_gpu._constants.clear()
    yield
    audio_gpu._constants.clear()


def test_gpu_glue_feature_chain_matches_cpu_operators(numpy_for_cupy):
    xs = signals((3000, 4500, 3000))
    n = len(xs)
    emph, layout = audio_gpu.preemphasis_gpu(
        None,
        [FakeBatch(xs, "t")],
        FakeArgs(audio_ops.PreemphasisFilter, n, preemph_coeff=[0.9, 0.95, 0.97], border="zero"),
        FakeContext(),
    )
    assert layout == "t"
    spec, layout = audio_gpu.spectrogram_gpu(
        None,
        [FakeBatch(list(emph))],
        FakeArgs(
            features_ops.Spectrogram, n, nfft=[512, 512, 512], window_length=400, window_step=160
        ),
        FakeContext(),
    )
    assert layout == "ft"
    mel, _ = audio_gpu.mel_filter_bank_gpu(
        None,
        [FakeBatch(list(spec), "ft")],
        FakeArgs(features_ops.MelFilterBank, n, nfilter=40, sample_rate=RATE),
        FakeContext(state=0),
    )
    db, _ = audio_gpu.to_decibels_gpu(
        None,
        [FakeBatch(list(mel))],
        FakeArgs(features_ops.ToDecibels, n, cutoff_db=-80.0),
        FakeContext(),
    )
    mfcc, _ = audio_gpu.mfcc_gpu(
        None,
        [FakeBatch(list(db))],
        FakeArgs(features_ops.MFCC, n, n_mfcc=13, normalize=True, lifter=22.0),
        FakeContext(),
    )
    for i, (x, c) in enumerate(zip(xs, [0.9, 0.95, 0.97])):
        e = dsp.preemphasis(x, c, "zero")
        s = dsp.spectrogram(e, 512, 400, 160)
        m = dsp.apply_along(dsp.mel_filters(257, 40, RATE), s, 0)
        d = dsp.to_decibels(m, 10.0, 0.0, -80.0)
        np.testing.assert_array_equal(emph[i], e)
        np.testing.assert_array_equal(spec[i], s)
        np.testing.assert_allclose(mel[i], m, rtol=1e-5, atol=1e-9)
        np.testing.assert_allclose(db[i], d, atol=1e-4)
        want = dsp.mfcc(d, n_mfcc=13, normalize=True, lifter=22.0)
        np.testing.assert_allclose(mfcc[i], want, rtol=1e-4, atol=1e-3)


def test_gpu_glue_int16_inputs_and_integer_output(numpy_for_cupy):
    pcm = [(burst(6000, 1000, 3000, s) * 20000).astype(np.int16) for s in (0, 1)]
    (begin, _), (length, _) = audio_gpu.nonsilent_region_gpu(
        None,
        [FakeBatch(pcm)],
        FakeArgs(audio_ops.NonsilentRegion, 2, window_length=256),
        FakeContext(),
    )
    for i, x in enumerate(pcm):
        want = dsp.nonsilent_region(x.astype(np.float32) / 32768, -60.0, 256)
        assert (begin[i], length[i]) == want
    out, _ = audio_gpu.preemphasis_gpu(
        None,
        [FakeBatch(pcm)],
        FakeArgs(audio_ops.PreemphasisFilter, 2, dtype=np.dtype(np.int16)),
        FakeContext(),
    )
    assert out.dtype == np.int16
    want = np.clip(np.rint(dsp.preemphasis(pcm[0], 0.97)), -32768, 32767).astype(np.int16)
    np.testing.assert_array_equal(out[0], want)


def test_gpu_glue_rejects_what_the_cpu_rejects(numpy_for_cupy):
    xs = signals((800, 900))
    with pytest.raises(ValueError, match="nfft"):
        audio_gpu.spectrogram_gpu(
            None,
            [FakeBatch(xs)],
            FakeArgs(features_ops.Spectrogram, 2, nfft=[512, 128], window_length=256),
            FakeContext(),
        )
    with pytest.raises(ValueError, match="one channel"):
        audio_gpu.spectrogram_gpu(
            None,
            [FakeBatch([np.zeros((10, 2), np.float32)])],
            FakeArgs(features_ops.Spectrogram, 1),
            FakeContext(),
        )
    with pytest.raises(ValueError, match="n_mfcc"):
        audio_gpu.mfcc_gpu(
            None,
            [FakeBatch([np.zeros((10, 4), np.float32)])],
            FakeArgs(features_ops.MFCC, 1, n_mfcc=20),
            FakeContext(),
        )
