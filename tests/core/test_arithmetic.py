"""Arithmetic on DataNodes: broadcasting, type promotion, comparisons, bitwise, fn.math."""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, pipeline_def, types


def run_expr(expr, *batches):
    """Run ``expr(*nodes)`` over one batch per input, return the output TensorList."""

    @pipeline_def(batch_size=len(batches[0]), num_threads=2, seed=0)
    def pipe():
        nodes = [fn.external_source(source=lambda b=b: b) for b in batches]
        return expr(*nodes)

    p = pipe()
    (out,) = p.run()
    p.close()
    return out


U8 = [np.array([[1, 200], [3, 250]], np.uint8), np.array([[0, 255], [7, 9]], np.uint8)]
F32 = [np.array([0.5, -1.5], np.float32), np.array([2.0, 4.0], np.float32)]
I32 = [np.array([1, -2], np.int32), np.array([3, 4], np.int32)]


@pytest.mark.parametrize(
    ("expr", "inputs", "dtype", "reference"),
    [
        # DALI's constants: a Python int is int32 (no wrap-around), a float float32
        (lambda a: a * 2, [U8], np.int32, lambda a: a.astype(np.int32) * 2),
        (lambda a: a + 1.5, [U8], np.float32, lambda a: a.astype(np.float32) + np.float32(1.5)),
        (lambda a: a - 300, [U8], np.int32, lambda a: a.astype(np.int32) - 300),
        (lambda a: a * True, [U8], np.uint8, lambda a: a),
        (lambda a: a * types.Constant(2, dtype=types.UINT8), [U8], np.uint8, lambda a: a * 2),
        (lambda a, b: a + b, [I32, F32], np.float32, lambda a, b: (a + b).astype(np.float32)),
        (lambda a, b: a * b, [I32, I32], np.int32, lambda a, b: a * b),
        (lambda a: a / 2, [I32], np.float32, lambda a: (a / 2).astype(np.float32)),
        (lambda a: a // 2, [I32], np.int32, lambda a: a // 2),
        (lambda a: a % 3, [I32], np.int32, lambda a: a % 3),
        (lambda a: -a, [F32], np.float32, lambda a: -a),
        (lambda a, b: a - b, [F32, F32], np.float32, lambda a, b: a - b),
        (lambda a: 10 - a, [F32], np.float32, lambda a: 10 - a),
        (lambda a: 1 / a, [F32], np.float32, lambda a: 1 / a),
        (lambda a: a**2, [I32], np.int32, lambda a: a**2),
    ],
)
def test_promotion_and_values(expr, inputs, dtype, reference):
    out = run_expr(expr, *inputs)
    assert out.dtype == dtype
    for i in range(len(inputs[0])):
        np.testing.assert_allclose(out.at(i), reference(*(b[i] for b in inputs)), rtol=1e-6)


def test_broadcasting_per_sample():
    imgs = [np.ones((2, 3, 3), np.float32), np.full((4, 1, 3), 2, np.float32)]
    mean = [np.array([1, 2, 3], np.float32), np.array([0, 0, 1], np.float32)]
    out = run_expr(lambda x, m: x - m, imgs, mean)
    assert out.shape() == [(2, 3, 3), (4, 1, 3)]
    np.testing.assert_array_equal(out.at(1)[0, 0], [2, 2, 1])


def test_broadcast_mismatch_names_shapes():
    from chute import OperatorError

    with pytest.raises(OperatorError, match=r"do not broadcast.*\(3,\).*\(2,\)"):
        run_expr(lambda a, b: a + b, [np.zeros(3, np.float32)], [np.zeros(2, np.float32)])


def test_comparisons_and_bitwise():
    out = run_expr(lambda a: a > 100, U8)
    assert out.dtype == np.bool_
    np.testing.assert_array_equal(out.at(0), [[False, True], [False, True]])
    out = run_expr(lambda a, b: (a & b) | 1, U8, U8)
    assert out.dtype == np.int32  # the constant 1 is int32, as in DALI
    out = run_expr(lambda a, b: (a & b) | types.Constant(1, dtype=types.UINT8), U8, U8)
    assert out.dtype == np.uint8
    out = run_expr(lambda a: (a == 0) ^ (a == 255), U8)
    np.testing.assert_array_equal(out.at(1), [[True, True], [False, False]])
    from chute import OperatorError

    with pytest.raises(OperatorError, match="bitwise.*float32"):  # dtype known only at run time
        run_expr(lambda a, b: a & b, F32, F32)


def test_bitwise_on_floats_fails_at_build_when_dtype_is_declared():
    @pipeline_def(batch_size=1, num_threads=1, seed=0)
    def pipe():
        x = fn.external_source(source=lambda: F32[:1], dtype=np.float32)
        return x & x

    with pytest.raises(TypeError, match=r"fn.math \(node 1 'bitand'\).*bitwise"):
        pipe().build()


def test_math_functions():
    x = [np.array([0.25, 4.0], np.float32), np.array([1.0, 9.0], np.float32)]
    checks = {
        fn.math.sqrt: np.sqrt,
        fn.math.rsqrt: lambda v: 1 / np.sqrt(v),
        fn.math.exp: np.exp,
        fn.math.log: np.log,
        fn.math.sin: np.sin,
        fn.math.cos: np.cos,
        fn.math.tan: np.tan,
        fn.math.abs: np.abs,
        fn.math.floor: np.floor,
        fn.math.ceil: np.ceil,
    }
    for f, ref in checks.items():
        out = run_expr(f, x)
        assert out.dtype == np.float32, f
        np.testing.assert_allclose(out.at(1), ref(x[1]), rtol=1e-6)
    np.testing.assert_allclose(run_expr(lambda a: fn.math.clamp(a, 0.5, 2.0), x).at(1), [1.0, 2.0])
    np.testing.assert_allclose(run_expr(lambda a, b: fn.math.atan2(a, b), x, x).at(0), np.pi / 4)
    np.testing.assert_allclose(run_expr(lambda a: fn.math.pow(a, 2), x).at(0), [0.0625, 16])
    np.testing.assert_allclose(
        run_expr(lambda a, b: fn.math.min(a, b * 0.5), x, x).at(1), [0.5, 4.5]
    )
    np.testing.assert_allclose(run_expr(lambda a: fn.math.max(a, 2.0), x).at(0), [2.0, 4.0])
    assert run_expr(lambda a: fn.math.sqrt(a), I32).dtype == np.float32


def test_indexing_and_slicing():
    x = [np.arange(24, dtype=np.int16).reshape(2, 3, 4)]
    np.testing.assert_array_equal(run_expr(lambda a: a[:, 1:3], x).at(0), x[0][:, 1:3])
    np.testing.assert_array_equal(run_expr(lambda a: a[0], x).at(0), x[0][0])
    np.testing.assert_array_equal(run_expr(lambda a: a[..., ::-1], x).at(0), x[0][..., ::-1])
    np.testing.assert_array_equal(run_expr(lambda a: a[1, :, 2], x).at(0), x[0][1, :, 2])
    with pytest.raises(TypeError, match="indices"):
        run_expr(lambda a: a[1.5], x)


def test_datanode_has_no_truth_value():
    with pytest.raises(TypeError, match="truth value"):
        run_expr(lambda a: a if a else a, F32)


def test_arithmetic_with_an_array_constant_keeps_the_images_layout():
    from chute import types

    @pipeline_def(batch_size=1, num_threads=1, seed=0)
    def pipe():
        images = fn.external_source(source=lambda: [np.ones((2, 2, 3), np.uint8)], layout="HWC")
        weighted = images * types.Constant(np.array([1.0, 2.0, 3.0], np.float32))
        # a reduction by axis name needs the layout the product kept
        return weighted, fn.reductions.sum(weighted, axis_names="C")

    p = pipe()
    weighted, summed = p.run()
    assert weighted.layout() == "HWC"
    np.testing.assert_array_equal(summed.at(0), np.full((2, 2), 6.0, np.float32))
