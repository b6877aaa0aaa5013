"""GPU backends of fn.noise.gaussian, salt_and_pepper and shot: one launch per batch.

Every sample draws from its own Philox stream, keyed as its CPU generator is
(chute.gpu.random_kernels): salt-and-pepper masks are bit-equal to the CPU backend's;
Gaussian and shot noise follow the same distributions with GPU algorithms. Outputs have
the inputs' shapes and type (integers rounded and saturated), as views into one buffer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.gpu.batches import gpu_batch
from chute.gpu.random_kernels import dtype_code, launch_elements, sample_table
from chute.gpu.runtime import require_gpu

__all__ = ["gaussian", "salt_and_pepper", "shot"]


def _noise(op: str, kernel: str, per_thread: int, inputs: list, ctx: Any, fill: Any) -> Any:
    """Outputs shaped as the input samples; ``fill(table, samples, dtype)`` sets parameters."""
    cp = require_gpu(op, device_id=ctx.device_id)
    (batch,) = inputs
    with cp.cuda.Device(ctx.device_id), ctx.stream:
        raw = batch.samples() if hasattr(batch, "samples") else list(batch)
        samples = [cp.ascontiguousarray(cp.asarray(x)) for x in raw]
        dtype = np.dtype(samples[0].dtype) if samples else np.dtype(np.float32)
        code = dtype_code(op, dtype)
        counts = [int(x.size) for x in samples]
        buf = cp.empty(max(sum(counts), 1), dtype)
        table = sample_table(ctx, counts)
        if len(table):
            starts = np.concatenate([[0], np.cumsum(counts[:-1])]).astype(np.uint64)
            table["out_ptr"] = buf.data.ptr + starts * np.uint64(dtype.itemsize)
            table["in_ptr"] = [x.data.ptr for x in samples]
            fill(table, samples, dtype)
        launch_elements(kernel, table, code, per_thread, ctx)
        outputs, start = [], 0
        for x, count in zip(samples, counts):
            outputs.append(buf[start : start + count].reshape(x.shape))
            start += count
    layout = batch.layout() if hasattr(batch, "layout") else ""
    return gpu_batch(outputs, layout, ctx)


def gaussian(inputs: list, args: Any, ctx: Any) -> Any:
    """fn.noise.gaussian on the GPU: x + N(mean, stddev), in the CPU backend's arithmetic."""
    op = "fn.noise.gaussian"

    def fill(table: np.ndarray, samples: list, dtype: np.dtype) -> None:
        for i, (mean, std) in enumerate(zip(args.column("mean"), args.column("stddev"))):
            if std < 0:
                raise ValueError(f"{op}: argument 'stddev' must be >= 0, got {std} (sample {i})")
            table["a"][i], table["b"][i] = mean, std

    return _noise(op, "gaussian_noise", 2, inputs, ctx, fill)


def _item_bits(value: Any, dtype: np.dtype) -> int:
    """A value's bytes in ``dtype``, as the uint64 the kernel copies them from."""
    raw = np.asarray(value, dtype).tobytes().ljust(8, b"\0")
    return int(np.frombuffer(raw, np.uint64)[0])


def salt_and_pepper(inputs: list, args: Any, ctx: Any) -> Any:
    """fn.noise.salt_and_pepper on the GPU: the CPU backend's masks, bit for bit."""
    from chute.ops.noise.noise_ops import _check_probability, _salt_pepper

    per_channel = bool(args["per_channel"])

    def fill(table: np.ndarray, samples: list, dtype: np.dtype) -> None:
        columns = zip(
            args.column("prob"),
            args.column("salt_vs_pepper"),
            args.column("salt_val"),
            args.column("pepper_val"),
        )
        for i, (prob, ratio, salt_val, pepper_val) in enumerate(columns):
            prob = _check_probability("prob", prob)
            ratio = _check_probability("salt_vs_pepper", ratio)
            salt, pepper = _salt_pepper(dtype, salt_val, pepper_val)
            x = samples[i]
            # one draw per pixel (channels last), as the CPU backend; no layout: channels last
            table["inner"][i] = 1 if per_channel or x.ndim == 0 else x.shape[-1]
            table["a"][i], table["b"][i] = prob, prob * ratio
            table["salt"][i] = _item_bits(salt, dtype)
            table["pepper"][i] = _item_bits(pepper, dtype)

    return _noise("fn.noise.salt_and_pepper", "salt_and_pepper", 4, inputs, ctx, fill)


def shot(inputs: list, args: Any, ctx: Any) -> Any:
    """fn.noise.shot on the GPU: poisson(x / factor) * factor; factor 0 copies the sample."""
    op = "fn.noise.shot"

    def fill(table: np.ndarray, samples: list, dtype: np.dtype) -> None:
        for i, factor in enumerate(args.column("factor")):
            if factor < 0:
                raise ValueError(f"{op}: argument 'factor' must be >= 0, got {factor} (sample {i})")
            table["a"][i] = factor

    return _noise(op, "shot_noise", 1, inputs, ctx, fill)
