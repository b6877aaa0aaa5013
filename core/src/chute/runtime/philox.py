"""The first draws of many samples' random streams at once, bit-exact with NumPy's Philox.

Every sample's stream is ``Generator(Philox(key, counter))`` (see context.py), and a
batch of 256 samples that each build a generator for one or two draws spends most of
its host time in that construction. Here the Philox4x64-10 rounds run over the whole
batch in NumPy, producing the same 64-bit words NumPy's generator would; the helpers
turn them into the same doubles, bounded integers and decisions as ``Generator``'s
methods. Callers fall back to the per-sample generator wherever a sample needs more
words than were drawn (``None`` in the results), so results never change.

:class:`SampleStream` is the same stream for one sample in plain Python integers, for
operators that draw a few numbers per sample on the worker threads (the random-crop
decoder): one Philox block costs ~4 us there, a NumPy generator ~7 us to build (and
several times that while other threads run: it reads OS entropy for a seed sequence it
never uses) before its first draw.
"""

from __future__ import annotations

import functools
import math
from itertools import chain
from typing import Any

import numpy as np

from chute.runtime import native
from chute.runtime.context import sample_key

__all__ = [
    "SampleStream",
    "bounded_integers",
    "coin_flips",
    "random_crop_windows",
    "sample_counters",
    "sample_stream",
    "stream_words",
    "uniform_doubles",
    "uniform_doubles_match_numpy",
]

_M0 = np.uint64(0xD2E7470EE14C6C93)
_M1 = np.uint64(0xCA5A826395121157)
_W0 = np.uint64(0x9E3779B97F4A7C15)
_W1 = np.uint64(0xBB67AE8584CAA73B)
_LO32 = np.uint64(0xFFFFFFFF)
_S32 = np.uint64(32)
_MASK64 = (1 << 64) - 1
_TOP_BIT = np.uint64(1 << 63)
_DOUBLE = 1.0 / 9007199254740992.0  # 2**-53


