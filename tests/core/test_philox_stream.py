"""philox.SampleStream draws what NumPy's Generator(Philox) draws, call for call."""

from __future__ import annotations

import numpy as np
import pytest

from chute.runtime import philox
from chute.runtime.context import random_generator, sample_generator

_MAX64 = 2**64 - 1


def _pair(key, counter):
    bits = np.random.Philox(
        key=np.array(key, dtype=np.uint64), counter=np.array(counter, dtype=np.uint64)
    )
    return np.random.Generator(bits), philox.SampleStream(key, counter)


@pytest.mark.parametrize(
    "counter",
    [
        (0, 0, 0, 0),
        (5, 9, 3, 0),
        (_MAX64 - 1, 7, 2, 0),  # the low word wraps on the second block: carry
        (_MAX64, _MAX64, _MAX64, _MAX64),  # the whole counter wraps
    ],
)
def test_raw_words_equal_numpys_across_blocks(counter):
    g, s = _pair((123456789, 42), counter)
    assert [s.random_raw() for _ in range(13)] == [
        int(g.bit_generator.random_raw()) for _ in range(13)
    ]


def test_doubles_and_uniforms_are_bit_exact():
    g, s = _pair((2**63 + 5, 17), (3, 1, 8, 0))
    for low, high in [(0.0, 1.0), (0.08, 1.0), (-0.2876820724517809, 0.28768207245178085)]:
        for _ in range(20):
            assert s.uniform(low, high) == g.uniform(low, high)
    for _ in range(20):
        assert s.random() == g.random()


@pytest.mark.parametrize("high", [1, 2, 3, 7, 640, 2**31 + 11, 3 * 2**30, 2**32 - 1, 2**32])
def test_integers_equal_numpys_including_rejections(high):
    # large ranges reject often (Lemire's threshold nears 2**31), so redraws are covered
    g, s = _pair((99, 3), (11, 0, 2, 0))
    got = [s.integers(0, high) for _ in range(200)]
    assert got == [int(g.integers(0, high)) for _ in range(200)]
    assert all(0 <= v < high for v in got)


def test_mixed_draws_keep_numpys_half_word_buffer():
    # uniform() takes whole words and leaves a pending 32-bit half alone, as NumPy does
    g, s = _pair((7, 7), (1, 2, 3, 0))
    rng = np.random.default_rng(0)
    for _ in range(300):
        kind = int(rng.integers(0, 3))
        if kind == 0:
            assert s.uniform(0.5, 2.0) == g.uniform(0.5, 2.0)
        elif kind == 1:
            high = int(rng.integers(1, 1000))
            assert s.integers(0, high) == int(g.integers(0, high))
        else:
            assert s.integers(5, 6) == int(g.integers(5, 6)) == 5  # draws nothing


def test_integers_reject_what_numpy_rejects():
    s = philox.SampleStream((1, 2), (0, 0, 0, 0))
    with pytest.raises(ValueError):
        s.integers(3, 3)
    with pytest.raises(ValueError):
        s.integers(0, 2**33)


@pytest.mark.parametrize("meta", [None, {}, {"sample_key": (123456, 4)}])
def test_sample_stream_is_the_samples_generator(meta):
    s = philox.sample_stream(2**40 + 3, 9, 2, 17, 5, meta)
    g = sample_generator(2**40 + 3, 9, 2, 17, 5, meta)
    assert [s.random_raw() for _ in range(6)] == [
        int(g.bit_generator.random_raw()) for _ in range(6)
    ]
    other = random_generator(2**40 + 3, 9, 2, 17, 6)  # a neighbour's stream differs
    assert philox.sample_stream(2**40 + 3, 9, 2, 17, 5, None).random_raw() != int(
        other.bit_generator.random_raw()
    )


def test_neighbouring_samples_share_no_words():
    # the sample index once sat in the counter word the generator moves on, so sample
    # i's fifth word was sample i+1's first (noise on neighbouring images was shifted
    # copies of each other)
    draws = [random_generator(3, 11, 0, 0, i).integers(0, 2**63, 64) for i in range(4)]
    words = np.concatenate(draws)
    assert len(np.unique(words)) == words.size
    for other in (random_generator(3, 11, 0, 1, 0), random_generator(3, 11, 1, 0, 0)):
        assert not set(other.integers(0, 2**63, 64).tolist()) & set(words.tolist())
