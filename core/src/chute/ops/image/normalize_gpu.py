"""GPU backend of fn.normalize, on CuPy.

Statistics are CuPy reductions accumulating in float64 (two passes: the mean, then the
squared deviations), one call over the stacked batch when it is dense (per-sample
statistics keep the batch axis, ``batch=True`` reduces it too), one per sample when it
is ragged. The gain ``scale / sqrt(var + epsilon)`` and bias ``shift - mean * gain``
come from one small kernel with the CPU backend's float64 operations; the elementwise
pass is one launch: the color affine kernel (chute.gpu.color_kernels) when the
statistics vary along the last (channel) axis only, else one CuPy elementwise kernel
(per sample for ragged batches).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from chute.gpu import color_kernels
from chute.gpu.batches import batch_storage, gpu_batch
from chute.gpu.runtime import require_gpu
from chute.ops.image.normalize_kernels import check_broadcast, reduction_axes

__all__ = ["normalize"]


@functools.cache
def _reductions(device_id: int) -> tuple[Any, Any]:
    import cupy as cp

    total = cp.ReductionKernel(
        "T x", "float64 y", "(double)x", "a + b", "y = a", "0", "chute_sum_f64"
    )
    squares = cp.ReductionKernel(
        "T x, float64 m",
        "float64 y",
        "((double)x - m) * ((double)x - m)",
        "a + b",
        "y = a",
        "0",
        "chute_sqdev_f64",
    )
    return total, squares


@functools.cache
def _gain_bias_kernel(device_id: int) -> Any:
    import cupy as cp

    # normalize_kernels.inv_stddev and normalize_with's bias, operation for operation
    return cp.ElementwiseKernel(
        "float64 mean, float64 var, float64 scale, float64 eps, float64 shift",
        "float64 gain, float64 bias",
        """
        const double d = __dadd_rn(var, eps);
        const double g = d > 0.0 ? __ddiv_rn(scale, __dsqrt_rn(d)) : 0.0;
        gain = g;
        bias = __dsub_rn(shift, __dmul_rn(mean, g));
        """,
        "chute_normalize_gain_bias",
    )


def _store_code(dtype: np.dtype) -> str:
    """CUDA that writes the double or float ``v`` to ``y`` as convert_saturate does."""
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        hi = float(info.max)
        if int(hi) > info.max:  # int64's max is no double: the largest one below it
            hi = float(np.nextafter(hi, 0.0))
        return f"y = (O)fmin(fmax(round((double)v), {float(info.min)!r}), {hi!r});"
    if dtype.kind == "b":
        return "y = v != 0;"
    if dtype == np.float16:
        return "y = (O)(float)v;"
    return "y = (O)v;"


@functools.cache
def _apply_kernel(double: bool, dtype: np.dtype, device_id: int) -> Any:
    import cupy as cp

    if double:
        body = "const double v = __dadd_rn(__dmul_rn((double)x, g), b);"
    else:
        body = "const float v = __fadd_rn(__fmul_rn((float)x, (float)g), (float)b);"
    return cp.ElementwiseKernel(
        "T x, float64 g, float64 b",
        "O y",
        body + _store_code(dtype),
        f"chute_normalize_apply_{int(double)}_{dtype.str[1:]}",
    )


def _value(args: Any, name: str, n: int) -> list | None:
    """mean / stddev as float64 arrays: one per sample, or one for all (None: not given)."""
    if args.is_per_sample(name):
        return [np.asarray(v, np.float64) for v in args.columns[name]]
    value = args[name]
    return None if value is None else [np.asarray(value, np.float64)]


def _batched(values: list, ndim: int) -> np.ndarray | None:
    """Stack per-sample values with a leading batch axis, aligned to ``ndim`` sample dims.

    None when their shapes differ (then each sample goes alone).
    """
    if len({v.shape for v in values}) != 1:
        return None
    stacked = np.stack(values)
    extra = ndim - (stacked.ndim - 1)
    if extra < 0:
        raise ValueError(f"mean/stddev of shape {values[0].shape} has more than {ndim} dims")
    return stacked.reshape(stacked.shape[:1] + (1,) * extra + stacked.shape[1:])


def _scalars(args: Any, name: str, ndim: int) -> Any:
    """A per-sample scalar argument as an (N, 1, ..., 1) array, or its constant."""
    if args.is_per_sample(name):
        return np.asarray(args.column(name), np.float64).reshape(-1, *(1,) * ndim)
    return float(args[name])


def normalize(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.normalize on the GPU: batched reductions, one gain/bias kernel, one elementwise pass."""
    cp = require_gpu("GPU operators", device_id=ctx.device_id)
    (batch,) = inputs
    dtype = np.dtype(args["dtype"])
    n = len(batch)
    storage = batch_storage(batch)
    if n == 0:
        return gpu_batch(storage, batch.layout(), ctx)
    shapes = [tuple(s) for s in batch.shape()]
    ndim = len(shapes[0])
    if any(len(s) != ndim for s in shapes):
        raise ValueError("all samples of a batch must have the same number of dimensions")
    axes = reduction_axes(ndim, ctx.state)
    mean, std = _value(args, "mean", n), _value(args, "stddev", n)
    with ctx.stream:
        dense = isinstance(storage, cp.ndarray)
        uniform = all(len({v.shape for v in value}) == 1 for value in (mean, std) if value)
        if dense and not uniform:  # per-sample mean/stddev shapes differ: sample by sample
            storage, dense = list(storage), False
        for name, value in (("mean", mean), ("stddev", std)):
            for v in value or ():
                check_broadcast(name, v.shape, [storage[0]] if dense else storage, axes)
        groups = [storage] if dense else [x[None] for x in storage]
        per_group = {
            "mean": _split(mean, ndim, dense, n),
            "std": _split(std, ndim, dense, n),
        }
        if args["batch"]:
            m_dev, var_dev = _batch_statistics(cp, groups, axes, args["ddof"], mean, std, ndim)
            stats = [(m_dev, var_dev)] * len(groups)
        else:
            stats = [
                _statistics(cp, g, axes, args["ddof"], m, s)
                for g, m, s in zip(groups, per_group["mean"], per_group["std"])
            ]
        scale, eps, shift = (_scalars(args, k, ndim) for k in ("scale", "epsilon", "shift"))
        out = _apply(cp, storage, groups, stats, (scale, eps, shift), dtype, dense, ctx)
    return gpu_batch(out, batch.layout(), ctx)


