"""Tensor operators (ops/tensors) against NumPy: shapes, types, layouts, errors."""

from __future__ import annotations

import numpy as np
import pytest
from tensor_helpers import run

from chute import OperatorError, fn, types

MIXED = [np.arange(6, dtype=np.float32).reshape(1, 2, 3), np.ones((1, 4, 3), np.float32)]


def test_zeros_ones_full_constant():
    z, o, f, c, c1 = run(
        lambda: (
            fn.zeros(shape=[2, 3]),
            fn.ones(shape=[2], dtype=np.uint8, layout="X"),
            fn.full(np.array([1.0, 2.0], np.float32), shape=[3, 2]),
            fn.constant(idata=[1, 2, 3, 4], shape=[2, 2]),
            fn.constant(fdata=[0.5], shape=[3]),
        ),
        batch_size=2,
    )
    assert z.dtype == np.int32 and z.at(0).shape == (2, 3) and not z.at(1).any()
    assert o.dtype == np.uint8 and o.layout() == "X"
    np.testing.assert_array_equal(o.at(0), [1, 1])
    np.testing.assert_array_equal(f.at(1), np.tile([1.0, 2.0], (3, 1)))
    assert f.dtype == np.float32
    np.testing.assert_array_equal(c.at(0), [[1, 2], [3, 4]])
    assert c.dtype == np.int32 and c1.dtype == np.float32
    np.testing.assert_array_equal(c1.at(1), [0.5] * 3)


def test_like_operators_follow_the_input():
    x = [np.zeros((2, 3), np.int16), np.zeros((0, 3), np.int16)]  # an empty sample too
    zl, ol, fl = run(
        lambda a: (fn.zeros_like(a), fn.ones_like(a, dtype=np.float32), fn.full_like(a, 7)),
        x,
        layout="HW",
    )
    assert zl.dtype == np.int16 and zl.layout() == "HW"
    assert zl.shape() == [(2, 3), (0, 3)]
    assert ol.dtype == np.float32 and ol.at(0).sum() == 6
    assert fl.dtype == np.int16 and (fl.at(0) == 7).all() and fl.at(1).shape == (0, 3)


def test_full_per_sample_shape_and_bad_broadcast():
    shapes = [np.array([2, 1]), np.array([1, 3])]
    (out,) = run(lambda s: fn.full(np.float32(3), shape=s), shapes)
    assert out.shape() == [(2, 1), (1, 3)]
    with pytest.raises(OperatorError, match="fill_value"):
        run(lambda: fn.full(np.zeros(3, np.float32), shape=[2, 2]), batch_size=1)


def test_squeeze_expand_dims_layouts():
    sq, ex = run(
        lambda a: (
            fn.squeeze(a, axis_names="F"),
            fn.expand_dims(a, axes=[0, 4], new_axis_names="AB"),
        ),
        MIXED,
        layout="FHW",
    )
    assert sq.shape() == [(2, 3), (4, 3)] and sq.layout() == "HW"
    np.testing.assert_array_equal(sq.at(0), MIXED[0][0])
    assert ex.shape() == [(1, 1, 2, 3, 1), (1, 1, 4, 3, 1)] and ex.layout() == "AFHWB"
    (no_names,) = run(lambda a: fn.expand_dims(a, axes=[1]), MIXED, layout="FHW")
    assert no_names.layout() == ""


def test_squeeze_errors_name_operator_and_argument():
    with pytest.raises(OperatorError, match="'axes'.*extent"):
        run(lambda a: fn.squeeze(a, axes=[1]), MIXED)
    with pytest.raises(TypeError, match="fn.squeeze: give exactly one"):
        run(lambda a: fn.squeeze(a), MIXED)


def test_reinterpret_bytes_and_shapes():
    x = [np.arange(4, dtype=np.int32).reshape(2, 2), np.arange(6, dtype=np.int32).reshape(3, 2)]
    as_u8, reshaped, rel = run(
        lambda a: (
            fn.reinterpret(a, dtype=np.uint8),
            fn.reinterpret(a, shape=[-1]),
            fn.reinterpret(a, rel_shape=[0.5, 2.0], layout="AB"),
        ),
        x[:1],
    )
    np.testing.assert_array_equal(as_u8.at(0), x[0].view(np.uint8).reshape(2, 8))
    np.testing.assert_array_equal(reshaped.at(0), [0, 1, 2, 3])
    assert rel.at(0).shape == (1, 4) and rel.layout() == "AB"
    with pytest.raises(OperatorError, match="reinterpret.*'dtype'"):
        run(lambda a: fn.reinterpret(a, dtype=np.int64), [np.zeros(3, np.int32)])


def test_cast_like_saturates():
    x = [np.array([-3.6, 2.5, 300.0], np.float32)]
    (out,) = run(lambda a, b: fn.cast_like(a, b), x, [np.zeros(1, np.uint8)])
    assert out.dtype == np.uint8
    np.testing.assert_array_equal(out.at(0), [0, 3, 255])  # halves away from zero, as DALI


