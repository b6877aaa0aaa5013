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
from chute.ops.tensors.constant_ops import as_node
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
        devices=("cpu", "gpu"),
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

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops import random_gpu

        return random_gpu.uniform(inputs, args, ctx)


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
        devices=("cpu", "gpu"),
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

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops import random_gpu

        return random_gpu.normal(inputs, args, ctx)


@register(legacy=("coin_flip",))
class CoinFlip(Operator):
    """Bernoulli draws: 1 with ``probability``, else 0 (int32 by default)."""

    schema = Schema(
        name="random.coin_flip",
        inputs=("shape_like",),
        min_inputs=0,
        args=(Arg("probability", "float", 0.5, "Probability of a 1."), _SHAPE, _DTYPE),
        devices=("cpu", "gpu"),
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
        values = flips.astype(node.arg("dtype") or np.int32).reshape(n)
        return [values[i, ...] for i in range(n)]  # 0-d views

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops import random_gpu

        return random_gpu.coin_flip(inputs, args, ctx)


@register(ops_aliases=("Choice",))
class Choice(Operator):
    """Draws from ``a`` (a 1-D array of values, or ``range(a)`` for an integer scalar) with
    probabilities ``p``; the output has ``a``'s type and ``shape`` (or ``shape_like``'s)."""

    schema = Schema(
        name="random.choice",
        inputs=("a", "shape_like"),
        min_inputs=1,
        args=(
            Arg("p", "float_list", None, "Probabilities (uniform if not given)."),
            _SHAPE,
            _DTYPE,
        ),
    )

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        # DALI takes the values as a constant too: fn.random.choice([1, 2, 3]), choice(10)
        if inputs and not isinstance(inputs[0], DataNode):
            pool = _choice_pool(np.asarray(inputs[0]))
            p = kwargs.get("p")
            if p is not None and not isinstance(p, DataNode):
                _check_p(self.schema.arg("p").convert("fn.random.choice", p), len(pool))
            inputs = (as_node("fn.random.choice", inputs[0]), *inputs[1:])
        return super().__call__(*inputs, **kwargs)

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        dtype = node.arg("dtype") if node.arg("dtype") is not None else inputs[0].dtype
        if "shape" in node.arg_inputs:
            ndim = None
        elif node.arg("shape"):
            ndim = len(node.arg("shape"))
        else:
            ndim = inputs[1].ndim if len(inputs) > 1 else 0
        return [Spec(to_dtype(dtype) if dtype is not None else None, ndim)]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        pool = _choice_pool(inputs[0])
        if args["shape"]:
            shape: tuple[int, ...] | None = tuple(int(s) for s in args["shape"])
        else:
            shape = tuple(inputs[1].shape) if len(inputs) > 1 else None
        p = args["p"]
        if p is not None:
            _check_p(p, len(pool))
            p = np.asarray(p, np.float64) / np.sum(p, dtype=np.float64)  # float32 p: exact sum
        out = pool[ctx.rng.choice(len(pool), size=shape, p=p)]
        return np.asarray(out, dtype=args["dtype"] or pool.dtype)


def _check_p(p: Any, n: int) -> None:
    if len(p) != n or abs(sum(p) - 1.0) > 1e-6 or min(p) < 0:
        raise ValueError(
            f"fn.random.choice: argument 'p' must have {n} non-negative probabilities summing "
            f"to 1, got {list(p)}"
        )


def _choice_pool(a: np.ndarray) -> np.ndarray:
    """The values random.choice draws from: ``a`` itself, or ``range(a)`` (``a``'s type)."""
    if a.ndim == 0:
        if a.dtype.kind not in "iu":
            raise TypeError(
                f"fn.random.choice: a scalar 'a' must be an integer (range(a)), got {a.dtype}"
            )
        if int(a) < 1:
            raise ValueError(f"fn.random.choice: 'a' must be >= 1 to choose from range(a), got {a}")
        return np.arange(int(a), dtype=a.dtype)
    if a.ndim != 1:
        raise ValueError(f"fn.random.choice: 'a' must be a scalar or 1-D, got {a.ndim} dims")
    if a.size == 0:
        raise ValueError("fn.random.choice: 'a' must have at least one value")
    return a


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
