"""fn.decoders.inflate (fn.experimental.inflate): LZ4 blocks inflated on the CPU, chunked samples,
DALI's zero padding, argument and data errors; the GPU backend's chunk table without a GPU."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from misc_helpers import run

from chute import OperatorError, fn
from chute.ops.decoders.inflate_gpu import chunk_plan
from chute.ops.decoders.inflate_ops import chunk_table

lz4_block = pytest.importorskip("lz4.block")


def lz4(data: np.ndarray) -> np.ndarray:
    return np.frombuffer(lz4_block.compress(data.tobytes(), store_size=False), np.uint8)


FRAMES = [np.arange(k, k + 24, dtype=np.int16).reshape(2, 3, 4) for k in (0, 100, 7)]


def test_single_chunk_samples_with_shape_dtype_and_layout():
    data = [np.full((4, 6), 3, np.float32), np.arange(24, dtype=np.float32).reshape(4, 6)]
    (out,) = run(
        lambda x: fn.decoders.inflate(x, shape=[4, 6], dtype=np.float32, layout="HW"),
        [lz4(d) for d in data],
    )
    assert out.layout() == "HW" and out.dtype == np.float32
    for i, d in enumerate(data):
        np.testing.assert_array_equal(out.at(i), d)


def test_chunked_samples_by_sizes_offsets_or_both():
    chunks = [lz4(f) for f in FRAMES]
    packed = np.concatenate(chunks)
    sizes = np.array([len(c) for c in chunks], np.int32)
    offsets = np.concatenate([[0], np.cumsum(sizes[:-1])]).astype(np.int32)
    gap = np.concatenate([chunks[0], np.zeros(5, np.uint8), chunks[1]])  # bytes between chunks
    gap_offsets = np.array([0, len(chunks[0]) + 5], np.int32)
    gap_sizes = sizes[:2]

    def pipe(x, s, o):
        by_sizes = fn.decoders.inflate(x, shape=[2, 3, 4], dtype=np.int16, chunk_sizes=s)
        by_offsets = fn.decoders.inflate(
            x,
            shape=[2, 3, 4],
            dtype=np.int16,
            chunk_offsets=o,
            layout="DHW",
            sequence_axis_name="S",
        )
        return by_sizes, by_offsets

    a, b = run(pipe, [packed, packed], [sizes, sizes], [offsets, offsets])
    want = np.stack(FRAMES)
    np.testing.assert_array_equal(a.at(0), want)
    np.testing.assert_array_equal(b.at(1), want)
    assert b.layout() == "SDHW"
    (c,) = run(
        lambda x, o, s: fn.decoders.inflate(
            x, shape=[2, 3, 4], dtype=np.int16, chunk_offsets=o, chunk_sizes=s
        ),
        [gap],
        [gap_offsets],
        [gap_sizes],
    )
    np.testing.assert_array_equal(c.at(0), want[:2])


def test_short_chunk_is_zero_padded_and_legacy_name_warns():
    data = [lz4(np.arange(1, 11, dtype=np.uint8))]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (out,) = run(lambda x: fn.experimental.inflate(x, shape=[16]), data)
    np.testing.assert_array_equal(out.at(0), [*range(1, 11), 0, 0, 0, 0, 0, 0])
    assert any("experimental.inflate` is now deprecated" in str(w.message) for w in caught)


@pytest.mark.parametrize(
    "kwargs, sample, message",
    [
        ({"shape": [50]}, lz4(np.ones(100, np.uint8)), "inflates to at most 50 bytes"),
        ({"shape": [8]}, np.array([0xF0, 1, 2], np.uint8), "is not an LZ4 block"),
        ({"shape": [8], "chunk_offsets": [4, 2]}, lz4(np.ones(8, np.uint8)), "strictly increasing"),
        ({"shape": [8], "chunk_sizes": [5, 500]}, lz4(np.ones(8, np.uint8)), "'chunk_sizes' has"),
        ({"shape": [8], "chunk_offsets": [999]}, lz4(np.ones(8, np.uint8)), "outside the sample"),
        ({"shape": [8]}, np.zeros(0, np.uint8), "input sample is empty"),
    ],
    ids=["too_long", "malformed", "offsets_order", "size_range", "offset_range", "empty"],
)
def test_bad_data_or_chunks_raise_naming_the_operator(kwargs, sample, message):
    with pytest.raises(OperatorError, match=message) as info:
        run(lambda x: fn.decoders.inflate(x, **kwargs), [sample])
    assert "fn.decoders.inflate" in str(info.value)


def test_argument_errors_at_trace_time():
    data = [lz4(np.ones(8, np.uint8))]
    cases = [
        ({"shape": [8], "algorithm": "zstd"}, ValueError, "only 'LZ4'"),
        ({"shape": [8], "sequence_axis_name": "FS"}, ValueError, "one character"),
        ({"shape": [8], "layout": "HW"}, ValueError, "'layout' 'HW' has 2 dims"),
        ({"shape": [-8]}, ValueError, "non-negative extents"),
        ({}, TypeError, "argument 'shape' is required"),
    ]
    for kwargs, kind, message in cases:
        with pytest.raises(kind, match=message):
            run(lambda x, kw=kwargs: fn.decoders.inflate(x, **kw), data)


def test_empty_chunk_list_gives_zero_frames():
    (out,) = run(
        lambda x, s: fn.decoders.inflate(x, shape=[3], chunk_sizes=s),
        [lz4(np.ones(3, np.uint8))],
        [np.zeros(0, np.int32)],
    )
    assert out.at(0).shape == (0, 3)


def test_chunk_rules_and_gpu_plan():
    assert chunk_table(10, None, None) is None
    assert chunk_table(10, [0, 4], None) == ([0, 4], [4, 6])
    assert chunk_table(10, None, [3, 5]) == ([0, 3], [3, 5])
    plan, out_offsets, shapes, total = chunk_plan(
        [10, 7], [(2, 2), (3,)], [([0, 4], [4, 6]), None], itemsize=4
    )
    # per chunk: sample, offset in it, length, output offset, capacity (bytes)
    np.testing.assert_array_equal(plan, [[0, 0, 4, 0, 16], [0, 4, 6, 16, 16], [1, 0, 7, 32, 12]])
    assert out_offsets.tolist() == [0, 32] and shapes == [(2, 2, 2), (3,)] and total == 44


LZ4_SHIMS = """
struct Dim3 { unsigned x = 1, y = 1, z = 1; };
static Dim3 blockIdx, threadIdx, blockDim;
#define __device__
#define __global__
#include "KERNEL"
extern "C" void run(const unsigned long long *in_ptr, const long long *in_len,
                    const unsigned long long *out_ptr, const long long *out_cap, int *status,
                    int n) {
  blockDim.x = 1;
  threadIdx.x = 0;
  for (int i = 0; i < n; ++i) { blockIdx.x = i; lz4_inflate(in_ptr, in_len, out_ptr, out_cap, status, n); }
}
"""


def test_gpu_kernel_source_inflates_what_lz4_does(tmp_path):
    """kernels/lz4_inflate.cu compiled as host C++ (g++): the GPU backend's decoder without a GPU."""
    import ctypes
    import pathlib
    import shutil
    import subprocess

    if shutil.which("g++") is None:
        pytest.skip("needs g++ to compile the kernel source for the host")
    kernel = pathlib.Path(__file__).resolve().parents[3] / "core/src/chute/kernels/lz4_inflate.cu"
    (tmp_path / "h.cpp").write_text(LZ4_SHIMS.replace("KERNEL", str(kernel)))
    so = tmp_path / "liblz4k.so"
    subprocess.run(
        ["g++", "-O1", "-std=c++14", "-shared", "-fPIC", str(tmp_path / "h.cpp"), "-o", str(so)],
        check=True,
        capture_output=True,
    )
    lib = ctypes.CDLL(str(so))
    rng = np.random.default_rng(5)
    raws, chunks = [], []
    for k in range(40):
        n = int(rng.integers(1, 3000))
        raw = np.repeat(rng.integers(0, int(rng.integers(1, 256)), n // 5 + 1, dtype=np.uint8), 5)[
            :n
        ]
        raw[:: int(rng.integers(2, 40))] = 7
        raws.append(raw)
        chunks.append(lz4(raw))
    chunks.append(np.array([0x1F, 7, 9, 0], np.uint8))  # a match before any output: malformed
    caps = [r.size + 3 for r in raws] + [16]
    caps[0] = raws[0].size - 1  # one byte short: too long for its capacity
    outs = [np.full(c, 0xAA, np.uint8) for c in caps]
    n = len(chunks)
    in_ptr = np.array([c.ctypes.data for c in chunks], np.uint64)
    in_len = np.array([c.size for c in chunks], np.int64)
    out_ptr = np.array([o.ctypes.data for o in outs], np.uint64)
    out_cap = np.array(caps, np.int64)
    status = np.full(n, -1, np.int32)
    lib.run(
        *(ctypes.c_void_p(a.ctypes.data) for a in (in_ptr, in_len, out_ptr, out_cap, status)), n
    )
    assert status[0] == 2 and status[-1] == 1 and (status[1:-1] == 0).all()
    for raw, out in zip(raws[1:], outs[1:-1]):
        np.testing.assert_array_equal(out[: raw.size], raw)
        assert (out[raw.size :] == 0).all()  # the tail is zero-filled
