"""Audio operators in pipelines: decoding WAV/FLAC/OGG, resampling, and the feature chain."""

from __future__ import annotations

import io
import subprocess
import sys

import numpy as np
import pytest

from chute import fn, ops, pipeline_def, types
from chute.ops.audio import dsp

soundfile = pytest.importorskip("soundfile")

RATE = 16000


def stereo_tones(n: int = 8000, rate: int = RATE) -> np.ndarray:
    t = np.arange(n) / rate
    return np.stack([0.5 * np.sin(2 * np.pi * 440 * t), 0.25 * np.sin(2 * np.pi * 1000 * t)], 1)


def encode(
    signal: np.ndarray, fmt: str, subtype: str | None = None, rate: int = RATE
) -> np.ndarray:
    buf = io.BytesIO()
    soundfile.write(buf, signal, rate, format=fmt, subtype=subtype)
    return np.frombuffer(buf.getvalue(), np.uint8)


def run_once(make_outputs, samples: list) -> list:
    """Run a one-batch pipeline whose input is ``samples`` (1-D uint8 or float arrays)."""

    @pipeline_def(batch_size=len(samples), num_threads=2, device_id=None, seed=3)
    def pipe():
        return make_outputs(fn.external_source(source=lambda: samples))

    p = pipe()
    p.build()
    return [[out.at(i) for i in range(len(samples))] for out in p.run()]


@pytest.mark.parametrize(
    "fmt,subtype,atol",
    [("WAV", "PCM_16", 1 / 32768), ("WAV", "FLOAT", 1e-7), ("FLAC", "PCM_16", 1 / 32768)],
)
def test_decode_lossless(fmt, subtype, atol):
    signal = stereo_tones()
    (audio, rate) = run_once(lambda e: fn.decoders.audio(e), [encode(signal, fmt, subtype)])
    assert audio[0].dtype == np.float32 and audio[0].shape == (8000, 2)
    assert rate[0].dtype == np.float32 and rate[0].shape == () and float(rate[0]) == RATE
    np.testing.assert_allclose(audio[0], signal, atol=atol)


def test_decode_ogg_vorbis_keeps_the_tone():
    signal = stereo_tones()[:, 0]
    (audio, rate) = run_once(lambda e: fn.decoders.audio(e), [encode(signal, "OGG", "VORBIS")])
    assert audio[0].shape[1] == 1 and abs(audio[0].shape[0] - 8000) < 200
    spectrum = np.abs(np.fft.rfft(audio[0][:, 0]))
    peak_hz = np.argmax(spectrum) * float(rate[0]) / audio[0].shape[0]
    assert abs(peak_hz - 440) < 5


def test_decode_downmix_resample_and_int_types():
    signal = stereo_tones(4001)
    enc = encode(signal, "WAV", "PCM_16")
    (mono, rate, pcm, _, wide, _, full, _) = run_once(
        lambda e: [
            *fn.decoders.audio(e, downmix=True, sample_rate=22050),
            *fn.decoders.audio(e, dtype=types.INT16),
            *fn.decoders.audio(e, dtype=types.INT32),
            *fn.decoders.audio(e),
        ],
        [enc],
    )
    assert float(rate[0]) == 22050.0
    assert mono[0].shape == (int(np.ceil(4001 * 22050 / RATE)),)
    t = np.arange(mono[0].shape[0]) / 22050
    want = (0.5 * np.sin(2 * np.pi * 440 * t) + 0.25 * np.sin(2 * np.pi * 1000 * t)) / 2
    edge = 300
    np.testing.assert_allclose(mono[0][edge:-edge], want[edge:-edge], atol=3e-3)
    assert pcm[0].dtype == np.int16
    # float output is PCM / 32768, exactly
    np.testing.assert_array_equal(pcm[0], (full[0] * 32768).astype(np.int16))
    assert np.abs(pcm[0] / 32768 - signal).max() < 2 / 32768
    assert wide[0].dtype == np.int32
    np.testing.assert_array_equal(wide[0] >> 16, pcm[0])


def test_decode_garbage_raises_naming_the_operator():
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def pipe():
        enc = fn.external_source(source=lambda: [np.arange(100, dtype=np.uint8)])
        return fn.decoders.audio(enc)

    p = pipe()
    p.build()
    with pytest.raises(Exception, match="decoders.audio") as info:
        p.run()
    assert "cannot decode audio" in str(info.value)


