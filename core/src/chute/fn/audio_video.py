"""Audio and video operators as ``fn`` functions (re-exported by ``chute.fn``).

``fn.decoders.audio``, ``fn.decoders.video`` and ``fn.readers.video`` are
registered in :mod:`chute.fn.decoders` and :mod:`chute.fn.readers`.
"""

from __future__ import annotations

from chute.ops.audio import (
    MFCC,
    AudioResample,
    MelFilterBank,
    NonsilentRegion,
    PreemphasisFilter,
    Spectrogram,
    ToDecibels,
)
from chute.runtime.operator import make_fn

__all__ = [
    "audio_resample",
    "mel_filter_bank",
    "mfcc",
    "nonsilent_region",
    "preemphasis_filter",
    "spectrogram",
    "to_decibels",
]

audio_resample = make_fn(AudioResample)
mel_filter_bank = make_fn(MelFilterBank)
mfcc = make_fn(MFCC)
nonsilent_region = make_fn(NonsilentRegion)
preemphasis_filter = make_fn(PreemphasisFilter)
spectrogram = make_fn(Spectrogram)
to_decibels = make_fn(ToDecibels)
