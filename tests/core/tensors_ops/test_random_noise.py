"""fn.random.beta / uniform / normal and fn.noise.*: distributions (statistical tests at
significance level ALPHA = 0.001 with fixed seeds, so a pass is reproducible), dtype
saturation, per-sample arguments, argument errors, and determinism across thread counts."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from tensor_helpers import run

from chute import OperatorError, fn

ALPHA = 1e-3


def test_beta_follows_the_beta_distribution():
    params = [np.array(a, np.float32) for a in (0.5, 2.0, 5.0)]
    (out,) = run(lambda a: fn.random.beta(alpha=a, beta=2.0, shape=[4000]), params, seed=11)
    assert out.dtype == np.float32
    for i, a in enumerate((0.5, 2.0, 5.0)):
        x = out.at(i)
        assert ((x >= 0) & (x <= 1)).all()
        assert stats.kstest(x, stats.beta(a, 2.0).cdf).pvalue > ALPHA


def test_beta_arguments():
    (out,) = run(lambda: fn.random.beta(dtype=np.float64, shape=[3]), batch_size=2)
    assert out.dtype == np.float64 and out.at(0).shape == (3,)
    with pytest.raises(ValueError, match="fn.random.beta: argument 'alpha' must be > 0"):
        run(lambda: fn.random.beta(alpha=0.0), batch_size=1)
    with pytest.raises(TypeError, match="'dtype' must be float32 or float64"):
        run(lambda: fn.random.beta(dtype=np.int32), batch_size=1)
    bad = [np.array(-1.0, np.float32)]
    with pytest.raises(OperatorError, match="'beta' must be > 0"):
        run(lambda b: fn.random.beta(beta=b), bad)


def test_uniform_per_sample_range_and_integer_dtype():
    ranges = [np.array([0.0, 1.0], np.float32), np.array([250.0, 300.0], np.float32)]
    (out,) = run(lambda r: fn.random.uniform(range=r, shape=[2000]), ranges, seed=3)
    x0, x1 = out.at(0), out.at(1)
    assert stats.kstest(x0, stats.uniform(0, 1).cdf).pvalue > ALPHA
    assert x1.min() >= 250 and x1.max() < 300
    (u8,) = run(lambda r: fn.random.uniform(range=r, shape=[500], dtype=np.uint8), ranges)
    assert u8.at(1).max() == 255 and u8.at(1).min() >= 250  # saturated, not wrapped
    with pytest.raises(OperatorError, match="'range' must have lo <= hi"):
        run(lambda r: fn.random.uniform(range=r), [np.array([2.0, 1.0], np.float32)])
    with pytest.raises(TypeError, match="'range' and 'values' exclude"):
        run(lambda: fn.random.uniform(range=[0, 1], values=[1, 2]), batch_size=1)


def test_normal_stddev_checked():
    with pytest.raises(ValueError, match="fn.random.normal: argument 'stddev'"):
        run(lambda: fn.random.normal(stddev=-1.0), batch_size=1)


def test_gaussian_noise_statistics_and_saturation():
    flat = [np.full((100, 100), 100.0, np.float32), np.full((50, 80), 0.0, np.float32)]
    std = [np.array(5.0, np.float32), np.array(0.0, np.float32)]
    (out,) = run(lambda x, s: fn.noise.gaussian(x, mean=1.0, stddev=s), flat, std, seed=2)
    noise = (out.at(0) - 100.0).ravel()
    assert stats.kstest(noise, stats.norm(1.0, 5.0).cdf).pvalue > ALPHA
    np.testing.assert_array_equal(out.at(1), 1.0)  # stddev 0: exactly the mean added
    bright = [np.full((64, 64), 250, np.uint8)]
    (u8,) = run(lambda x: fn.noise.gaussian(x, stddev=20.0), bright)
    assert u8.dtype == np.uint8 and u8.at(0).max() == 255 and u8.at(0).min() > 150


def test_salt_and_pepper_rates_and_values():
    img = [np.full((200, 200, 3), 128, np.uint8), np.full((10, 10, 3), 128, np.uint8)]
    (out,) = run(
        lambda x: fn.noise.salt_and_pepper(x, prob=0.2, salt_vs_pepper=0.25), img, layout="HWC"
    )
    x = out.at(0)
    assert set(np.unique(x)) <= {0, 128, 255}
    assert (x == x[..., :1]).all()  # one draw per pixel for all channels
    noisy = int((x[..., 0] != 128).sum())
    assert stats.binomtest(noisy, 200 * 200, 0.2).pvalue > ALPHA
    salt = int((x[..., 0] == 255).sum())
    assert stats.binomtest(salt, noisy, 0.25).pvalue > ALPHA
    f = [np.zeros((300, 3), np.float32)]
    (pc,) = run(
        lambda x: fn.noise.salt_and_pepper(x, prob=1.0, per_channel=True, salt_val=2.0),
        f,
        layout="WC",
    )
    assert set(np.unique(pc.at(0))) == {-1.0, 2.0}  # float pepper defaults to -1
    assert (pc.at(0) != pc.at(0)[:, :1]).any()  # channels drawn apart
    with pytest.raises(ValueError, match="salt_and_pepper: argument 'prob' must be in"):
        run(lambda x: fn.noise.salt_and_pepper(x, prob=1.5), img)


def test_shot_noise_mean_and_identity():
    img = [np.full((100, 100), 60.0, np.float32), np.arange(12, dtype=np.float32).reshape(3, 4)]
    factor = [np.array(2.0, np.float32), np.array(0.0, np.float32)]
    (out,) = run(lambda x, f: fn.noise.shot(x, factor=f), img, factor, seed=4)
    events = (out.at(0) / 2.0).ravel()
    assert np.all(events == np.round(events))  # quantized to multiples of factor
    # 10000 Poisson(30) draws: their mean is within 4 standard errors of 30
    assert abs(events.mean() - 30) < 4 * np.sqrt(30 / events.size)
    np.testing.assert_array_equal(out.at(1), img[1])  # factor 0 is the identity
    with pytest.raises(OperatorError, match="'factor' must be >= 0"):
        run(lambda x, f: fn.noise.shot(x, factor=f), img, [np.array(-1, np.float32)] * 2)


@pytest.mark.parametrize(
    "expr",
    [
        lambda x: fn.noise.gaussian(x, stddev=10.0),
        lambda x: fn.noise.salt_and_pepper(x),
        lambda x: fn.noise.shot(x, factor=3.0),
        lambda x: fn.random.beta(x, alpha=0.7),
    ],
)
def test_same_seed_same_output_for_any_thread_count(expr):
    img = [np.full((20, 30), 100, np.uint8) for _ in range(5)]
    a = run(expr, img, seed=9, num_threads=1)[0]
    b = run(expr, img, seed=9, num_threads=3)[0]
    c = run(expr, img, seed=10, num_threads=3)[0]
    for i in range(5):
        np.testing.assert_array_equal(a.at(i), b.at(i))
    assert any((a.at(i) != c.at(i)).any() for i in range(5))
