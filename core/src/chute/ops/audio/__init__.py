"""Audio operators (``ops.decoders.Audio`` lives in :mod:`chute.ops.decoders`' namespace too).

The pure signal processing is in :mod:`chute.ops.audio.dsp`; decoding (through
the optional ``soundfile`` package) in :mod:`chute.ops.audio.codec`.

As in every family, each operator module has its backends beside it
(``<topic>_ops.py`` / ``<topic>_kernels.py`` / ``<topic>_gpu.py``): here
``audio_ops.py`` (signal) and ``features_ops.py`` (spectral features) declare the
operators, dsp.py and batched.py hold the CPU math and
``audio_gpu.py`` the GPU backends.
"""

from __future__ import annotations

from chute.ops.audio.audio_ops import (
    AudioDecoder,
    AudioResample,
    NonsilentRegion,
    PreemphasisFilter,
)
from chute.ops.audio.features_ops import MFCC, MelFilterBank, Spectrogram, ToDecibels

__all__ = [
    "AudioDecoder",
    "AudioResample",
    "MelFilterBank",
    "MFCC",
    "NonsilentRegion",
    "PreemphasisFilter",
    "Spectrogram",
    "ToDecibels",
]
