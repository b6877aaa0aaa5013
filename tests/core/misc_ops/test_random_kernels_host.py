"""kernels/philox_random.cu compiled as host C++ (g++, with shims for the CUDA names it
uses) and run block by block: its uniform, coin-flip, values and salt-and-pepper kernels
give the CPU backends' numbers bit for bit, and its normal and Poisson draws follow their
distributions (KS / moment checks at ALPHA = 0.001). Checks the kernel source without a
GPU; the GPU runs themselves are test_random_gpu.py (marked gpu)."""

from __future__ import annotations

import ctypes
import pathlib
import shutil
import subprocess

import numpy as np
import pytest
from scipy import stats

from chute.gpu.random_kernels import DTYPE_CODES, RAND_SAMPLE
from chute.ops.tensor_ops import convert
from chute.runtime.context import sample_generator
from chute.runtime.philox import sample_counters

KERNEL = pathlib.Path(__file__).resolve().parents[3] / "core/src/chute/kernels/philox_random.cu"
ALPHA = 1e-3
SEED, NODE, EPOCH, ITERATION = 12, 3, 1, 5
METAS = [None, None, {"sample_key": (77, 2)}]

SHIMS = """
#include <cmath>
#include <cstdint>
struct Dim3 { unsigned x = 1, y = 1, z = 1; };
static Dim3 blockIdx, threadIdx, gridDim, blockDim;
#define __device__
#define __forceinline__ inline
#define __global__
static inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) {
  return (unsigned long long)(((unsigned __int128)a * b) >> 64);
}
static inline double __dadd_rn(double a, double b) { volatile double r = a + b; return r; }
static inline double __dmul_rn(double a, double b) { volatile double r = a * b; return r; }
static inline float __fadd_rn(float a, float b) { volatile float r = a + b; return r; }
static inline float __double2float_rn(double v) { return (float)v; }
static inline double cospi(double x) { return std::cos(M_PI * x); }
#include "KERNEL"
typedef void (*elem_kernel)(const RandSample *, int);
extern "C" void run_elements(int which, const RandSample *s, int n, int code) {
  elem_kernel k = which == 0 ? uniform_range : which == 1 ? coin_flip : which == 2 ? normal
                : which == 3 ? salt_and_pepper : shot_noise;
  gridDim.x = 3; gridDim.y = n; blockDim.x = 32;
  for (unsigned y = 0; y < (unsigned)n; ++y)
    for (unsigned x = 0; x < gridDim.x; ++x)
      for (unsigned t = 0; t < blockDim.x; ++t) {
        blockIdx.x = x; blockIdx.y = y; threadIdx.x = t;
        k(s, code);
      }
}
extern "C" void run_values(const RandSample *s, int n, int code) {
  gridDim.x = 1; blockDim.x = n; blockIdx.x = 0;
  for (int t = 0; t < n; ++t) { threadIdx.x = t; uniform_values(s, n, code); }
}
"""
FP16 = """#pragma once
#include <cstdint>
struct __half { uint16_t bits; };
static inline __half __double2half(double) { return __half{0}; }
static inline float __half2float(__half) { return 0.0f; }
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    compiler = shutil.which("g++")
    if compiler is None:
        pytest.skip("needs g++ to compile the kernel source for the host")
    tmp = tmp_path_factory.mktemp("hostcuda")
    (tmp / "cuda_fp16.h").write_text(FP16)
    (tmp / "harness.cpp").write_text(SHIMS.replace("KERNEL", str(KERNEL)))
    so = tmp / "libkernels.so"
    cmd = [compiler, "-O1", "-std=c++14", "-shared", "-fPIC", f"-I{tmp}", str(tmp / "harness.cpp")]
    subprocess.run([*cmd, "-o", str(so)], check=True, capture_output=True)
    return ctypes.CDLL(str(so))


def _table(counts: list[int]) -> np.ndarray:
    key, ctr = sample_counters(SEED, NODE, EPOCH, ITERATION, METAS[: len(counts)])
    table = np.zeros(len(counts), RAND_SAMPLE)
    table["key"], table["ctr"], table["n"] = key, ctr, counts
    return table


def _generators(n: int):
    return [sample_generator(SEED, NODE, EPOCH, ITERATION, i, METAS[i]) for i in range(n)]


def _run(lib, which: int, table: np.ndarray, outs: list[np.ndarray]) -> None:
    table["out_ptr"] = [o.ctypes.data for o in outs]
    code = DTYPE_CODES[outs[0].dtype]
    lib.run_elements(which, ctypes.c_void_p(table.ctypes.data), len(table), code)


@pytest.mark.parametrize("dtype", [np.float32, np.uint8, np.float64, np.int64])
def test_uniform_range_is_the_cpu_backend_bit_for_bit(lib, dtype):
    n, lo, hi = 57, -300.0, 299.5
    outs = [np.zeros(n, dtype) for _ in range(3)]
    table = _table([n] * 3)
    table["a"], table["b"] = lo, hi - lo
    _run(lib, 0, table, outs)
    for out, rng in zip(outs, _generators(3)):
        np.testing.assert_array_equal(out, convert(rng.uniform(lo, hi, n), np.dtype(dtype)))


def test_coin_flip_and_values_are_the_cpu_backend_bit_for_bit(lib):
    n, probs = 57, [0.1, 0.5, 0.93]
    outs = [np.zeros(n, np.int32) for _ in range(3)]
    table = _table([n] * 3)
    table["a"] = probs
    _run(lib, 1, table, outs)
    for out, rng, p in zip(outs, _generators(3), probs):
        np.testing.assert_array_equal(out, rng.random(n) < p)
    for k in (1, 2, 3, 7):
        values = np.arange(k, dtype=np.float64) * 10 + 5
        outs = [np.zeros(n, np.int16) for _ in range(3)]
        table = _table([n] * 3)
        table["in_ptr"], table["inner"] = values.ctypes.data, k
        table["out_ptr"] = [o.ctypes.data for o in outs]
        lib.run_values(ctypes.c_void_p(table.ctypes.data), 3, DTYPE_CODES[np.dtype(np.int16)])
        for out, rng in zip(outs, _generators(3)):
            np.testing.assert_array_equal(out, values[rng.integers(0, k, n)])


def test_salt_and_pepper_is_the_cpu_backend_bit_for_bit(lib):
    x = np.full((9, 7, 3), 128, np.uint8)
    outs = [np.zeros_like(x) for _ in range(3)]
    table = _table([x.size] * 3)
    table["in_ptr"], table["inner"], table["a"], table["b"] = x.ctypes.data, 3, 0.3, 0.3 * 0.25
    table["salt"], table["pepper"] = 255, 0
    _run(lib, 3, table, outs)
    for out, rng in zip(outs, _generators(3)):
        u = rng.random(size=(9, 7))[..., None]
        np.testing.assert_array_equal(out, np.where(u < 0.3, np.where(u < 0.075, 255, 0), x))


def test_normal_and_poisson_follow_their_distributions(lib):
    m = 20000
    outs = [np.zeros(m, np.float64) for _ in range(2)]
    table = _table([m] * 2)
    table["a"], table["b"] = [0.0, 5.0], [1.0, 2.0]
    _run(lib, 2, table, outs)
    assert stats.kstest(outs[0], stats.norm(0, 1).cdf).pvalue > ALPHA
    assert stats.kstest(outs[1], stats.norm(5, 2).cdf).pvalue > ALPHA
    for lam, factor in ((30.0, 2.0), (6.0, 1.0), (3000.0, 0.01), (0.5, 1.0)):  # PTRS, inversion
        x = np.full(m, lam * factor, np.float32)
        out = np.zeros_like(x)
        table = _table([m])
        table["in_ptr"], table["a"] = x.ctypes.data, factor
        _run(lib, 4, table, [out])
        events = out.astype(np.float64) / factor
        assert np.abs(events - np.round(events)).max() < 1e-3
        assert abs(events.mean() - lam) < 4 * np.sqrt(lam / m)
        assert abs(events.var() - lam) < 0.1 * lam
