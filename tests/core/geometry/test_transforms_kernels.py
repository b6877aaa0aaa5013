"""fn.transforms matrix builders, their composition, coord_flip and coord_transform."""

from __future__ import annotations

import math

import numpy as np
import pytest

from chute.ops.geometry import transforms_kernels as T


def h(m) -> np.ndarray:
    return np.vstack([np.asarray(m, dtype=np.float64), [0, 0, 1]])


def apply(m, points) -> np.ndarray:
    points = np.asarray(points, dtype=np.float64)
    return points @ np.asarray(m, dtype=np.float64)[:, :2].T + np.asarray(m, dtype=np.float64)[:, 2]


def test_builders_return_2x3_float32():
    for m in [
        T.translation((1, 2)),
        T.scale(2.0),
        T.rotation(30),
        T.shear((0.1, 0.2)),
        T.crop((0, 0), (1, 1)),
        T.combine(T.scale(2), T.rotation(10)),
    ]:
        assert m.shape == (2, 3) and m.dtype == np.float32
    # as DALI, crop's dimensions are its longest argument's: with none given, one
    np.testing.assert_array_equal(T.crop(), [[1.0, 0.0]])


def test_translation_scale_rotation_shear_formulas():
    p = np.array([[3.0, -2.0], [0.5, 7.0]])
    np.testing.assert_allclose(apply(T.translation((4, -1)), p), p + np.array([4, -1]), atol=1e-6)
    np.testing.assert_allclose(apply(T.scale((2, 3)), p), p * [2, 3], atol=1e-6)
    # about a centre: the centre stays put
    np.testing.assert_allclose(
        apply(T.scale(2.5, center=(10, 20)), [[10, 20]]), [[10, 20]], atol=1e-5
    )
    a = math.radians(30)
    rot = np.array([[math.cos(a), -math.sin(a)], [math.sin(a), math.cos(a)]])
    np.testing.assert_allclose(apply(T.rotation(30), p), p @ rot.T, atol=1e-6)
    c = np.array([5.0, 6.0])
    np.testing.assert_allclose(apply(T.rotation(30, center=c), p), (p - c) @ rot.T + c, atol=1e-5)
    np.testing.assert_allclose(apply(T.rotation(90), [[1, 0]]), [[0, 1]], atol=1e-6)
    np.testing.assert_allclose(
        apply(T.shear((0.5, 0.25)), [[2, 4]]), [[2 + 0.5 * 4, 4 + 0.25 * 2]], atol=1e-6
    )
    by_angle = T.shear(angles=(30, -10))
    np.testing.assert_allclose(
        by_angle[:, :2], [[1, math.tan(a)], [math.tan(math.radians(-10)), 1]], atol=1e-6
    )
    with pytest.raises(ValueError):
        T.shear()
    with pytest.raises(ValueError):
        T.shear(angles=(90, 0))


def test_crop_maps_boxes():
    m = T.crop(from_start=(10, 20), from_end=(30, 60), to_start=(0, 0), to_end=(1, 1))
    np.testing.assert_allclose(
        apply(m, [[10, 20], [30, 60], [20, 40]]), [[0, 0], [1, 1], [0.5, 0.5]], atol=1e-6
    )
    flipped = T.crop(from_start=(1, 0), from_end=(0, 1))
    np.testing.assert_allclose(apply(flipped, [[0.25, 0.25]]), [[0.75, 0.25]], atol=1e-6)
    kept = T.crop(from_start=(1, 0), from_end=(0, 1), absolute=True)
    np.testing.assert_allclose(apply(kept, [[0.25, 0.25]]), [[0.25, 0.25]], atol=1e-6)


def test_combine_translation_then_rotation_is_the_matrix_product():
    t = T.translation((3, 4))
    r = T.rotation(30)
    combined = T.combine(t, r)
    np.testing.assert_allclose(combined, (h(r) @ h(t))[:2], atol=1e-6)
    p = np.array([[1.0, 2.0]])
    np.testing.assert_allclose(apply(combined, p), apply(r, apply(t, p)), atol=1e-5)
    np.testing.assert_allclose(T.combine(t, r, reverse_order=True), (h(t) @ h(r))[:2], atol=1e-6)
    s = T.scale(2)
    np.testing.assert_allclose(T.combine(t, r, s), (h(s) @ h(r) @ h(t))[:2], atol=1e-5)
    with pytest.raises(ValueError):
        T.combine(t)


def test_input_matrix_composition_and_reverse_order():
    t = T.translation((3, 4))
    r = T.rotation(30, input_matrix=t)  # t first, then the rotation
    np.testing.assert_allclose(r, T.combine(t, T.rotation(30)), atol=1e-6)
    rev = T.rotation(30, input_matrix=t, reverse_order=True)
    np.testing.assert_allclose(rev, T.combine(T.rotation(30), t), atol=1e-6)
    np.testing.assert_allclose(T.scale(2, input_matrix=t), (h(T.scale(2)) @ h(t))[:2], atol=1e-6)


def test_coord_flip():
    points = np.array([[0.1, 0.2], [0.7, 0.9]], dtype=np.float32)
    np.testing.assert_allclose(T.coord_flip(points), [[0.9, 0.2], [0.3, 0.9]], atol=1e-6)
    np.testing.assert_allclose(
        T.coord_flip(points, flip_x=False, flip_y=True, center_y=1.0),
        [[0.1, 1.8], [0.7, 1.1]],
        atol=1e-6,
    )
    boxes = np.array([[0.1, 0.2, 0.4, 0.6]], dtype=np.float32)  # two corners per row
    np.testing.assert_allclose(T.coord_flip(boxes), [[0.9, 0.2, 0.6, 0.6]], atol=1e-6)
    xyz = np.array([[1.0, 2.0, 3.0]])
    np.testing.assert_allclose(
        T.coord_flip(xyz, "xyz", flip_x=False, flip_z=True, center_z=0), [[1, 2, -3]]
    )
    with pytest.raises(ValueError):
        T.coord_flip(np.zeros((2, 3)), "xy")


def test_coord_transform():
    p = np.array([[1.0, 2.0], [3.0, -1.0]])
    np.testing.assert_allclose(T.coord_transform(p, M=2.0, T=1.0), p * 2 + 1)
    np.testing.assert_allclose(T.coord_transform(p, M=[2.0, 3.0]), p * [2, 3])
    m = np.array([[1.0, 2.0], [0.0, 1.0], [1.0, 1.0]])
    out = T.coord_transform(p, M=m, T=[1, 2, 3])
    assert out.shape == (2, 3) and out.dtype == np.float32
    np.testing.assert_allclose(out, p @ m.T + [1, 2, 3])
    mt = np.hstack([m, [[1], [2], [3]]])
    np.testing.assert_allclose(T.coord_transform(p, MT=mt), out)
    # a 2x3 matrix from fn.transforms applies as MT
    np.testing.assert_allclose(
        T.coord_transform(p, MT=T.rotation(90)), apply(T.rotation(90), p), atol=1e-6
    )
    with pytest.raises(ValueError):
        T.coord_transform(p, M=np.eye(3))
