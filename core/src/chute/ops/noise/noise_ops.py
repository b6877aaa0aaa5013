"""fn.noise.gaussian, fn.noise.salt_and_pepper, fn.noise.shot.

The output has the input's shape and type; integer outputs are rounded and saturated
(``uint8`` noise never wraps around). Arguments may be per sample.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.tensor_ops import convert
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register


def _work_dtype(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float64) if dtype == np.float64 else np.dtype(np.float32)


@register
class Gaussian(Operator):
    """Adds normally distributed noise of ``mean`` and ``stddev`` to every element."""

    schema = Schema(
        name="noise.gaussian",
        inputs=("input",),
        args=(
            Arg("mean", "float", 0.0, "Mean of the noise."),
            Arg("stddev", "float", 1.0, "Standard deviation of the noise (>= 0)."),
        ),
        devices=("cpu", "gpu"),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        if args.get("stddev", 1.0) < 0:
            raise ValueError(
                f"fn.noise.gaussian: argument 'stddev' must be >= 0, got {args['stddev']}"
            )

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        (x,) = inputs
        stddev = args["stddev"]
        if stddev < 0:
            raise ValueError(f"fn.noise.gaussian: argument 'stddev' must be >= 0, got {stddev}")
        work = _work_dtype(x.dtype)
        noise = ctx.rng.normal(args["mean"], stddev, size=x.shape).astype(work)
        return convert(x.astype(work) + noise, x.dtype)

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.noise import noise_gpu

        return noise_gpu.gaussian(inputs, args, ctx)


@register
class SaltAndPepper(Operator):
    """Replaces elements (or pixels) with ``prob`` by salt or pepper values."""

    schema = Schema(
        name="noise.salt_and_pepper",
        inputs=("input",),
        args=(
            Arg("prob", "float", 0.05, "Probability of an element becoming salt or pepper."),
            Arg("salt_vs_pepper", "float", 0.5, "Probability of salt among the noisy ones."),
            Arg("salt_val", "float", None, "Salt (1.0 for floats, the type's max otherwise)."),
            Arg("pepper_val", "float", None, "Pepper (-1.0 for floats, the type's min otherwise)."),
            Arg(
                "per_channel",
                "bool",
                False,
                "Draw per channel (else one draw per pixel for all channels).",
                per_sample=False,
            ),
        ),
        devices=("cpu", "gpu"),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        for name in ("prob", "salt_vs_pepper"):
            if name in args:
                _check_probability(name, args[name])

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        if spec.layout and not node.arg("per_channel"):
            if "C" not in spec.layout:  # no channels: every element is a pixel of its own
                node.args["per_channel"] = True
            elif spec.layout[-1] != "C":
                raise ValueError(
                    "fn.noise.salt_and_pepper: one draw per pixel needs channels last, "
                    f"got layout {spec.layout!r}"
                )
        return [spec]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        (x,) = inputs
        prob = _check_probability("prob", args["prob"])
        salt_ratio = _check_probability("salt_vs_pepper", args["salt_vs_pepper"])
        salt, pepper = _salt_pepper(x.dtype, args["salt_val"], args["pepper_val"])
        # no layout: channels last, as DALI assumes
        per_pixel = not args["per_channel"] and x.ndim >= 1
        shape = x.shape[:-1] if per_pixel else x.shape
        u = ctx.rng.random(size=shape)
        noisy = u < prob
        is_salt = u < prob * salt_ratio
        if per_pixel:
            noisy, is_salt = noisy[..., None], is_salt[..., None]
        return np.where(noisy, np.where(is_salt, salt, pepper), x).astype(x.dtype, copy=False)

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.noise import noise_gpu

        return noise_gpu.salt_and_pepper(inputs, args, ctx)


def _check_probability(name: str, p: float) -> float:
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"fn.noise.salt_and_pepper: argument '{name}' must be in [0, 1], got {p}")
    return p


def _salt_pepper(dtype: np.dtype, salt: float | None, pepper: float | None) -> tuple[Any, Any]:
    """Salt and pepper as ``dtype`` values (DALI's defaults where not given)."""
    if dtype.kind == "f":
        lo, hi = -1.0, 1.0
    elif dtype.kind == "b":
        lo, hi = 0, 1
    else:
        lo, hi = np.iinfo(dtype).min, np.iinfo(dtype).max
    salt = hi if salt is None else salt
    pepper = lo if pepper is None else pepper
    values = convert(np.asarray([salt, pepper], np.float64), dtype)
    return values[0], values[1]


@register
class Shot(Operator):
    """Shot (Poisson) noise: ``poisson(max(0, x / factor)) * factor``; factor 0 is the identity."""

    schema = Schema(
        name="noise.shot",
        inputs=("input",),
        args=(Arg("factor", "float", 20.0, "Value one event adds (>= 0; 0 keeps the input)."),),
        devices=("cpu", "gpu"),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        if args.get("factor", 20.0) < 0:
            raise ValueError(f"fn.noise.shot: argument 'factor' must be >= 0, got {args['factor']}")

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        (x,) = inputs
        factor = args["factor"]
        if factor < 0:
            raise ValueError(f"fn.noise.shot: argument 'factor' must be >= 0, got {factor}")
        if factor == 0:
            return x.copy()
        lam = np.maximum(0.0, x.astype(np.float64) / factor)
        events = ctx.rng.poisson(lam)
        return convert((events * factor).astype(_work_dtype(x.dtype)), x.dtype)

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.noise import noise_gpu

        return noise_gpu.shot(inputs, args, ctx)
