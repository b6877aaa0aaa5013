"""Nearest-neighbour gathers: OpenCV's remap at integer coordinates equals NumPy's takes."""

from __future__ import annotations

import numpy as np
import pytest

from chute.ops.geometry import resize_kernels


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int16, np.float32, np.float64, np.int32])
@pytest.mark.parametrize("channels", [1, 2, 3, 4, 5])
def test_gather_equals_numpy_takes(dtype, channels):
    rng = np.random.default_rng(channels)
    for _ in range(10):
        h, w = (int(v) for v in rng.integers(1, 50, 2))
        image = rng.normal(0, 1000, (h, w, channels)).astype(dtype)
        rows = rng.integers(0, h, int(rng.integers(1, 90)))
        cols = rng.integers(0, w, int(rng.integers(1, 90)))
        out = resize_kernels._gather(image, rows, cols)
        expected = image.take(rows, axis=0).take(cols, axis=1)
        assert out.dtype == expected.dtype
        np.testing.assert_array_equal(out, expected)
