"""fn.random.* arguments as DALI 2.4 has them: choice's a / shape_like inputs and per-sample p,
per-sample shape, values, shape_like and dtype (statistical checks at ALPHA = 0.001, fixed seeds)."""

from __future__ import annotations

import numpy as np
import pytest
from misc_helpers import run
from scipy import stats

from chute import OperatorError, fn

ALPHA = 1e-3


def test_choice_from_per_sample_inputs_keeps_their_type():
    values = [np.array([10, 20, 30], np.int16), np.array([-1, 5], np.int16)]
    (out,) = run(lambda a: fn.random.choice(a, shape=[500]), values, seed=1)
    assert out.dtype == np.int16
    assert set(np.unique(out.at(0))) == {10, 20, 30} and set(np.unique(out.at(1))) == {-1, 5}
    scalars = [np.array(4, np.int64), np.array(2, np.int64)]
    (rng,) = run(lambda a: fn.random.choice(a, shape=[300]), scalars)
    assert rng.dtype == np.int64 and set(np.unique(rng.at(0))) == {0, 1, 2, 3}


def test_choice_shape_like_and_per_sample_p():
    like = [np.zeros((4, 50), np.uint8), np.zeros((2, 3), np.uint8)]
    probs = [np.array([0.9, 0.1, 0.0], np.float32), np.array([0.0, 0.0, 1.0], np.float32)]
    (out,) = run(lambda x, p: fn.random.choice([7, 8, 9], x, p=p), like, probs, seed=3)
    assert out.dtype == np.int32  # Python ints: int32, as DALI's constants
    assert out.at(0).shape == (4, 50) and out.at(1).shape == (2, 3)
    assert (out.at(1) == 9).all() and 9 not in out.at(0)
    sevens = int((out.at(0) == 7).sum())
    assert stats.binomtest(sevens, 200, 0.9).pvalue > ALPHA


def test_choice_errors():
    with pytest.raises(ValueError, match="argument 'p' must have 3 non-negative"):
        run(lambda: fn.random.choice([1, 2, 3], p=[0.5, 0.5]), batch_size=1)
    with pytest.raises(TypeError, match="a scalar 'a' must be an integer"):
        run(lambda: fn.random.choice(2.5), batch_size=1)
    with pytest.raises(OperatorError, match="'a' must be a scalar or 1-D"):
        run(lambda a: fn.random.choice(a), [np.ones((2, 2), np.int32)])
    with pytest.raises(OperatorError, match="argument 'p' must have 2"):
        run(lambda a, p: fn.random.choice(a, p=p), [np.array([1, 2])], [np.ones(3, np.float32)])


def test_per_sample_shape_values_and_shape_like():
    shapes = [np.array([3, 2], np.int32), np.array([5, 1], np.int32)]
    (u,) = run(lambda s: fn.random.uniform(shape=s, values=[1.0, 2.5]), shapes)
    assert u.at(0).shape == (3, 2) and u.at(1).shape == (5, 1)
    assert set(np.unique(u.at(0))) <= {1.0, 2.5}
    vals = [np.array([4.0], np.float32), np.array([-2.0, 6.0], np.float32)]
    (v,) = run(lambda x: fn.random.uniform(values=x, shape=[40]), vals)
    assert (v.at(0) == 4.0).all() and set(np.unique(v.at(1))) == {-2.0, 6.0}
    like = [np.zeros((6, 7), np.float32), np.zeros((1, 2), np.float32)]
    c, n = run(
        lambda x: (fn.random.coin_flip(x, probability=1.0), fn.random.normal(x, dtype=np.float64)),
        like,
    )
    assert c.at(0).shape == (6, 7) and c.dtype == np.int32 and (c.at(0) == 1).all()
    assert n.dtype == np.float64 and n.at(1).shape == (1, 2)


def test_normal_per_sample_mean_and_stddev():
    means = [np.array(-3.0, np.float32), np.array(10.0, np.float32)]
    stds = [np.array(0.5, np.float32), np.array(2.0, np.float32)]
    (out,) = run(lambda m, s: fn.random.normal(mean=m, stddev=s, shape=[3000]), means, stds, seed=5)
    for i in range(2):
        ks = stats.kstest(out.at(i), stats.norm(float(means[i]), float(stds[i])).cdf)
        assert ks.pvalue > ALPHA
