"""Audio decoding through libsndfile (the ``soundfile`` package): WAV, FLAC, OGG/Vorbis, ...

``soundfile`` is an optional dependency (``pip install 'chute[audio]'``);
chute imports without it and only the audio decoder needs it. Calls into
libsndfile go through CFFI, which releases the GIL while they run.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

from chute.ops.audio.dsp import resample

_INT_SCALE = {np.dtype(np.int16): 32768.0, np.dtype(np.int32): 2147483648.0}
AUDIO_DTYPES = (np.dtype(np.float32), np.dtype(np.int16), np.dtype(np.int32))


def soundfile_module() -> Any:
    """The ``soundfile`` module, or an ImportError that names the extra to install."""
    try:
        import soundfile
    except ImportError as exc:
        raise ImportError(
            "fn.decoders.audio needs the 'soundfile' package: pip install 'chute[audio]'"
        ) from exc
    return soundfile


def decode_audio(
    encoded: np.ndarray,
    sample_rate: float = 0.0,
    downmix: bool = False,
    dtype: np.dtype | type = np.float32,
) -> tuple[np.ndarray, float]:
    """Decode an encoded audio file to (time, channels), or (time,) with ``downmix``.

    Returns the samples and their sample rate. ``sample_rate`` > 0 resamples
    to that rate; ``downmix`` averages the channels. Float output is in
    [-1, 1]; int16 / int32 output is full-scale PCM.
    """
    soundfile = soundfile_module()
    dtype = np.dtype(dtype)
    if dtype not in AUDIO_DTYPES:
        raise ValueError(f"audio dtype must be float32, int16 or int32, got {dtype}")
    data = np.asarray(encoded)
    if data.dtype != np.uint8 or data.ndim != 1:
        raise ValueError(
            f"expected encoded bytes (1-D uint8), got {data.dtype} of shape {data.shape}"
        )
    if data.size == 0:
        raise ValueError("empty audio sample")
    resampling = sample_rate > 0
    direct = dtype if not (resampling or downmix) else np.dtype(np.float32)
    try:
        audio, rate = soundfile.read(io.BytesIO(data.tobytes()), dtype=direct.name, always_2d=True)
    except (RuntimeError, soundfile.LibsndfileError, TypeError) as exc:
        raise ValueError(f"cannot decode audio: {exc}") from None
    if downmix:
        audio = audio.mean(axis=1, dtype=np.float32)
    if resampling and sample_rate != rate:
        audio = resample(audio, float(rate), float(sample_rate))
        rate = sample_rate
    if audio.dtype != dtype:
        scale = _INT_SCALE[dtype]
        audio = np.clip(np.rint(audio * scale), -scale, scale - 1).astype(dtype)
    return np.ascontiguousarray(audio), float(rate)
