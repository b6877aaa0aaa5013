"""Audio operators on the signal: decoders.audio, audio_resample, preemphasis_filter,
nonsilent_region (the spectral features are in :mod:`chute.ops.audio.features_ops`).

Each is a per-sample CPU operator over the pure functions of
:mod:`chute.ops.audio.dsp` and :mod:`chute.ops.audio.codec`, with DALI's
argument names, defaults and output shapes. preemphasis_filter and nonsilent_region
also run on the GPU (``device="gpu"``), a whole batch at a time
(:mod:`chute.ops.audio.audio_gpu`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
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