def _split(values: list | None, ndim: int, dense: bool, n: int) -> list:
    """Per group (the dense batch, or each sample): the host value with a batch axis."""
    if values is None:
        return [None] * (1 if dense else n)
    if len(values) == 1:  # a constant
        return [_batched(values, ndim)] * (1 if dense else n)
    if dense:
        return [_batched(values, ndim)]
    return [_batched([v], ndim) for v in values]


def _statistics(
    cp: Any, x: Any, axes: tuple, ddof: int, mean: Any, std: Any, batch_axis: bool = False
) -> tuple[Any, Any]:
    """(mean, variance) of a group (N, ...) over ``axes`` of each sample (keepdims)."""
    total, squares = _reductions(cp.cuda.Device().id)
    red = ((0,) if batch_axis else ()) + tuple(a + 1 for a in axes)
    count = int(np.prod([x.shape[a] for a in red], dtype=np.int64))
    if mean is not None and std is not None:
        return cp.asarray(mean), cp.asarray(np.square(std))
    m = cp.asarray(mean) if mean is not None else total(x, axis=red, keepdims=True) / count
    if std is not None:
        return m, cp.asarray(np.square(std))
    var = squares(x, m, axis=red, keepdims=True) / max(count - ddof, 1)
    return m, var


def _batch_statistics(
    cp: Any, groups: list, axes: tuple, ddof: int, mean: Any, std: Any, ndim: int
) -> tuple[Any, Any]:
    """(mean, variance) over ``axes`` of every sample together (batch=True)."""
    m_host = None if mean is None else _batched(mean, ndim)
    s_host = None if std is None else _batched(std, ndim)
    if len(groups) == 1:
        return _statistics(cp, groups[0], axes, ddof, m_host, s_host, batch_axis=True)
    kept = {tuple(n for i, n in enumerate(g.shape[1:]) if i not in axes) for g in groups}
    if (mean is None or std is None) and len(kept) > 1:
        raise ValueError(
            f"batch statistics need equal extents on the non-reduced axes, got {sorted(kept)}"
        )
    if m_host is not None and s_host is not None:
        return cp.asarray(m_host), cp.asarray(np.square(s_host))
    total, squares = _reductions(cp.cuda.Device().id)
    red = tuple(a + 1 for a in axes)
    count = sum(int(np.prod([g.shape[a] for a in red], dtype=np.int64)) for g in groups)
    if m_host is not None:
        m = cp.asarray(m_host)
    else:  # ragged: one reduction per sample, merged
        m = sum(total(g, axis=red, keepdims=True) for g in groups) / max(count, 1)
    if s_host is not None:
        return m, cp.asarray(np.square(s_host))
    sq = sum(squares(g, m, axis=red, keepdims=True) for g in groups)
    return m, sq / max(count - ddof, 1)


