"""chute.ops.tensor_ops.convert (fn.cast, fn.cast_like): float to integer rounds half away
from zero and saturates, for any memory layout and for 0-d samples."""

from __future__ import annotations

import numpy as np
import pytest

from chute.ops.tensor_ops import convert

# 1e10 is inf in float16: it saturates too
VALUES = [-300.0, -2.5, -1.5, -0.5, -0.49, 0.0, 0.5, 1.5, 2.5, 2.51, 127.5, 254.5, 255.5, 1e10]


@pytest.mark.parametrize("src", [np.float16, np.float32, np.float64])
def test_ties_go_away_from_zero_and_values_saturate(src):
    x = np.array(VALUES, src)
    as_int8 = [-128, -3, -2, -1, 0, 0, 1, 2, 3, 3, 127, 127, 127, 127]
    as_uint8 = [0, 0, 0, 0, 0, 0, 1, 2, 3, 3, 128, 255, 255, 255]
    np.testing.assert_array_equal(convert(x, np.int8), as_int8)
    np.testing.assert_array_equal(convert(x, np.uint8), as_uint8)
    assert convert(x, np.int16)[:4].tolist() == [-300, -3, -2, -1]


def test_any_layout_and_0d_samples():
    x = np.array([[0.5, 1.5, 2.5], [-0.5, -1.5, 3.49]], np.float32)
    expected = np.array([[1, 2, 3], [-1, -2, 3]])
    np.testing.assert_array_equal(convert(x.T, np.int32), expected.T)
    np.testing.assert_array_equal(convert(x[:, ::-2], np.int32), expected[:, ::-2])
    scalar = convert(np.array(-2.5, np.float32), np.int32)
    assert scalar.shape == () and scalar.dtype == np.int32 and int(scalar) == -3
    assert int(convert(np.float64(4.5), np.uint8)) == 5