def test_feature_chain_matches_dsp_functions():
    rng = np.random.default_rng(0)
    signals = [rng.standard_normal(n).astype(np.float32) * 0.1 for n in (3000, 4500)]

    def chain(x):
        emph = fn.preemphasis_filter(x, preemph_coeff=0.95, border="reflect")
        spec = fn.spectrogram(emph, nfft=512, window_length=400, window_step=160)
        mel = fn.mel_filter_bank(spec, nfilter=40, sample_rate=RATE)
        db = fn.to_decibels(mel, multiplier=10.0, cutoff_db=-80.0)
        return [emph, spec, mel, db, fn.mfcc(db, n_mfcc=13, normalize=True)]

    emph, spec, mel, db, mfcc = run_once(chain, signals)
    for i, x in enumerate(signals):
        e = dsp.preemphasis(x, 0.95, "reflect")
        s = dsp.spectrogram(e, 512, 400, 160)
        m = dsp.mel_filters(257, 40, RATE) @ s
        d = dsp.to_decibels(m, 10.0, 0.0, -80.0)
        np.testing.assert_allclose(emph[i], e, rtol=1e-6)
        np.testing.assert_allclose(spec[i], s, rtol=1e-5)
        np.testing.assert_allclose(mel[i], m, rtol=1e-4, atol=1e-9)
        np.testing.assert_allclose(db[i], d, atol=1e-3)
        np.testing.assert_allclose(mfcc[i], dsp.mfcc(d, n_mfcc=13, normalize=True), atol=1e-2)
        assert spec[i].shape == (257, len(x) // 160 + 1)
        assert mfcc[i].shape == (13, len(x) // 160 + 1)


def test_mel_filter_bank_follows_tf_layout():
    x = np.random.default_rng(1).standard_normal(2000).astype(np.float32)
    ft, tf = run_once(
        lambda a: [
            fn.mel_filter_bank(fn.spectrogram(a, nfft=256, window_length=256), nfilter=16),
            fn.mel_filter_bank(
                fn.spectrogram(a, nfft=256, window_length=256, layout="tf"), nfilter=16
            ),
        ],
        [x],
    )
    assert ft[0].shape[0] == 16 and tf[0].shape[1] == 16
    np.testing.assert_allclose(ft[0], tf[0].T, rtol=1e-5)


def test_nonsilent_region_and_resample_in_pipeline():
    x = np.zeros(6000, np.float32)
    x[2000:4000] = np.sin(np.arange(2000) * 0.3)
    begin, length, half, fixed = run_once(
        lambda a: [
            *fn.nonsilent_region(a, window_length=256),
            fn.audio_resample(a, in_rate=16000, out_rate=8000),
            fn.audio_resample(a, out_length=1000),
        ],
        [x],
    )
    assert begin[0].dtype == np.int32 and begin[0].shape == ()
    assert (int(begin[0]), int(length[0])) == dsp.nonsilent_region(x, -60.0, 256)
    assert 2000 - 256 < int(begin[0]) <= 2000 and int(begin[0] + length[0]) >= 4000
    assert half[0].shape == (3000,)
    assert fixed[0].shape == (1000,)


def test_per_sample_preemphasis_and_int16_resample():
    x = (np.random.default_rng(2).standard_normal(1000) * 3000).astype(np.int16)
    out = run_once(
        lambda a: [
            fn.preemphasis_filter(a, preemph_coeff=fn.random.uniform(range=(0.5, 0.5))),
            fn.audio_resample(a, scale=2.0),
        ],
        [x],
    )
    np.testing.assert_allclose(out[0][0], dsp.preemphasis(x.astype(np.float32), 0.5), rtol=1e-6)
    assert out[1][0].dtype == np.int16 and out[1][0].shape == (2000,)
    np.testing.assert_allclose(out[1][0][100:-100:2], x[50:-50], atol=400)


def test_trace_time_errors():
    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def bad_nfft():
        return fn.spectrogram(fn.external_source(source=lambda: [np.zeros(10)]), nfft=64)

    with pytest.raises(ValueError, match="nfft"):
        bad_nfft()

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def bad_rates():
        return fn.audio_resample(fn.external_source(source=lambda: [np.zeros(10)]), in_rate=8000)

    with pytest.raises(TypeError, match="out_rate"):
        bad_rates()

    @pipeline_def(batch_size=1, num_threads=1, device_id=None)
    def bad_border():
        return ops.PreemphasisFilter(border="wrap")(
            fn.external_source(source=lambda: [np.zeros(4)])
        )

    with pytest.raises(ValueError, match="accepted"):
        bad_border()


def test_legacy_ops_names():
    assert {"MFCC", "Spectrogram", "MelFilterBank", "ToDecibels"} <= set(ops.__all__)
    assert fn.decoders.audio.__doc__.startswith("Decodes WAV, FLAC or OGG")


def test_import_without_soundfile_and_clear_error():
    code = (
        "import sys; sys.modules['soundfile'] = None\n"
        "import chute\n"
        "from chute.ops.audio.codec import decode_audio\n"
        "import numpy as np\n"
        "try:\n"
        "    decode_audio(np.zeros(10, np.uint8))\n"
        "except ImportError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "chute[audio]" in out.stdout