def _last_axis_only(shape: tuple, sample_shape: tuple) -> int | None:
    """Channels of the affine kernel when a gain of ``shape`` (batch axis first) varies
    along the sample's last axis only (1 = not at all), else None."""
    dims = shape[1:]
    if any(d != 1 for d in dims[:-1]):
        return None
    last = dims[-1] if dims else 1
    if last == 1:
        return 1
    return last if last <= 4 and last == sample_shape[-1] else None


def _apply(
    cp: Any,
    storage: Any,
    groups: list,
    stats: list,
    scalars: tuple,
    dtype: np.dtype,
    dense: bool,
    ctx: Any,
) -> Any:
    """out = x * gain + bias per group; one affine launch where the gains allow it."""
    gain_bias = _gain_bias_kernel(cp.cuda.Device().id)
    n = len(storage)
    parts = []
    for i, (g, (m, var)) in enumerate(zip(groups, stats)):
        own = tuple(v if not isinstance(v, np.ndarray) or dense else v[i : i + 1] for v in scalars)
        own = tuple(cp.asarray(v) if isinstance(v, np.ndarray) else v for v in own)
        gain, bias = gain_bias(m, var, *own)
        if np.broadcast_shapes(g.shape, gain.shape) != g.shape:
            raise ValueError(
                f"mean/stddev of shape {gain.shape[1:]} do not broadcast to {g.shape[1:]}"
            )
        parts.append((gain, bias))
    channels = {_last_axis_only(gb[0].shape, g.shape[1:]) for gb, g in zip(parts, groups)}
    kinds = color_kernels.KERNEL_DTYPES
    if len(channels) == 1 and None not in channels and dtype in kinds and groups[0].dtype in kinds:
        c = channels.pop()
        params = cp.empty((n, 2, 4), cp.float64)
        if dense:
            gain, bias = parts[0]
            params[:, 0, :c] = gain.reshape(-1, c)
            params[:, 1, :c] = bias.reshape(-1, c)
        else:
            params[:, 0, :c] = cp.concatenate([gb[0].reshape(-1, c) for gb in parts])
            params[:, 1, :c] = cp.concatenate([gb[1].reshape(-1, c) for gb in parts])
        return color_kernels.affine_batch(
            storage, params.reshape(n, 8), c, dtype, stream=ctx.stream
        )
    outs = []
    for g, (gain, bias) in zip(groups, parts):
        kernel = _apply_kernel(g.dtype == np.float64, dtype, cp.cuda.Device().id)
        outs.append(kernel(g, gain, bias, cp.empty(g.shape, dtype)))
    return outs[0] if dense else [o[0] for o in outs]
