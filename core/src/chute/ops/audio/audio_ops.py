"""Audio operators: decoders.audio, audio_resample, preemphasis_filter, spectrogram,
mel_filter_bank, to_decibels, mfcc, nonsilent_region.

Each is a per-sample CPU operator over the pure functions of
:mod:`chute.ops.audio.dsp` and :mod:`chute.ops.audio.codec`, with DALI's
argument names, defaults and output shapes. The feature operators also run
on the GPU (``device="gpu"``), a whole batch at a time (:mod:`chute.ops.audio.audio_gpu`).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import NO_HINTS, NodeHints
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.audio import audio_gpu, dsp
from chute.ops.audio.codec import AUDIO_DTYPES, decode_audio
from chute.ops.tensor_ops import convert
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register
from chute.types import to_dtype

_QUALITY = Arg(
    "quality",
    "float",
    50.0,
    "Accepted for DALI compatibility: resampling always uses scipy's polyphase filter.",
    per_sample=False,
)


def _check_dtype(op: str, dtype: Any, allowed: tuple[np.dtype, ...]) -> None:
    if dtype is not None and to_dtype(dtype) not in allowed:
        names = ", ".join(d.name for d in allowed)
        raise ValueError(f"{op}: argument 'dtype' got {dtype!r}; accepted: {names}")


@register(legacy=("audio_decoder",))
class AudioDecoder(Operator):
    """Decodes WAV, FLAC or OGG/Vorbis audio to (time, channels), and gives its sample rate.

    Outputs the samples and the sample rate (a float32 scalar). ``sample_rate``
    resamples; ``downmix`` averages the channels into a 1-D signal. Needs the
    ``soundfile`` package (``pip install 'chute[audio]'``).
    """

    decodes = True

    schema = Schema(
        name="decoders.audio",
        inputs=("encoded",),
        num_outputs=2,
        args=(
            Arg("sample_rate", "float", 0.0, "Resample to this rate (0 = keep the file's)."),
            Arg("downmix", "bool", False, "Average all channels into one.", per_sample=False),
            Arg(
                "dtype",
                "dtype",
                np.dtype(np.float32),
                "Output type: float32 (in [-1, 1]), int16 or int32.",
                per_sample=False,
            ),
            _QUALITY,
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        _check_dtype(self.schema.display_name, args.get("dtype"), AUDIO_DTYPES)

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        dtype = to_dtype(node.arg("dtype"))
        ndim = 1 if node.arg("downmix") else 2
        return [Spec(dtype, ndim, None), Spec(np.dtype(np.float32), 0, None)]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> tuple:
        audio, rate = decode_audio(inputs[0], args["sample_rate"], args["downmix"], args["dtype"])
        return audio, np.array(rate, np.float32)


@register(legacy=("experimental.audio_resample",))
class AudioResample(Operator):
    """Resamples audio along its first (time) axis, from in_rate to out_rate or by scale."""

    schema = Schema(
        name="audio_resample",
        inputs=("input",),
        args=(
            Arg("in_rate", "float", None, "Input sample rate (with out_rate)."),
            Arg("out_rate", "float", None, "Output sample rate (with in_rate)."),
            Arg("scale", "float", None, "Output length / input length (instead of rates)."),
            Arg("out_length", "int", None, "Output length in samples (overrides the others)."),
            Arg(
                "dtype",
                "dtype",
                None,
                "Output type (default: the input's; integers saturate).",
                per_sample=False,
            ),
            _QUALITY,
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        given = {*args, *arg_inputs}
        rates = {"in_rate", "out_rate"} & given
        if len(rates) == 1:
            raise TypeError(f"{self.schema.display_name}: give both 'in_rate' and 'out_rate'")
        if not rates and not {"scale", "out_length"} & given:
            raise TypeError(
                f"{self.schema.display_name}: give 'in_rate' and 'out_rate', 'scale' or 'out_length'"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        dtype = node.arg("dtype")
        return [inputs[0].with_(dtype=to_dtype(dtype)) if dtype is not None else inputs[0]]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        x = inputs[0]
        length = x.shape[0]
        out_length = args["out_length"]
        if args["in_rate"] is not None:
            in_rate, out_rate = args["in_rate"], args["out_rate"]
        elif args["scale"] is not None:
            in_rate, out_rate = 1.0, args["scale"]
        else:
            in_rate, out_rate = float(max(length, 1)), float(out_length)
        out = dsp.resample(_to_float(x), in_rate, out_rate, out_length)
        dtype = args["dtype"] or x.dtype
        return _from_float(out, np.dtype(dtype))


def _to_float(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind in "iu":  # integer PCM: full scale maps to [-1, 1)
        return x.astype(np.float32) / np.float32(-float(np.iinfo(x.dtype).min))
    return x.astype(np.float32, copy=False)


def _from_float(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if dtype.kind in "iu":
        return convert(x * np.float32(-float(np.iinfo(dtype).min)), dtype)
    return x.astype(dtype, copy=False)


@register
class PreemphasisFilter(Operator):
    """Applies ``y[t] = x[t] - preemph_coeff * x[t-1]`` along time; ``border`` decides x[-1]."""

    schema = Schema(
        name="preemphasis_filter",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("preemph_coeff", "float", 0.97, "Preemphasis coefficient."),
            Arg(
                "border",
                "str",
                "clamp",
                "The sample before the first: 'zero' (0), 'clamp' (x[0]) or 'reflect' (x[1]).",
                per_sample=False,
                choices=("zero", "clamp", "reflect"),
            ),
            Arg("dtype", "dtype", np.dtype(np.float32), "Output data type.", per_sample=False),
        ),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [inputs[0].with_(dtype=to_dtype(node.arg("dtype")))]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        out = dsp.preemphasis(inputs[0], args["preemph_coeff"], args["border"])
        return convert(out, args["dtype"])

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        return audio_gpu.preemphasis_gpu(self, inputs, args, ctx)


@register
class Spectrogram(Operator):
    """Produces a spectrogram (magnitude or power of a short-time FFT) of a 1-D signal."""

    schema = Schema(
        name="spectrogram",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("nfft", "int", None, "FFT size (default: window_length); nfft // 2 + 1 bins."),
            Arg("window_length", "int", 512, "Window size in samples.", per_sample=False),
            Arg("window_step", "int", 256, "Step between windows in samples.", per_sample=False),
            Arg(
                "window_fn",
                "float_list",
                None,
                "Window samples (default: Hann), window_length values.",
                per_sample=False,
            ),
            Arg("power", "int", 2, "1 = magnitude, 2 = power.", per_sample=False, choices=(1, 2)),
            Arg(
                "center_windows",
                "bool",
                True,
                "Centre window i at i * window_step (pad the signal by window_length // 2).",
                per_sample=False,
            ),
            Arg(
                "reflect_padding",
                "bool",
                True,
                "Pad by mirroring the signal (else with zeros).",
                per_sample=False,
            ),
            Arg(
                "layout",
                "str",
                "ft",
                "'ft' (frequency-major) or 'tf' (time-major).",
                per_sample=False,
                choices=("ft", "tf"),
            ),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        op = self.schema.display_name
        length = args.get("window_length", 512)
        if length < 1 or args.get("window_step", 256) < 1:
            raise ValueError(f"{op}: window_length and window_step must be >= 1")
        nfft = args.get("nfft")
        if nfft is not None and nfft < length:
            raise ValueError(f"{op}: argument 'nfft' ({nfft}) must be >= window_length ({length})")
        window = args.get("window_fn")
        if window is not None and len(window) != length:
            raise ValueError(
                f"{op}: argument 'window_fn' has {len(window)} values; window_length is {length}"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [Spec(np.dtype(np.float32), 2, node.arg("layout"))]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        return dsp.spectrogram(
            inputs[0],
            nfft=args["nfft"],
            window_length=args["window_length"],
            window_step=args["window_step"],
            window_fn=args["window_fn"],
            power=args["power"],
            center_windows=args["center_windows"],
            reflect_padding=args["reflect_padding"],
            layout=args["layout"],
        )

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        return audio_gpu.spectrogram_gpu(self, inputs, args, ctx)


@functools.lru_cache(maxsize=64)
def _mel_matrix(
    bins: int, nfilter: int, rate: float, low: float, high: float, norm: bool, formula: str
) -> np.ndarray:
    return dsp.mel_filters(bins, nfilter, rate, low, high, norm, formula)


def _axis_from_layout(layout: str | None, ndim: int | None, letter: str) -> int | None:
    """Where ``letter`` sits in ``layout``; without a layout DALI assumes "...ft"."""
    if layout:
        if letter not in layout.lower():
            raise ValueError(f"input layout {layout!r} has no '{letter}' dimension")
        return layout.lower().index(letter)
    if ndim is None:
        return None
    return 0 if ndim == 1 else ndim - 2


@register
class MelFilterBank(Operator):
    """Converts a spectrogram to a mel spectrogram with a bank of triangular filters."""

    schema = Schema(
        name="mel_filter_bank",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("nfilter", "int", 128, "Number of mel filters.", per_sample=False),
            Arg("sample_rate", "float", 44100.0, "Sample rate of the audio.", per_sample=False),
            Arg("freq_low", "float", 0.0, "Lowest frequency in Hz.", per_sample=False),
            Arg(
                "freq_high",
                "float",
                0.0,
                "Highest frequency in Hz (0 = sample_rate / 2).",
                per_sample=False,
            ),
            Arg(
                "normalize",
                "bool",
                True,
                "Divide each filter by its width (unit area, Slaney's normalization).",
                per_sample=False,
            ),
            Arg(
                "mel_formula",
                "str",
                "slaney",
                "Hz-to-mel formula: 'slaney' (as librosa) or 'htk' (2595 log10(1 + f/700)).",
                per_sample=False,
                choices=("slaney", "htk"),
            ),
        ),
    )

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._freq_axis: dict[int, int | None] = {}

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        self._freq_axis[node.id] = _axis_from_layout(spec.layout, spec.ndim, "f")
        return [spec.with_(dtype=np.dtype(np.float32))]

    def setup(self, node: OpNode, hints: NodeHints = NO_HINTS, pipeline: Any = None) -> int | None:
        return self._freq_axis.get(node.id)

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        x = np.asarray(inputs[0], np.float32)
        axis = ctx.state if ctx.state is not None else _axis_from_layout(None, x.ndim, "f")
        matrix = _mel_matrix(
            x.shape[axis],
            args["nfilter"],
            args["sample_rate"],
            args["freq_low"],
            args["freq_high"],
            args["normalize"],
            args["mel_formula"],
        )
        return dsp.apply_along(matrix, x, axis)

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        return audio_gpu.mel_filter_bank_gpu(self, inputs, args, ctx)


@register
class ToDecibels(Operator):
    """Converts a magnitude (real, positive) to decibels: multiplier * log10(x / reference)."""

    schema = Schema(
        name="to_decibels",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("multiplier", "float", 10.0, "10 for power, 20 for amplitude.", per_sample=False),
            Arg(
                "reference",
                "float",
                0.0,
                "Reference magnitude (0 = the sample's maximum).",
                per_sample=False,
            ),
            Arg(
                "cutoff_db",
                "float",
                -200.0,
                "Lowest output in dB; smaller ratios saturate.",
                per_sample=False,
            ),
            Arg(
                "ref_max",
                "bool",
                False,
                "Use the sample's maximum as reference (as reference=0).",
                per_sample=False,
            ),
        ),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [inputs[0].with_(dtype=np.dtype(np.float32))]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        reference = 0.0 if args["ref_max"] else args["reference"]
        return dsp.to_decibels(inputs[0], args["multiplier"], reference, args["cutoff_db"])

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        return audio_gpu.to_decibels_gpu(self, inputs, args, ctx)


@register(ops_name="MFCC")
class MFCC(Operator):
    """Computes mel-frequency cepstral coefficients (a DCT along ``axis``) of a mel spectrogram."""

    schema = Schema(
        name="mfcc",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("axis", "int", 0, "Axis the DCT runs along.", per_sample=False),
            Arg(
                "dct_type",
                "int",
                2,
                "DCT type: 1, 2, 3 or 4.",
                per_sample=False,
                choices=(1, 2, 3, 4),
            ),
            Arg(
                "lifter",
                "float",
                0.0,
                "Liftering: coefficient i is scaled by 1 + sin(pi (i + 1) / lifter) * lifter / 2.",
                per_sample=False,
            ),
            Arg("n_mfcc", "int", 20, "Number of coefficients.", per_sample=False),
            Arg(
                "normalize",
                "bool",
                False,
                "Orthonormal DCT basis (not with dct_type=1).",
                per_sample=False,
            ),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        if args.get("normalize") and args.get("dct_type", 2) == 1:
            raise ValueError(
                f"{self.schema.display_name}: normalize is not supported with dct_type=1"
            )
        if args.get("n_mfcc", 20) < 1:
            raise ValueError(f"{self.schema.display_name}: argument 'n_mfcc' must be >= 1")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        axis = node.arg("axis")
        if spec.ndim is not None and not -spec.ndim <= axis < spec.ndim:
            raise ValueError(f"axis {axis} is out of range for {spec.ndim}-D input")
        return [spec.with_(dtype=np.dtype(np.float32))]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        return dsp.mfcc(
            inputs[0],
            axis=args["axis"],
            dct_type=args["dct_type"],
            lifter=args["lifter"],
            n_mfcc=args["n_mfcc"],
            normalize=args["normalize"],
        )

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        return audio_gpu.mfcc_gpu(self, inputs, args, ctx)


@register
class NonsilentRegion(Operator):
    """Finds the leading and trailing silence of a 1-D signal; outputs (begin, length), int32."""

    schema = Schema(
        name="nonsilent_region",
        devices=("cpu", "gpu"),
        inputs=("input",),
        num_outputs=2,
        args=(
            Arg(
                "cutoff_db",
                "float",
                -60.0,
                "Short-term power below this many dB under the reference is silence.",
                per_sample=False,
            ),
            Arg("window_length", "int", 2048, "Short-term power window.", per_sample=False),
            Arg(
                "reference_power",
                "float",
                0.0,
                "Reference power (0 = the signal's largest short-term power).",
                per_sample=False,
            ),
            Arg(
                "reset_interval",
                "int",
                8192,
                "Accepted for DALI compatibility (sums here are float64).",
                per_sample=False,
            ),
        ),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = Spec(np.dtype(np.int32), 0, None)
        return [spec, spec]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> tuple:
        x = inputs[0]
        if x.dtype.kind in "iu":
            x = _to_float(x)
        begin, length = dsp.nonsilent_region(
            x,
            args["cutoff_db"],
            args["window_length"],
            args["reference_power"],
            args["reset_interval"],
        )
        return np.array(begin, np.int32), np.array(length, np.int32)

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        return audio_gpu.nonsilent_region_gpu(self, inputs, args, ctx)
