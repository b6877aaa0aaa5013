"""fn.reductions.* and the fn.math / chute.math functions against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from tensor_helpers import run

import chute
from chute import OperatorError, fn

RNG = np.random.default_rng(0)
MIXED = [
    RNG.integers(0, 255, (3, 4, 2)).astype(np.uint8),
    RNG.integers(0, 255, (5, 1, 2)).astype(np.uint8),
]


@pytest.mark.parametrize(
    ("name", "ref", "dtype"),
    [
        ("sum", lambda x, ax, k: np.sum(x, axis=ax, keepdims=k, dtype=np.uint64), np.uint64),
        ("mean", lambda x, ax, k: np.mean(x, axis=ax, keepdims=k), np.float32),
        ("min", lambda x, ax, k: np.min(x, axis=ax, keepdims=k), np.uint8),
        ("max", lambda x, ax, k: np.max(x, axis=ax, keepdims=k), np.uint8),
        (
            "mean_square",
            lambda x, ax, k: np.mean(x.astype(float) ** 2, axis=ax, keepdims=k),
            np.float32,
        ),
        (
            "rms",
            lambda x, ax, k: np.sqrt(np.mean(x.astype(float) ** 2, axis=ax, keepdims=k)),
            np.float32,
        ),
    ],
)
@pytest.mark.parametrize(("axes", "keep"), [(None, False), ((0, 2), False), ((1,), True)])
def test_reductions_match_numpy(name, ref, dtype, axes, keep):
    kwargs = {"keep_dims": keep} if axes is None else {"axes": list(axes), "keep_dims": keep}
    (out,) = run(lambda x: getattr(fn.reductions, name)(x, **kwargs), MIXED)
    assert out.dtype == dtype
    for i, x in enumerate(MIXED):
        np.testing.assert_allclose(out.at(i), ref(x, axes, keep), rtol=1e-5)


def test_axis_names_dtype_and_layout():
    (out,) = run(
        lambda x: fn.reductions.sum(x, axis_names="HW", dtype=np.float64), MIXED, layout="HWC"
    )
    assert out.dtype == np.float64 and out.layout() == "C"
    np.testing.assert_allclose(out.at(1), MIXED[1].sum(axis=(0, 1)))
    with pytest.raises(Exception, match="'axis_names' 'Q'"):
        run(lambda x: fn.reductions.mean(x, axis_names="Q"), MIXED, layout="HWC")
    with pytest.raises(Exception, match="axis 3 out of range"):
        run(lambda x: fn.reductions.max(x, axes=3), MIXED)


@pytest.mark.parametrize("name", ["std_dev", "variance"])
def test_std_dev_and_variance_with_given_mean(name):
    data = [x.astype(np.float32) for x in MIXED]
    out, with_const = run(
        lambda x: (
            getattr(fn.reductions, name)(
                x, fn.reductions.mean(x, axes=[0, 1]), axes=[0, 1], ddof=1
            ),
            getattr(fn.reductions, name)(x, 100.0),
        ),
        data,
    )
    for i, x in enumerate(data):
        var = np.var(x, axis=(0, 1), ddof=1)
        np.testing.assert_allclose(out.at(i), np.sqrt(var) if name == "std_dev" else var, rtol=1e-5)
        var100 = np.mean((x.astype(np.float64) - 100.0) ** 2)
        ref = np.sqrt(var100) if name == "std_dev" else var100
        np.testing.assert_allclose(with_const.at(i), ref, rtol=1e-5)
    with pytest.raises(OperatorError, match="input 'mean' of shape"):
        run(
            lambda x: getattr(fn.reductions, name)(x, fn.reductions.mean(x, axes=[2]), axes=[0]),
            data,
        )


def test_empty_samples():
    empty = [np.zeros((0, 3), np.float32), np.ones((2, 3), np.float32)]
    s, m = run(lambda x: (fn.reductions.sum(x, axes=0), fn.reductions.mean(x)), empty)
    np.testing.assert_array_equal(s.at(0), [0, 0, 0])
    assert np.isnan(m.at(0)) and m.at(1) == 1.0
    with pytest.raises(OperatorError, match="empty sample"):
        run(lambda x: fn.reductions.max(x), empty)


X = [np.array([0.1, 0.5, 0.9], np.float32), np.array([-0.5, 0.25], np.float32)]
UNARY = {
    "cbrt": np.cbrt, "log2": np.log2, "log10": np.log10, "asin": np.arcsin, "acos": np.arccos,
    "atan": np.arctan, "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "asinh": np.arcsinh,
    "atanh": np.arctanh, "fabs": np.fabs, "floor": np.floor, "ceil": np.ceil,
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(UNARY))
def test_math_functions_match_numpy(name):
    data = [np.abs(x) + 1.0 for x in X] if name in ("log2", "log10") else X
    (out,) = run(lambda x: getattr(chute.math, name)(x), data)
    assert out.dtype == np.float32
    for i, x in enumerate(data):
        np.testing.assert_allclose(out.at(i), UNARY[name](x), rtol=1e-6)


def test_math_type_promotion():
    i16 = [np.array([-2, 1, 2], np.int16)]
    f_abs, i_abs, acosh, p, fp, neg = run(
        lambda x: (
            fn.math.fabs(x),
            fn.math.abs(x),
            chute.math.acosh(fn.math.abs(x) + 1),
            fn.math.pow(x, 2),
            fn.math.fpow(x, 2),
            fn.math.pow(x, -1),
        ),
        i16,
    )
    assert f_abs.dtype == np.float32 and i_abs.dtype == np.int16
    assert acosh.dtype == np.float32 and p.dtype == np.int32 and fp.dtype == np.float32  # 2: int32
    np.testing.assert_allclose(acosh.at(0), np.arccosh([3, 2, 3]), rtol=1e-6)
    np.testing.assert_array_equal(p.at(0), [4, 1, 4])
    np.testing.assert_array_equal(neg.at(0), [0, 1, 0])  # integer 1/x, as DALI
    assert set(chute.math.__all__) == set(fn.math.__all__)


@pytest.mark.parametrize("name", ["sum", "mean", "min", "max"])
@pytest.mark.parametrize(
    "dtype", [np.uint8, np.int16, np.uint16, np.float32, np.int32, np.float64, np.bool_]
)
@pytest.mark.parametrize(
    ("shape", "keep"), [((7, 9, 3), True), ((2, 5, 6, 4), False), ((11, 1), True)]
)
def test_per_channel_statistics_match_numpy(name, dtype, shape, keep):
    """Reducing all axes but the channels (fast paths for images) gives NumPy's values."""
    if dtype == np.bool_:
        sample = RNG.integers(0, 2, shape).astype(bool)
    elif np.dtype(dtype).kind == "f":
        sample = (RNG.standard_normal(shape) * 100).astype(dtype)
    else:
        info = np.iinfo(dtype)
        sample = RNG.integers(max(info.min, -30000), min(info.max, 30000), shape).astype(dtype)
    axes = list(range(len(shape) - 1))
    (out,) = run(
        lambda x: getattr(fn.reductions, name)(x, axes=axes, keep_dims=keep), [sample, sample[::-1]]
    )
    for i, x in enumerate([sample, sample[::-1]]):
        got = out.at(i)
        if name in ("min", "max"):
            want = getattr(np, name)(x, axis=tuple(axes), keepdims=keep)
            np.testing.assert_array_equal(got, want)
            assert got.dtype == x.dtype
        else:
            want = getattr(np, name)(x.astype(np.float64), axis=tuple(axes), keepdims=keep)
            assert got.shape == want.shape
            np.testing.assert_allclose(got.astype(np.float64), want, rtol=1e-6, atol=1e-6)
