"""The GPU random kernels' model of a sample's stream, checked against NumPy without a GPU.

kernels/philox_random.cu draws element i of a uniform / coin-flip / salt-and-pepper sample
from word i of the sample's Philox stream (block i // 4, counter moved on by i // 4 + 1),
computes ``low + (high - low) * (word >> 11) * 2**-53`` without fused multiply-add, and
draws ``integers(0, n)`` from the stream's 32-bit halves in order. Here the same words
(chute.runtime.philox.stream_words) and arithmetic in NumPy must give what the CPU
backends' generators give, bit for bit; and the kernel's table is laid out as the C
struct it mirrors.
"""

from __future__ import annotations

import numpy as np
import pytest

from chute.gpu.random_kernels import DTYPE_CODES, RAND_SAMPLE
from chute.runtime.context import sample_generator
from chute.runtime.philox import SampleStream, sample_counters, stream_words

SEED, NODE, EPOCH, ITERATION = 17, 4, 2, 9
METAS = [None, None, {"sample_key": (1234, 3)}]  # position-keyed and reader-keyed samples


def _words(n: int) -> np.ndarray:
    key, ctr = sample_counters(SEED, NODE, EPOCH, ITERATION, METAS)
    return stream_words(key, ctr, -(-n // 4))[:, :n]


def _doubles(words: np.ndarray) -> np.ndarray:
    return (words >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def _generators():
    return [sample_generator(SEED, NODE, EPOCH, ITERATION, i, m) for i, m in enumerate(METAS)]


def test_uniform_and_coin_flip_are_word_per_element():
    n, lo, hi = 37, -2.5, 7.25
    d = _doubles(_words(n))
    model = lo + (hi - lo) * d  # NumPy float64 ops: one rounding each, no FMA
    for i, rng in enumerate(_generators()):
        drawn = rng.uniform(lo, hi, n)
        np.testing.assert_array_equal(model[i], drawn)
        np.testing.assert_array_equal(model[i].astype(np.float32), drawn.astype(np.float32))
    for i, rng in enumerate(_generators()):
        np.testing.assert_array_equal(d[i] < 0.3, rng.random(n) < 0.3)


@pytest.mark.parametrize("count", [1, 2, 3, 7, 1000])
def test_bounded_integers_are_sequential_halves(count):
    key, ctr = sample_counters(SEED, NODE, EPOCH, ITERATION, METAS)
    for i, rng in enumerate(_generators()):
        stream = SampleStream(tuple(int(k) for k in key[i]), tuple(int(c) for c in ctr[i]))
        model = [stream.integers(0, count) for _ in range(50)]
        np.testing.assert_array_equal(model, rng.integers(0, count, 50))


def test_table_mirrors_the_c_struct_and_dtype_codes():
    assert RAND_SAMPLE.itemsize == 120
    offsets = {name: RAND_SAMPLE.fields[name][1] for name in RAND_SAMPLE.names}
    assert offsets == {
        "key": 0,
        "ctr": 16,
        "in_ptr": 48,
        "out_ptr": 56,
        "n": 64,
        "inner": 72,
        "a": 80,
        "b": 88,
        "c": 96,
        "salt": 104,
        "pepper": 112,
    }
    # the order of the K_* enum in philox_random.cu
    assert [str(d) for d in DTYPE_CODES] == [
        "bool",
        "int8",
        "uint8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "uint64",
        "float16",
        "float32",
        "float64",
    ]


@pytest.mark.parametrize("index", [5, 2**63 + 9, -3])  # -3: wrapped to 64 bits, as sample_key does
def test_a_batch_keyed_by_its_reader_gets_each_samples_own_counter(index):
    from chute.runtime.context import sample_key

    metas = [{"sample_key": (index, EPOCH)}, {"sample_key": (77, EPOCH | (2 << 32))}]  # a filler
    key, ctr = sample_counters(SEED, NODE, EPOCH, ITERATION, metas)
    for i, meta in enumerate(metas):
        k, c = sample_key(SEED, NODE, EPOCH, ITERATION, i, meta)
        assert key[i].tolist() == [int(x) for x in k] and ctr[i].tolist() == [int(x) for x in c]
