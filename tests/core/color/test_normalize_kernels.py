"""normalize (per sample and over a batch) against the formula in float64."""

from __future__ import annotations

import numpy as np
import pytest

from chute.ops.image.normalize_kernels import normalize, normalize_batch

RNG = np.random.default_rng(5)


def test_whole_sample_statistics() -> None:
    x = RNG.normal(3, 2, size=(17, 23, 3)).astype(np.float32)
    got = normalize(x)
    want = (x - x.astype(np.float64).mean()) / x.astype(np.float64).std()
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_axes_scale_shift_ddof_epsilon() -> None:
    x = RNG.integers(0, 256, size=(15, 19, 3)).astype(np.uint8)
    xd = x.astype(np.float64)
    got = normalize(x, axes=(0, 1), scale=64, shift=128, ddof=1, epsilon=4.0, dtype=np.uint8)
    mean = xd.mean(axis=(0, 1), keepdims=True)
    var = xd.var(axis=(0, 1), ddof=1, keepdims=True)
    want = (xd - mean) * 64 / np.sqrt(var + 4.0) + 128
    want = np.clip(np.floor(want + 0.5), 0, 255)  # ties measure zero here; saturating
    assert got.dtype == np.uint8
    assert np.abs(got.astype(np.int64) - want).max() <= 1  # float32 arithmetic near .5
    assert (got == want).mean() > 0.99


def test_given_mean_and_stddev() -> None:
    x = RNG.random((9, 11, 3)).astype(np.float32)
    mean = np.array([0.1, 0.5, 0.9]).reshape(1, 1, 3)
    std = np.array([0.2, 0.3, 0.4]).reshape(1, 1, 3)
    np.testing.assert_allclose(normalize(x, mean, std), (x - mean) / std, atol=1e-5)
    # Only the mean given: the variance is taken around it.
    got = normalize(x, mean=0.5)
    want = (x - 0.5) / np.sqrt(np.mean((x.astype(np.float64) - 0.5) ** 2))
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_zero_variance_gives_shift() -> None:
    x = np.full((4, 5), 7.0, dtype=np.float32)
    np.testing.assert_array_equal(normalize(x, shift=3.0), np.full((4, 5), 3.0, np.float32))


def test_batch_statistics_span_all_samples() -> None:
    batch = [RNG.normal(i, 1 + i, size=(5 + i, 7, 3)).astype(np.float32) for i in range(3)]
    got = normalize_batch(batch, axes=(0, 1))
    flat = np.concatenate([b.reshape(-1, 3).astype(np.float64) for b in batch])
    mean, std = flat.mean(axis=0), flat.std(axis=0)
    for g, b in zip(got, batch):
        np.testing.assert_allclose(g, (b - mean) / std, atol=1e-5)
    # Per-sample statistics differ from the batch ones.
    assert not np.allclose(normalize(batch[0], axes=(0, 1)), got[0], atol=1e-3)
    with pytest.raises(ValueError, match="non-reduced"):
        normalize_batch([np.zeros((3, 4)), np.zeros((3, 5))], axes=0)


def test_bad_axes() -> None:
    with pytest.raises(ValueError):
        normalize(np.zeros((3, 4)), axes=2)


def test_numpy_path_for_other_axes_and_ranks() -> None:
    x = RNG.normal(0, 1, size=(4, 6, 5, 2)).astype(np.float32)
    xd = x.astype(np.float64)
    got = normalize(x, axes=(1, 3), ddof=1)
    mean = xd.mean(axis=(1, 3), keepdims=True)
    want = (xd - mean) / xd.std(axis=(1, 3), ddof=1, keepdims=True)
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_large_offset_small_spread_stays_accurate() -> None:
    # mean^2 / var = 1e12: one-pass sum-of-squares would cancel; the two-pass path must run.
    x = (1000.0 + RNG.normal(0, 1e-3, size=(31, 29, 3))).astype(np.float64)
    got = normalize(x, axes=(0, 1), dtype=np.float64)
    want = (x - x.mean(axis=(0, 1))) / x.std(axis=(0, 1))
    np.testing.assert_allclose(got, want, atol=1e-6)