def test_per_frame_layouts():
    a, b = run(
        lambda x: (fn.per_frame(x), fn.per_frame(fn.reshape(x, layout="ABC"), replace=True)),
        MIXED,
        ndim=3,
    )
    assert a.layout() == "F**" and b.layout() == "FBC"
    with pytest.raises(Exception, match="does not start with F"):
        run(lambda x: fn.per_frame(x), MIXED, layout="HWC")


def test_one_hot_axes_and_scalars():
    labels = [np.array([2], np.int32), np.array([1], np.int32)]  # legacy: one element = scalar
    (out,) = run(lambda x: fn.one_hot(x, num_classes=4), labels)
    assert out.shape() == [(4,), (4,)]
    np.testing.assert_array_equal(out.at(0), [0, 0, 1, 0])
    np.testing.assert_array_equal(out.at(1), [0, 1, 0, 0])
    grid = [np.array([[0, 3], [5, -1]], np.int64)]  # out-of-range classes stay off
    first, last = run(
        lambda x: (
            fn.one_hot(x, num_classes=3, axis=0, dtype=np.uint8, on_value=9, off_value=1),
            fn.one_hot(x, num_classes=3, axis=-1, axis_name="K"),
        ),
        grid,
        layout="HW",
    )
    ref = (grid[0][None] == np.arange(3)[:, None, None]).astype(np.uint8) * 8 + 1
    np.testing.assert_array_equal(first.at(0), ref)
    assert first.dtype == np.uint8
    np.testing.assert_array_equal(last.at(0), np.moveaxis(ref, 0, -1) // 9)
    assert last.layout() == "HWK"
    with pytest.raises(ValueError, match="fn.one_hot: argument 'num_classes'"):
        run(lambda x: fn.one_hot(x), labels)


def test_element_extract_and_sequence_rearrange():
    seq = [np.arange(24).reshape(4, 3, 2), np.arange(12).reshape(2, 3, 2)]
    first, second = run(lambda x: fn.element_extract(x, element_map=[1, 0]), seq, layout="FHW")
    np.testing.assert_array_equal(first.at(0), seq[0][1])
    np.testing.assert_array_equal(second.at(1), seq[1][0])
    assert first.layout() == "HW"
    orders = [np.array([3, 3, 0]), np.array([1])]
    (re,) = run(lambda x, o: fn.sequence_rearrange(x, new_order=o), seq, orders, layout="FHW")
    np.testing.assert_array_equal(re.at(0), seq[0][[3, 3, 0]])
    np.testing.assert_array_equal(re.at(1), seq[1][[1]])
    with pytest.raises(OperatorError, match="'new_order' has index 2"):
        run(lambda x: fn.sequence_rearrange(x, new_order=[2]), seq, layout="FHW")
    with pytest.raises(OperatorError, match="'element_map' has index 3"):
        run(lambda x: fn.element_extract(x, element_map=[3]), seq, layout="FHW")


@pytest.mark.parametrize(("repeats", "no_fixed"), [(False, False), (False, True), (True, True)])
def test_batch_permutation(repeats, no_fixed):
    seen = set()
    for seed in range(8):
        (out,) = run(
            lambda: fn.batch_permutation(allow_repetitions=repeats, no_fixed_points=no_fixed),
            batch_size=6,
            seed=seed,
        )
        perm = [int(out.at(i)) for i in range(6)]
        assert out.dtype == np.int32 and all(0 <= p < 6 for p in perm)
        if not repeats:
            assert sorted(perm) == list(range(6))
        if no_fixed:
            assert all(p != i for i, p in enumerate(perm))
        seen.add(tuple(perm))
    assert len(seen) > 1  # seeds give different permutations


def test_batch_permutation_same_for_any_thread_count():
    outs = [
        run(lambda: fn.batch_permutation(), batch_size=8, seed=5, num_threads=t)[0] for t in (1, 3)
    ]
    assert [int(outs[0].at(i)) for i in range(8)] == [int(outs[1].at(i)) for i in range(8)]


def test_permute_batch_list_and_per_sample():
    x = [np.full((i + 1,), i, np.int16) for i in range(3)]
    (out,) = run(lambda a: fn.permute_batch(a, indices=[2, 2, 0]), x)
    assert [out.at(i).tolist() for i in range(3)] == [[2, 2, 2], [2, 2, 2], [0]]
    idx = [np.array(1, np.int32), np.array(0, np.int32), np.array(1, np.int32)]
    (out,) = run(lambda a, k: fn.permute_batch(a, indices=k), x, idx)
    assert [out.at(i).tolist() for i in range(3)] == [[1, 1], [0], [1, 1]]
    with pytest.raises(OperatorError, match="'indices' has 3"):
        run(lambda a: fn.permute_batch(a, indices=[0, 3, 1]), x)
    with pytest.raises(OperatorError, match="'indices' has 2 values"):
        run(lambda a: fn.permute_batch(a, indices=[0, 1]), x)


def test_cast_rounds_halves_away_from_zero():
    x = [np.array([-200.5, -2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 126.5, 200.0, 0.49999997], np.float32)]
    (out,) = run(lambda a: fn.cast(a, dtype=types.INT8), x)
    np.testing.assert_array_equal(out.at(0), [-128, -3, -2, -1, 1, 2, 3, 127, 127, 0])
