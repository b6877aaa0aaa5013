"""GPU backends of fn.equalize, fn.grid_mask, fn.jpeg_compression_distortion vs the CPU ones."""

from __future__ import annotations

import numpy as np
import pytest
from test_filters_gpu import images, run_both

pytestmark = pytest.mark.gpu

from chute import fn  # noqa: E402


@pytest.mark.parametrize("c", [1, 3, 5])
def test_equalize_gpu_matches_cpu(c):
    data = images(c, np.uint8)
    data[2][..., 0] = 13
    cpu, gpu = run_both(lambda x: fn.equalize(x), data)
    for a, b in zip(cpu, gpu):
        np.testing.assert_array_equal(b, a)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_grid_mask_gpu_matches_cpu(dtype):
    data = images(3, dtype)
    n = len(data)
    tiles = [np.int32(t) for t in (3, 10, 17, 5, 8)][:n]
    angles = [np.float32(a) for a in (0.0, 0.4, -1.1, 2.0, 0.25)][:n]
    cpu, gpu = run_both(
        lambda x, t, a: fn.grid_mask(x, tile=t, angle=a, ratio=0.4, shift_x=2.5),
        data,
        t=tiles,
        a=angles,
    )
    for a, b in zip(cpu, gpu):
        # float32 rounding of the grid coordinates may flip pixels on a square's edge
        assert np.mean(a != b) < 0.01


def test_jpeg_distortion_gpu_matches_cpu():
    data = images(3, np.uint8)
    cpu, gpu = run_both(lambda x: fn.jpeg_compression_distortion(x, quality=30), data)
    for a, b in zip(cpu, gpu):
        np.testing.assert_array_equal(b, a)


def test_equalize_gpu_fhw_sequences():
    rng = np.random.default_rng(2)
    seqs = [rng.integers(0, 256, (f, 9, 11)).astype(np.uint8) for f in (2, 3)]
    cpu, gpu = run_both(lambda x: fn.equalize(x), seqs, layout="FHW")
    for a, b in zip(cpu, gpu):
        assert b.shape == a.shape
        np.testing.assert_array_equal(b, a)
