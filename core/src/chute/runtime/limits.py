"""The per-sample output-size limit: operators check a size before they allocate it.

An argument such as ``resize(size=(100000, 100000))`` or ``pad(shape=[2e9])`` would
otherwise fail only when the allocation fails (or, when it fits, take the memory). An
operator that computes an output shape from its arguments calls :func:`check_output`
first; the error names the argument and the size, and the executor adds the operator
and the sample (OperatorError), or skips the sample under ``on_error="skip"``.

The limit is process-wide: ``CHUTE_MAX_SAMPLE_BYTES`` in the environment, or
:func:`set_max_sample_bytes` (``None`` restores the default, 0 turns the check off).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["DEFAULT_MAX_SAMPLE_BYTES", "check_output", "max_sample_bytes", "set_max_sample_bytes"]

# 4 GiB: a 32k x 32k RGBA float image is 16 GiB, an 8k x 8k RGB uint8 one 192 MiB.
DEFAULT_MAX_SAMPLE_BYTES = 4 << 30

_override: int | None = None


def max_sample_bytes() -> int:
    """The limit in force, in bytes (0: no limit)."""
    if _override is not None:
        return _override
    env = os.environ.get("CHUTE_MAX_SAMPLE_BYTES")
    if env:
        try:
            return max(0, int(float(env)))
        except ValueError:
            raise ValueError(
                f"CHUTE_MAX_SAMPLE_BYTES must be a number of bytes, got {env!r}"
            ) from None
    return DEFAULT_MAX_SAMPLE_BYTES


def set_max_sample_bytes(limit: int | None) -> None:
    """Set the per-sample output limit in bytes (None: the default or the environment's)."""
    global _override
    if limit is not None and (not isinstance(limit, int) or limit < 0):
        raise ValueError(f"max_sample_bytes must be a non-negative integer, got {limit!r}")
    _override = limit


def check_output(shape: Sequence[Any], dtype: Any, argument: str) -> None:
    """Refuse an output of ``shape`` and ``dtype`` over the limit, or not finite, naming
    ``argument`` (the argument(s) that gave the size)."""
    extents = [float(v) for v in shape]
    if not all(math.isfinite(v) for v in extents):
        raise ValueError(f"argument {argument!r} gives a size that is not finite: {extents}")
    limit = max_sample_bytes()
    if not limit:
        return
    nbytes = math.prod(max(0, int(v)) for v in extents) * np.dtype(dtype).itemsize
    if nbytes > limit:
        dims = " x ".join(str(int(v)) for v in extents)
        raise ValueError(
            f"argument {argument!r} asks for an output of {dims} {np.dtype(dtype).name} "
            f"({nbytes / 2**30:.1f} GiB), over the per-sample limit of {limit / 2**30:.1f} GiB "
            f"(chute.runtime.limits.set_max_sample_bytes or CHUTE_MAX_SAMPLE_BYTES)"
        )
