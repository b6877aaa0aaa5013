"""Element types for CuPy kernels written against ``in_t`` / ``out_t``: dtype codes, the
CUDA prelude that defines them, and a compile-once loader.

A kernel source prepended with :data:`PRELUDE` and compiled with ``-DIN_KIND=k -DOUT_KIND=k``
reads ``in_t`` and writes ``out_t`` through ``to_out(double)``, which rounds (halves to even,
OpenCV's ``saturate_cast``; or away from zero with ``-DROUND_AWAY=1``, DALI's ``ConvertSat``)
and saturates for integer outputs. Nothing here imports CuPy before a kernel is compiled.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from chute.gpu.runtime import require_gpu

__all__ = ["KINDS", "PRELUDE", "function", "kind"]

#: dtype -> the code the prelude knows it by.
KINDS = {
    np.dtype(np.uint8): 0,
    np.dtype(np.int8): 1,
    np.dtype(np.uint16): 2,
    np.dtype(np.int16): 3,
    np.dtype(np.int32): 4,
    np.dtype(np.float32): 5,
}

PRELUDE = r"""
#ifndef ROUND_AWAY
#define ROUND_AWAY 0
#endif
#if IN_KIND == 0
typedef unsigned char in_t;
#elif IN_KIND == 1
typedef signed char in_t;
#elif IN_KIND == 2
typedef unsigned short in_t;
#elif IN_KIND == 3
typedef short in_t;
#elif IN_KIND == 4
typedef int in_t;
#else
typedef float in_t;
#endif

#if OUT_KIND == 0
typedef unsigned char out_t;
#define OUT_LO 0.0
#define OUT_HI 255.0
#elif OUT_KIND == 1
typedef signed char out_t;
#define OUT_LO -128.0
#define OUT_HI 127.0
#elif OUT_KIND == 2
typedef unsigned short out_t;
#define OUT_LO 0.0
#define OUT_HI 65535.0
#elif OUT_KIND == 3
typedef short out_t;
#define OUT_LO -32768.0
#define OUT_HI 32767.0
#elif OUT_KIND == 4
typedef int out_t;
#define OUT_LO -2147483648.0
#define OUT_HI 2147483647.0
#else
typedef float out_t;
#endif

__device__ __forceinline__ out_t to_out(double v) {
#if OUT_KIND == 5
    return (float)v;
#else
#if ROUND_AWAY
    v = round(v);
#else
    v = rint(v);
#endif
    v = fmin(fmax(v, OUT_LO), OUT_HI);  // NaN becomes OUT_LO
    return (out_t)v;
#endif
}
"""


def kind(dtype: Any, op: str, accepted: tuple = tuple(KINDS)) -> int:
    """The code of ``dtype``, or a TypeError naming the operator and the accepted types."""
    dt = np.dtype(dtype)
    if dt not in accepted or dt not in KINDS:
        names = ", ".join(np.dtype(a).name for a in accepted)
        raise TypeError(f"{op}: on the GPU the type must be one of {names}, got {dt.name}")
    return KINDS[dt]


@functools.cache
def function(
    source: str, name: str, in_kind: int, out_kind: int, device: int, round_away: bool = False
) -> Any:
    """Kernel ``name`` of ``PRELUDE + source`` for these element types, compiled once per device."""
    cupy = require_gpu("chute's GPU kernels")
    options = (
        "-std=c++14",
        f"-DIN_KIND={in_kind}",
        f"-DOUT_KIND={out_kind}",
        f"-DROUND_AWAY={int(round_away)}",
    )
    with cupy.cuda.Device(device):
        return cupy.RawModule(code=PRELUDE + source, options=options).get_function(name)
