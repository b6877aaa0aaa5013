"""fn.power_spectrum: the power (or magnitude) of the real FFT of each sample along one axis.

As DALI 2.4's (CPU only there too): ``nfft`` defaults to the length along ``axis`` (a longer
nfft zero-pads the signal, a shorter one takes its first nfft values, as NumPy's
``rfft(n=nfft)``); the output has ``nfft // 2 + 1`` bins along ``axis`` (the positive
frequencies) and is float32; ``power`` 2 gives ``re² + im²``, 1 the magnitude. Inputs of
1 to 3 dimensions; the FFT runs in float64.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

_OP = "fn.power_spectrum"


def power_spectrum(x: np.ndarray, nfft: int | None, axis: int, power: int) -> np.ndarray:
    """``|rfft(x, nfft, axis)| ** power`` as float32 (the operator's CPU kernel)."""
    if x.dtype.kind not in "biuf":
        raise TypeError(f"{_OP}: expected a real-valued signal, got {x.dtype}")
    if not 1 <= x.ndim <= 3:
        raise ValueError(f"{_OP}: expected 1 to 3 dimensions, got {x.ndim}")
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"{_OP}: argument 'axis' is {axis}; the sample has {x.ndim} dims")
    n = x.shape[axis] if nfft is None else nfft
    if n < 1:
        raise ValueError(f"{_OP}: the FFT needs nfft >= 1, got {n} (an empty signal?)")
    spectrum = np.fft.rfft(x.astype(np.float64, copy=False), n=n, axis=axis)
    squared = spectrum.real**2 + spectrum.imag**2
    out = squared if power == 2 else np.sqrt(squared)
    return out.astype(np.float32)


@register
class PowerSpectrum(Operator):
    """Calculates the power spectrum of the signal along ``axis`` (``nfft // 2 + 1`` bins)."""

    schema = Schema(
        name="power_spectrum",
        inputs=("input",),
        args=(
            Arg("nfft", "int", None, "FFT size (default: the length along axis).", False),
            Arg("axis", "int", -1, "Axis transformed to the frequency domain.", False),
            Arg(
                "power",
                "int",
                2,
                "2: power (re² + im²); 1: magnitude.",
                per_sample=False,
                choices=(1, 2),
            ),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        nfft = args.get("nfft")
        if nfft is not None and nfft < 1:
            raise ValueError(f"{_OP}: argument 'nfft' must be >= 1, got {nfft}")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        if spec.ndim is not None:
            if not 1 <= spec.ndim <= 3:
                raise ValueError(f"expected signals of 1 to 3 dimensions, got {spec.ndim}")
            axis = node.arg("axis")
            if not -spec.ndim <= axis < spec.ndim:
                raise ValueError(f"argument 'axis' is {axis}; the input has {spec.ndim} dims")
        return [Spec(np.dtype(np.float32), spec.ndim, spec.layout)]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        return power_spectrum(inputs[0], args["nfft"], args["axis"], args["power"])