def _mulhilo(a: np.uint64, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """High and low 64 bits of a * b (a constant) in uint64 arithmetic."""
    a_lo, a_hi = a & _LO32, a >> _S32
    b_lo, b_hi = b & _LO32, b >> _S32
    t = a_lo * b_lo
    u = a_hi * b_lo + (t >> _S32)
    v = a_lo * b_hi + (u & _LO32)
    hi = a_hi * b_hi + (u >> _S32) + (v >> _S32)
    return hi, a * b


def _philox(ctr: np.ndarray, key: np.ndarray) -> np.ndarray:
    """Philox4x64 with 10 rounds over rows of ``ctr`` (N, 4) and ``key`` (N, 2)."""
    c0, c1, c2, c3 = (ctr[:, i].copy() for i in range(4))
    k0, k1 = key[:, 0].copy(), key[:, 1].copy()
    with np.errstate(over="ignore"):
        for r in range(10):
            if r:
                k0 += _W0
                k1 += _W1
            hi0, lo0 = _mulhilo(_M0, c0)
            hi1, lo1 = _mulhilo(_M1, c2)
            c0, c1, c2, c3 = hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0
    return np.stack([c0, c1, c2, c3], axis=1)


def sample_counters(
    seed: int, node_id: int, epoch: int, iteration: int, metas: list[Any]
) -> tuple[np.ndarray, np.ndarray]:
    """The (key, counter) of each sample's generator, as context.sample_generator keys them."""
    n = len(metas)
    key = np.empty((n, 2), np.uint64)
    key[:, 0], key[:, 1] = seed & _MASK64, node_id & _MASK64
    ctr = np.zeros((n, 4), np.uint64)
    keyed = [m.get("sample_key") if m else None for m in metas]
    if n and all(k is not None for k in keyed):
        # every sample keyed by its reader (the common case): context.sample_position's
        # rule for the whole batch at once, (1 << 63 | epoch, iteration 0, dataset index)
        try:  # (index, epoch) pairs that are uint64s already: one conversion
            pairs = np.fromiter(chain.from_iterable(keyed), np.uint64, 2 * n).reshape(n, 2)
        except (OverflowError, TypeError, ValueError):  # e.g. a negative index: wrapped
            pairs = np.array([(i & _MASK64, e & _MASK64) for i, e in keyed], np.uint64)
        ctr[:, 1] = pairs[:, 0]
        ctr[:, 3] = pairs[:, 1] | _TOP_BIT
        return key, ctr
    if not any(keyed) and not any(m and "batch_index" in m for m in metas):
        # no sample keyed: by place in the batch, (epoch, iteration, index in the batch)
        ctr[:, 1] = np.arange(n, dtype=np.uint64)
        ctr[:, 2], ctr[:, 3] = iteration & _MASK64, epoch & _MASK64
        return key, ctr
    for i, meta in enumerate(metas):
        key[i], ctr[i] = sample_key(seed, node_id, epoch, iteration, i, meta)
    return key, ctr


def stream_words(key: np.ndarray, ctr: np.ndarray, blocks: int) -> np.ndarray:
    """The first ``4 * blocks`` 64-bit words of each sample's Philox stream, (N, 4 * blocks).

    NumPy's Philox increments the counter (with carry) before each block of four.
    """
    n = len(ctr)
    if native.philox_blocks is not None:  # chute's compiled module: the same words
        out = np.empty((n, 4 * blocks), np.uint64)
        native.philox_blocks(
            np.ascontiguousarray(key, np.uint64), np.ascontiguousarray(ctr, np.uint64), blocks, out
        )
        return out
    counters = np.repeat(ctr, blocks, axis=0)
    keys = np.repeat(key, blocks, axis=0)
    step = np.tile(np.arange(1, blocks + 1, dtype=np.uint64), n)
    with np.errstate(over="ignore"):
        low = counters[:, 0] + step
        carry = low < step
        counters[:, 0] = low
        for col in (1, 2, 3):  # a carry out of the low word moves up (never in practice)
            counters[:, col] += carry.astype(np.uint64)
            carry = carry & (counters[:, col] == 0)
    return _philox(counters, keys).reshape(n, 4 * blocks)


def _doubles(words: np.ndarray) -> np.ndarray:
    """Generator.random() of each word: the top 53 bits over 2**53."""
    return (words >> np.uint64(11)).astype(np.float64) * _DOUBLE


def coin_flips(words: np.ndarray, probability: float) -> np.ndarray:
    """``rng.random() < probability`` for each sample, from its first word."""
    return _doubles(words[:, 0]) < probability


def uniform_doubles(words: np.ndarray, low: float, high: float) -> np.ndarray:
    """``Generator.uniform(low, high)`` of each word: ``low + (high - low) * random()``."""
    return low + (high - low) * _doubles(words)


@functools.lru_cache(maxsize=1)
def uniform_doubles_match_numpy() -> bool:
    """Whether :func:`uniform_doubles` rounds as NumPy's compiled ``uniform`` does here (a
    build that fuses its multiply-add would differ in the last bit): checked once."""
    key = np.array([[12345, 678]], np.uint64)
    ctr = np.array([[9, 8, 7, 0]], np.uint64)
    for low, high in ((0.0, 1.0), (-3.7, 11.3), (0.1, 1.9), (-1e6, 2.5e-3)):
        rng = np.random.Generator(np.random.Philox(key=key[0], counter=ctr[0]))
        expected = rng.uniform(low, high, size=16)
        if not np.array_equal(uniform_doubles(stream_words(key, ctr, 4)[0], low, high), expected):
            return False
    return True


def bounded_integers(
    key: np.ndarray, ctr: np.ndarray, count: int, n: int
) -> tuple[np.ndarray, list[int]]:
    """``Generator.integers(0, n, size=count)`` of each sample's stream, (N, count) int64.

    NumPy draws each from a 32-bit half of the stream's words (low half first) by
    Lemire's multiply-shift; the second list holds the samples where NumPy would reject
    a draw and take another (odds of (2**32 mod n) / 2**32 per draw), whose rows are
    left for the caller to draw with the sample's generator.
    """
    rows = len(ctr)
    if n == 1:  # one value: NumPy draws nothing
        return np.zeros((rows, count), np.int64), []
    words = stream_words(key, ctr, -(-count // 8))  # two 32-bit draws per word
    halves = np.stack([words & _LO32, words >> _S32], axis=2).reshape(rows, -1)[:, :count]
    if n == 1 << 32:
        return halves.astype(np.int64), []
    excl = np.uint64(n)
    m = halves * excl
    threshold = np.uint64(((1 << 32) - n) % n)
    rejected = ((m & _LO32) < threshold).any(axis=1)
    return (m >> _S32).astype(np.int64), np.flatnonzero(rejected).tolist()


def _bounded(word32: np.ndarray, rng: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lemire's bounded draw in [0, rng] of Generator.integers; also where it might reject."""
    excl = rng + np.uint64(1)
    m = word32 * excl
    leftover = m & _LO32
    return m >> _S32, leftover < excl  # NumPy redraws only below a threshold < excl


def random_crop_windows(
    shapes: np.ndarray,
    words: np.ndarray,
    area: tuple[float, float],
    aspect_ratio: tuple[float, float],
    num_attempts: int,
) -> list[tuple[int, int, int, int] | None]:
    """crop_window.random_crop_window for every sample, from its stream's first words.

    Returns ``(y0, x0, crop_h, crop_w)`` per sample, or None where the words drawn do
    not settle it (no attempt among the first ones fit, or the bounded draw might be
    redrawn): the caller draws those with the sample's generator. Where the words hold
    every attempt and none fits, the result is the sampler's centre crop.
    """
    from chute.runtime.crop_window import centre_crop_window

    n, k = words.shape
    attempts = min(num_attempts, (k - 1) // 2)
    heights = shapes[:, 0].astype(np.int64)
    widths = shapes[:, 1].astype(np.int64)
    result: list[tuple[int, int, int, int] | None] = [None] * n
    if attempts < 1 or n == 0:
        return result
    log_lo, log_hi = math.log(aspect_ratio[0]), math.log(aspect_ratio[1])
    d = _doubles(words[:, : 2 * attempts])
    target = (heights * widths).astype(np.float64)[:, None] * (
        area[0] + (area[1] - area[0]) * d[:, 0::2]
    )
    logs = log_lo + (log_hi - log_lo) * d[:, 1::2]
    # math.exp, not np.exp: NumPy's vectorized exp may differ in the last bit
    aspect = np.array([math.exp(v) for v in logs.ravel().tolist()]).reshape(logs.shape)
    crop_w = np.rint(np.sqrt(target * aspect)).astype(np.int64)
    crop_h = np.rint(np.sqrt(target / aspect)).astype(np.int64)
    fits = (crop_w > 0) & (crop_w <= widths[:, None]) & (crop_h > 0) & (crop_h <= heights[:, None])
    found = fits.any(axis=1)
    first = np.argmax(fits, axis=1)
    rows = np.arange(n)
    ch, cw = crop_h[rows, first], crop_w[rows, first]
    # the word after the chosen attempt feeds integers(): low half for y, high half for x;
    # a range of one value draws nothing, so x then takes the low half
    word = words[rows, np.minimum(2 * first + 2, k - 1)]
    rng_y = (heights - ch).astype(np.uint64)
    rng_x = (widths - cw).astype(np.uint64)
    low, high = word & _LO32, word >> _S32
    y0, risky_y = _bounded(low, rng_y)
    x_word = np.where(rng_y == 0, low, high)
    x0, risky_x = _bounded(x_word, rng_x)
    y0 = np.where(rng_y == 0, 0, y0)
    x0 = np.where(rng_x == 0, 0, x0)
    ok = found & (2 * first + 2 < k) & ~((rng_y != 0) & risky_y) & ~((rng_x != 0) & risky_x)
    for i in np.flatnonzero(ok).tolist():
        result[i] = (int(y0[i]), int(x0[i]), int(ch[i]), int(cw[i]))
    if attempts == num_attempts:  # all attempts drawn: where none fit, no draw follows
        for i in np.flatnonzero(~found & (heights > 0) & (widths > 0)).tolist():
            result[i] = centre_crop_window(int(heights[i]), int(widths[i]), aspect_ratio)
    return result


# The same constants as plain integers, for SampleStream.
_M0_INT, _M1_INT = int(_M0), int(_M1)
_W0_INT, _W1_INT = int(_W0), int(_W1)
_MASK256 = (1 << 256) - 1


@functools.lru_cache(maxsize=256)
def _round_keys(k0: int, k1: int) -> tuple[tuple[int, int], ...]:
    """The ten (k0, k1) of Philox's rounds: one key (seed, operator) serves many samples."""
    keys = [(k0, k1)]
    for _ in range(9):
        k0, k1 = (k0 + _W0_INT) & _MASK64, (k1 + _W1_INT) & _MASK64
        keys.append((k0, k1))
    return tuple(keys)


def _philox_block(
    c0: int, c1: int, c2: int, c3: int, keys: tuple[tuple[int, int], ...]
) -> tuple[int, ...]:
    """Philox4x64-10 of one counter block in Python integers (the rounds of _philox)."""
    for k0, k1 in keys:
        p0 = _M0_INT * c0
        p1 = _M1_INT * c2
        c0, c1, c2, c3 = (p1 >> 64) ^ c1 ^ k0, p1 & _MASK64, (p0 >> 64) ^ c3 ^ k1, p0 & _MASK64
    return c0, c1, c2, c3


class SampleStream:
    """One sample's ``Generator(Philox(key, counter))`` draws, in plain Python integers.

    Gives the numbers NumPy's generator gives for the calls it has (``random``,
    ``uniform``, ``integers`` on ranges below 2**32), so an operator may draw from it
    instead of ``ctx.rng`` and get the same results. Blocks are computed as they are
    needed. Not thread-safe; one stream per sample.
    """

    __slots__ = ("_counter", "_half", "_keys", "_pos", "_words")

    def __init__(self, key: tuple[int, int], counter: tuple[int, int, int, int]):
        self._keys = _round_keys(key[0] & _MASK64, key[1] & _MASK64)
        c0, c1, c2, c3 = (c & _MASK64 for c in counter)
        self._counter = c0 | (c1 << 64) | (c2 << 128) | (c3 << 192)
        self._words: tuple[int, ...] = ()
        self._pos = 4  # NumPy's buffer_pos: the counter moves on before the first block
        self._half: int | None = None  # the high half of a word split for 32-bit draws

    def random_raw(self) -> int:
        """The next 64-bit word (``bit_generator.random_raw()``)."""
        if self._pos == 4:
            c = self._counter = (self._counter + 1) & _MASK256
            self._words = _philox_block(
                c & _MASK64, (c >> 64) & _MASK64, (c >> 128) & _MASK64, c >> 192, self._keys
            )
            self._pos = 0
        word = self._words[self._pos]
        self._pos += 1
        return word

    def _next32(self) -> int:
        # NumPy's Philox splits a word for 32-bit draws: low half now, high half next time
        half = self._half
        if half is not None:
            self._half = None
            return half
        word = self.random_raw()
        self._half = word >> 32
        return word & 0xFFFFFFFF

    def random(self) -> float:
        """``Generator.random()``: the top 53 bits of a word over 2**53."""
        return (self.random_raw() >> 11) * _DOUBLE

    def uniform(self, low: float = 0.0, high: float = 1.0) -> float:
        """``Generator.uniform(low, high)`` for scalars."""
        low, high = float(low), float(high)
        return low + (high - low) * self.random()

    def integers(self, low: int, high: int) -> int:
        """``Generator.integers(low, high)`` (int64, high exclusive) for high - low <= 2**32."""
        span = int(high) - int(low) - 1  # NumPy's rng: the largest offset
        if span < 0:
            raise ValueError("high <= low")
        if span == 0:
            return int(low)  # one value: nothing is drawn
        if span > 0xFFFFFFFF:
            raise ValueError("SampleStream draws integers from ranges of at most 2**32 values")
        if span == 0xFFFFFFFF:
            return int(low) + self._next32()
        # Lemire's multiply-shift with NumPy's rejection rule
        excl = span + 1
        m = self._next32() * excl
        if m & 0xFFFFFFFF < excl:
            threshold = (0xFFFFFFFF - span) % excl
            while m & 0xFFFFFFFF < threshold:
                m = self._next32() * excl
        return int(low) + (m >> 32)


def sample_stream(
    seed: int, node_id: int, epoch: int, iteration: int, idx_in_batch: int, meta: dict | None
) -> SampleStream:
    """The stream of one sample, as context.sample_generator keys it (same numbers)."""
    return SampleStream(*sample_key(seed, node_id, epoch, iteration, idx_in_batch, meta))
