"""GPU backends of the audio feature operators: the batch math of :mod:`.batched` on CuPy.

Each function is an operator's ``run_gpu``: it gets the whole batch as a
TensorListGPU and runs on the pipeline's stream (the executor makes it
current), so a batch costs a fixed number of launches: one FFT call for all
windows of all samples, one matrix product for the mel filters or the DCT.
Filter matrices are built on the host with the CPU backend's code and kept
on the device per (device, parameters).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from chute.gpu.batches import gpu_batch
from chute.ops.audio import batched, dsp

_constants: dict[tuple, Any] = {}
_constants_lock = threading.Lock()


def _cupy(ctx: Any) -> Any:
    from chute.gpu.runtime import require_gpu

    return require_gpu("GPU audio operators", device_id=ctx.device_id)


def _device_constant(cp: Any, ctx: Any, key: tuple, make: Any) -> Any:
    """A read-only device copy of ``make()``, built once per device and key."""
    full = (ctx.device_id, *key)
    with _constants_lock:
        value = _constants.get(full)
    if value is None:
        value = cp.asarray(make())
        with _constants_lock:
            _constants.setdefault(full, value)
    return value


def _mono(x: Any, op: str) -> Any:
    if x.ndim == 2 and 1 in x.shape:
        return x.reshape(-1)
    if x.ndim != 1:
        raise ValueError(
            f"{op} expects one channel: shape (n,), (n, 1) or (1, n), got {tuple(x.shape)}"
        )
    return x


def _to_float(cp: Any, x: Any) -> Any:
    if x.dtype.kind in "iu":  # integer PCM: full scale maps to [-1, 1), as on the CPU
        return x.astype(cp.float32) / cp.float32(-float(np.iinfo(x.dtype).min))
    return x.astype(cp.float32, copy=False)


def _convert(cp: Any, x: Any, dtype: np.dtype) -> Any:
    """``x`` as ``dtype``, rounding to nearest and saturating for integers (as tensor_ops.convert)."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu" and x.dtype.kind == "f":
        info = np.iinfo(dtype)
        return cp.clip(cp.rint(x), info.min, info.max).astype(dtype)
    return x.astype(dtype, copy=False)


def preemphasis_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.preemphasis_filter on the GPU: all samples in one padded-free pass (concatenated)."""
    cp = _cupy(ctx)
    (batch,) = inputs
    coeffs = [float(c) for c in args.column("preemph_coeff")]
    out = batched.preemphasis(cp, batch.samples(), coeffs, args["border"])
    dtype = np.dtype(args["dtype"])
    if isinstance(out, cp.ndarray):
        out = _convert(cp, out, dtype)
    else:
        out = [_convert(cp, x, dtype) for x in out]
    return gpu_batch(out, batch.layout(), ctx)


def spectrogram_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.spectrogram on the GPU: every window of every sample in one cuFFT call."""
    cp = _cupy(ctx)
    (batch,) = inputs
    length = args["window_length"]
    nffts = [length if n is None else int(n) for n in args.column("nfft")]
    for n in nffts:
        if n < length:
            raise ValueError(f"nfft ({n}) must be >= window_length ({length})")
    window_fn = args["window_fn"]
    window = dsp.hann_window(length) if window_fn is None else np.asarray(window_fn, np.float32)
    signals = [_mono(x, "spectrogram") for x in batch.samples()]
    out = batched.spectrogram(
        cp,
        signals,
        nffts,
        length,
        args["window_step"],
        window,
        args["power"],
        args["center_windows"],
        args["reflect_padding"],
        args["layout"],
    )
    return gpu_batch(out, args["layout"], ctx)


def mel_filter_bank_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.mel_filter_bank on the GPU: one matrix product for the whole batch."""
    from chute.ops.audio.features_ops import _axis_from_layout, _mel_matrix

    cp = _cupy(ctx)
    (batch,) = inputs
    samples = batch.samples()
    if not samples:
        return gpu_batch([], batch.layout(), ctx)
    ndim = samples[0].ndim
    axis = ctx.state if ctx.state is not None else _axis_from_layout(None, ndim, "f")
    bins = {int(x.shape[axis]) for x in samples}
    if len(bins) > 1:
        raise ValueError(f"samples have different numbers of frequency bins: {sorted(bins)}")
    key = (
        bins.pop(),
        args["nfilter"],
        args["sample_rate"],
        args["freq_low"],
        args["freq_high"],
        args["normalize"],
        args["mel_formula"],
    )
    matrix = _device_constant(cp, ctx, ("mel", *key), lambda: _mel_matrix(*key))
    out = batched.matrix_along(cp, matrix, samples, axis)
    return gpu_batch(out, batch.layout(), ctx)


def to_decibels_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.to_decibels on the GPU: per-sample reference maxima, then one elementwise pass."""
    cp = _cupy(ctx)
    (batch,) = inputs
    reference = 0.0 if args["ref_max"] else args["reference"]
    out = batched.to_decibels(cp, batch.samples(), args["multiplier"], reference, args["cutoff_db"])
    return gpu_batch(out, batch.layout(), ctx)


def mfcc_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> Any:
    """fn.mfcc on the GPU: the DCT (with lifter) as one matrix product for the whole batch."""
    cp = _cupy(ctx)
    (batch,) = inputs
    samples = batch.samples()
    if not samples:
        return gpu_batch([], batch.layout(), ctx)
    ndim = samples[0].ndim
    axis = args["axis"]
    if not -ndim <= axis < ndim:
        raise ValueError(f"axis {axis} is out of range for a {ndim}-D input")
    axis %= ndim
    sizes = {int(x.shape[axis]) for x in samples}
    if len(sizes) > 1:
        raise ValueError(f"samples have different sizes along axis {axis}: {sorted(sizes)}")
    n_in = sizes.pop()
    if not 0 < args["n_mfcc"] <= n_in:
        raise ValueError(
            f"n_mfcc must be in [1, {n_in}] (the size of axis {axis}), got {args['n_mfcc']}"
        )
    key = (n_in, args["n_mfcc"], args["dct_type"], args["lifter"], args["normalize"])
    basis = _device_constant(cp, ctx, ("dct", *key), lambda: dsp.mfcc_basis(*key))
    out = batched.matrix_along(cp, basis, samples, axis)
    return gpu_batch(out, batch.layout(), ctx)


def nonsilent_region_gpu(op: Any, inputs: list, args: Any, ctx: Any) -> tuple:
    """fn.nonsilent_region on the GPU: running sums of the padded batch; (begin, length) int32."""
    cp = _cupy(ctx)
    (batch,) = inputs
    signals = [_to_float(cp, _mono(x, "nonsilent_region")) for x in batch.samples()]
    begin, length = batched.nonsilent_regions(
        cp, signals, args["cutoff_db"], args["window_length"], args["reference_power"]
    )
    return gpu_batch(begin, "", ctx), gpu_batch(length, "", ctx)
