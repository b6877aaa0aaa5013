"""fn.roi_random_crop: windows hold the ROI (or lie inside it), stay in the input, and every
admissible start is reachable; hand-derived ranges for each case."""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, pipeline_def


def starts(n=64, data=None, seed=1, **kw) -> list[np.ndarray]:
    @pipeline_def(batch_size=n, num_threads=2, device_id=None, seed=seed)
    def pipe():
        if data is None:
            return fn.roi_random_crop(**kw)
        x = fn.external_source(source=lambda: [data] * n)
        return fn.roi_random_crop(x, **kw)

    p = pipe()
    p.build()
    (out,) = p.run()
    return [out.at(i) for i in range(n)]


def test_small_roi_is_contained_in_the_window():
    # ROI x 10..20 (10 wide) in a 15 window: start in [5, 10]; y 30..35 in 40: [-5, 30]
    got = np.stack(starts(roi_start=[10, 30], roi_end=[20, 35], crop_shape=[15, 40]))
    assert got.dtype == np.int64 and got.shape == (64, 2)
    assert got[:, 0].min() >= 5 and got[:, 0].max() <= 10
    assert got[:, 1].min() >= -5 and got[:, 1].max() <= 30
    assert len(set(got[:, 0].tolist())) == 6  # every start of [5, 10] drawn


def test_large_roi_contains_the_window_and_input_bounds_clamp():
    got = np.stack(starts(roi_start=[10], roi_shape=[50], crop_shape=[20]))
    assert got.min() >= 10 and got.max() <= 40
    # with the input's shape 0..30 the small ROI's range [-5, 30] of y becomes [0, 30 - 25]
    got = np.stack(
        starts(
            data=np.zeros((30, 100), np.uint8),
            roi_start=[3, 0],
            roi_end=[8, 10],
            crop_shape=[25, 10],
        )
    )
    assert got[:, 0].min() >= 0 and got[:, 0].max() <= 3
    np.testing.assert_array_equal(got[:, 1], 0)


def test_same_seed_same_starts():
    kw = dict(roi_start=[0, 0], roi_end=[100, 100], crop_shape=[10, 10])
    a, b = starts(seed=4, **kw), starts(seed=4, **kw)
    np.testing.assert_array_equal(np.stack(a), np.stack(b))


def test_errors():
    with pytest.raises(ValueError, match="roi_end"):
        starts(roi_start=[0], crop_shape=[1])
    with pytest.raises(Exception, match="within the input shape"):
        starts(data=np.zeros((10,), np.uint8), roi_start=[0], roi_end=[5], crop_shape=[20])
