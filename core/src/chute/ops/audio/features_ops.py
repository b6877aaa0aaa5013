"""Audio feature operators: spectrogram, mel_filter_bank, to_decibels, mfcc.

Per-sample CPU operators over the pure functions of :mod:`chute.ops.audio.dsp`, with
DALI's argument names, defaults and output shapes; on the GPU (``device="gpu"``) a whole
batch at a time (:mod:`chute.ops.audio.audio_gpu`).
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
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register


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
