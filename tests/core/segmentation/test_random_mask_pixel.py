"""fn.segmentation.random_mask_pixel: drawn pixels satisfy the foreground rule and cover every
candidate over many draws; fallbacks (no foreground, a value the mask type cannot hold,
foreground=0); per-sample arguments; the same seed gives the same pixels; errors."""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, pipeline_def

MASK = np.array(
    [
        [0, 0, 3, 0],
        [0, 5, 3, 0],
        [0, 0, 0, 7],
    ],
    np.uint8,
)


def draws(masks, iterations=30, seed=4, **kw):
    """Every drawn coordinate, per sample, over ``iterations`` batches."""
    n = len(masks)

    @pipeline_def(batch_size=n, num_threads=2, device_id=None, seed=seed)
    def pipe():
        m = fn.external_source(source=lambda: masks)
        return fn.segmentation.random_mask_pixel(m, **kw)

    p = pipe()
    p.build()
    out = [[] for _ in range(n)]
    for _ in range(iterations):
        (pix,) = p.run()
        for i in range(n):
            assert pix.at(i).dtype == np.int64 and pix.at(i).shape == (masks[i].ndim,)
            out[i].append(tuple(pix.at(i).tolist()))
    return out


def test_value_and_threshold_pick_only_foreground_and_cover_it():
    (got,) = draws([MASK], foreground=1, value=3)
    assert set(got) == {(0, 2), (1, 2)}
    (got,) = draws([MASK], foreground=1, threshold=4.0)
    assert set(got) == {(1, 1), (2, 3)}
    (got,) = draws([MASK], foreground=1)  # default threshold 0: every nonzero pixel
    assert set(got) == {(0, 2), (1, 2), (1, 1), (2, 3)}
    floats = [np.where(MASK > 0, 0.75, 0.25).astype(np.float32)[..., None]]
    (got,) = draws(floats, foreground=1, threshold=0.5)
    assert set(got) == {(0, 2, 0), (1, 2, 0), (1, 1, 0), (2, 3, 0)}


def test_fallbacks_draw_any_pixel():
    everything = {(y, x) for y in range(3) for x in range(4)}
    (got,) = draws([MASK], iterations=120)  # foreground=0
    assert set(got) == everything
    (got,) = draws([MASK], iterations=120, foreground=1, value=9)  # no pixel is 9
    assert set(got) == everything
    (got,) = draws([MASK], iterations=120, foreground=1, value=259)  # uint8 cannot hold it
    assert set(got) == everything
    (got,) = draws([MASK.astype(bool)], iterations=40, foreground=1, value=1)
    assert set(got) == {(0, 2), (1, 2), (1, 1), (2, 3)}


def test_per_sample_arguments_and_seed():
    masks = [MASK, MASK]

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=8)
    def pipe():
        m = fn.external_source(source=lambda: masks)
        v = fn.external_source(source=lambda: [np.int32(5), np.int32(7)])
        return fn.segmentation.random_mask_pixel(m, foreground=1, value=v)

    p = pipe()
    p.build()
    (pix,) = p.run()
    assert pix.at(0).tolist() == [1, 1] and pix.at(1).tolist() == [2, 3]
    a = draws([MASK] * 3, iterations=5, seed=1)
    assert a == draws([MASK] * 3, iterations=5, seed=1) and a != draws(
        [MASK] * 3, iterations=5, seed=2
    )


def test_errors():
    with pytest.raises(ValueError, match="'value' and 'threshold'"):
        draws([MASK], value=3, threshold=1.0)
    with pytest.raises(Exception, match=r"random_mask_pixel.*sample 1.*at least one pixel"):
        draws([MASK, np.zeros((0, 4), np.uint8)], iterations=1)
