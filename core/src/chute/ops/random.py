"""Random number operators: fn.random.uniform, normal, coin_flip, choice, beta.

Every draw comes from the sample's counter-based stream (see
chute.runtime.context.random_generator), so results do not depend on the
thread count or on timing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import DataNode, OpNode
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.tensor_ops import convert
from chute.runtime.context import sample_generator
from chute.runtime.operator import ArgView, Operator
from chute.runtime.philox import (
    bounded_integers,
    coin_flips,
    sample_counters,
    stream_words,
    uniform_doubles,
    uniform_doubles_match_numpy,
)
from chute.runtime.registry import register
from chute.types import to_dtype


def _shape_ndim(node: OpNode, inputs: list[Spec]) -> int | None:
    if inputs:  # shape_like input
        return inputs[0].ndim
    if "shape" in node.arg_inputs:
        return None
    shape = node.arg("shape")
    return len(shape) if shape else 0


def _shape(inputs: tuple, args: ArgView) -> tuple[int, ...]:
    if inputs:
        return tuple(inputs[0].shape)
    shape = args["shape"]
    return tuple(int(s) for s in shape) if shape else ()


_SHAPE = Arg("shape", "int_list", (), "Shape of each sample's output (scalar by default).")
_DTYPE = Arg(
    "dtype", "dtype", None, "Output data type (rounded and clamped to it).", per_sample=False
)


def _as_dtype(values: Any, dtype: Any) -> np.ndarray:
    """Draws as ``dtype``: integers are rounded and saturated, as DALI converts them."""
    return convert(np.asarray(values), np.dtype(dtype))


@register(legacy=("uniform",))
class Uniform(Operator):
    """Uniformly distributed numbers in ``[range[0], range[1])``, or drawn from ``values``."""

    schema = Schema(
        name="random.uniform",
        inputs=("shape_like",),
        min_inputs=0,
        args=(
            Arg("range", "float_pair", (-1.0, 1.0), "Half-open interval [lo, hi)."),
            Arg("values", "float_list", None, "Discrete values to choose from (uniformly)."),
            _SHAPE,
            _DTYPE,
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        if ("values" in args or "values" in arg_inputs) and (
            "range" in args or "range" in arg_inputs
        ):
            raise TypeError("fn.random.uniform: arguments 'range' and 'values' exclude each other")
        _check_range(args.get("range", (-1.0, 1.0)))
        if "values" in args and not args["values"]:
            raise ValueError("fn.random.uniform: argument 'values' must not be empty")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [Spec(node.arg("dtype") or np.dtype(np.float32), _shape_ndim(node, inputs))]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        shape = _shape(inputs, args)
        dtype = args["dtype"] or np.float32
        values = args["values"]
        if values is not None:
            if not values:
                raise ValueError("fn.random.uniform: argument 'values' must not be empty")
            out = np.asarray(values, np.float64)[ctx.rng.integers(0, len(values), size=shape)]
        else:
            lo, hi = _check_range(args["range"])
            out = ctx.rng.uniform(lo, hi, size=shape)
        return _as_dtype(out, dtype)

    def draws_batch(self, node: OpNode) -> bool:
        # constant arguments and a small fixed shape: the first words of each stream
        if node.inputs or node.arg_inputs:
            return False
        count = _count(node.arg("shape"))
        if not 0 < count <= _MAX_BATCH_DRAWS:
            return False
        values = node.arg("values")
        if values is None:
            return uniform_doubles_match_numpy()
        return 0 < len(values) <= 1 << 32

    def draw_batch(
        self, node: OpNode, seed: int, epoch: int, iteration: int, meta: list
    ) -> list[Any]:
        """Every sample's draws at once (philox.py), equal to what run_sample gives."""
        shape = tuple(int(s) for s in node.arg("shape") or ())
        count = _count(shape)
        dtype = node.arg("dtype") or np.float32
        key, ctr = sample_counters(seed, node.id, epoch, iteration, meta)
        values = node.arg("values")
        if values is None:
            lo, hi = _check_range(node.arg("range"))
            words = stream_words(key, ctr, -(-count // 4))[:, :count]
            draws = uniform_doubles(words, lo, hi)
        else:
            table = np.asarray(values, np.float64)
            picks, redraw = bounded_integers(key, ctr, count, len(table))
            for i in redraw:  # a draw NumPy rejects: that sample's generator decides
                rng = sample_generator(seed, node.id, epoch, iteration, i, meta[i])
                picks[i] = rng.integers(0, len(table), size=count)
            draws = table[picks]
        converted = _as_dtype(draws, dtype)  # one conversion for the batch
        return [converted[i].reshape(shape) for i in range(len(converted))]


# up to this many numbers per sample are drawn for the whole batch at once
_MAX_BATCH_DRAWS = 64


def _count(shape: Any) -> int:
    return int(np.prod([int(s) for s in shape])) if shape else 1


def _check_range(rng: tuple[float, float]) -> tuple[float, float]:
    lo, hi = rng
    if hi < lo:
        raise ValueError(
            f"fn.random.uniform: argument 'range' must have lo <= hi, got ({lo}, {hi})"
        )
    return lo, hi


@register(legacy=("normal_distribution",), ops_aliases=("Normal",))
class Normal(Operator):
    """Normally distributed numbers with ``mean`` and ``stddev``."""

    schema = Schema(
        name="random.normal",
        inputs=("shape_like",),
        min_inputs=0,
        args=(
            Arg("mean", "float", 0.0, "Mean."),
            Arg("stddev", "float", 1.0, "Standard deviation."),
            _SHAPE,
            _DTYPE,
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        if args.get("stddev", 1.0) < 0:
            raise ValueError(
                f"fn.random.normal: argument 'stddev' must be >= 0, got {args['stddev']}"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [Spec(node.arg("dtype") or np.dtype(np.float32), _shape_ndim(node, inputs))]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        if args["stddev"] < 0:
            raise ValueError(
                f"fn.random.normal: argument 'stddev' must be >= 0, got {args['stddev']}"
            )
        out = ctx.rng.normal(args["mean"], args["stddev"], size=_shape(inputs, args))
        return _as_dtype(out, args["dtype"] or np.float32)


@register(legacy=("coin_flip",))
class CoinFlip(Operator):
    """Bernoulli draws: 1 with ``probability``, else 0 (int32 by default)."""

    schema = Schema(
        name="random.coin_flip",
        inputs=("shape_like",),
        min_inputs=0,
        args=(Arg("probability", "float", 0.5, "Probability of a 1."), _SHAPE, _DTYPE),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        p = args.get("probability", 0.5)
        if not 0.0 <= p <= 1.0:
            raise ValueError(
                f"fn.random.coin_flip: argument 'probability' must be in [0, 1], got {p}"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [Spec(node.arg("dtype") or np.dtype(np.int32), _shape_ndim(node, inputs))]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        p = args["probability"]
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"argument 'probability' must be in [0, 1], got {p}")
        out = ctx.rng.random(size=_shape(inputs, args)) < p
        return np.asarray(out, dtype=args["dtype"] or np.int32)

    def draws_batch(self, node: OpNode) -> bool:
        # constant arguments, scalar draws: each sample's first word of its own stream
        if node.inputs or node.arg_inputs or node.schema.maskable or node.arg("shape"):
            return False
        p = node.arg("probability")
        return isinstance(p, (int, float)) and 0.0 <= p <= 1.0

    def draw_batch(
        self, node: OpNode, seed: int, epoch: int, iteration: int, meta: list
    ) -> list[Any]:
        """Every sample's flip at once (philox.py): 0-d arrays, as run_sample returns them."""
        n = len(meta)
        key, ctr = sample_counters(seed, node.id, epoch, iteration, meta)
        flips = coin_flips(stream_words(key, ctr, 1), float(node.arg("probability")))
        values = flips.astype(node.arg("dtype") or np.int32).reshape(n, 1)
        return [v.reshape(()) for v in values]


@register(ops_aliases=("Choice",))
class Choice(Operator):
    """Draws from ``a`` (the values, or ``range(a)`` for an integer) with probabilities ``p``."""

    schema = Schema(
        name="random.choice",
        inputs=("input",),
        min_inputs=0,
        args=(
            Arg("a", "any", None, "Values to choose from, or n for range(n).", per_sample=False),
            Arg("p", "float_list", None, "Probabilities (uniform if not given)."),
            _SHAPE,
            _DTYPE,
        ),
    )

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        # DALI accepts the values as a constant first input: fn.random.choice([1, 2, 3]).
        if inputs and not isinstance(inputs[0], DataNode):
            kwargs["a"] = inputs[0]
            inputs = inputs[1:]
        return super().__call__(*inputs, **kwargs)

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        a = args.get("a")
        p = args.get("p")
        if a is None:
            return
        n = int(a) if np.ndim(a) == 0 else len(a)
        if n < 1:
            raise ValueError(
                f"fn.random.choice: argument 'a' must have at least one value, got {a!r}"
            )
        if p is not None and (len(p) != n or abs(sum(p) - 1.0) > 1e-6):
            raise ValueError(
                f"fn.random.choice: argument 'p' must have {n} probabilities summing to 1, got {p}"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        a = node.arg("a")
        if node.arg("dtype") is not None:
            dtype = node.arg("dtype")
        elif inputs:
            dtype = inputs[0].dtype
        else:
            dtype = np.asarray(a).dtype if np.ndim(a) else np.dtype(np.int32)
            if dtype == np.int64:
                dtype = np.dtype(np.int32)
        shape = node.arg("shape")
        return [Spec(to_dtype(dtype) if dtype is not None else None, len(shape) if shape else 0)]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        a = inputs[0] if inputs else args["a"]
        if a is None:
            raise ValueError("give the values to choose from as input or argument 'a'")
        pool = np.arange(int(a)) if np.ndim(a) == 0 else np.asarray(a)
        shape = tuple(args["shape"]) or None
        p = args["p"]
        out = pool[ctx.rng.choice(len(pool), size=shape, p=p)]
        dtype = args["dtype"] or (np.int32 if pool.dtype == np.int64 else pool.dtype)
        return np.asarray(out, dtype=dtype)


@register
class Beta(Operator):
    """Numbers in [0, 1] following the beta distribution with ``alpha`` and ``beta``."""

    schema = Schema(
        name="random.beta",
        inputs=("shape_like",),
        min_inputs=0,
        args=(
            Arg("alpha", "float", 1.0, "The alpha parameter (> 0)."),
            Arg("beta", "float", 1.0, "The beta parameter (> 0)."),
            _SHAPE,
            Arg(
                "dtype",
                "dtype",
                None,
                "Output type: float32 (default) or float64.",
                per_sample=False,
            ),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        for name in ("alpha", "beta"):
            if args.get(name, 1.0) <= 0:
                raise ValueError(f"fn.random.beta: argument '{name}' must be > 0, got {args[name]}")
        dtype = args.get("dtype")
        if dtype is not None and dtype not in (np.float32, np.float64):
            raise TypeError(
                f"fn.random.beta: argument 'dtype' must be float32 or float64, got {dtype}"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [Spec(node.arg("dtype") or np.dtype(np.float32), _shape_ndim(node, inputs))]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        a, b = args["alpha"], args["beta"]
        for name, v in (("alpha", a), ("beta", b)):
            if v <= 0:
                raise ValueError(f"fn.random.beta: argument '{name}' must be > 0, got {v}")
        out = ctx.rng.beta(a, b, size=_shape(inputs, args))
        return np.asarray(out, dtype=args["dtype"] or np.float32)
