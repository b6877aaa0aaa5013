"""warp_affine refuses a matrix with NaN or inf (it returned an image of fill values)."""

from __future__ import annotations

import numpy as np
import pytest

from chute import OperatorError, fn, pipeline_def


def images():
    return [np.full((4, 5, 3), 100, np.uint8)] * 2


@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_constant_matrix_must_be_finite(bad):
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=0)
    def pipe():
        return fn.warp_affine(fn.external_source(source=images), matrix=[1, 0, 0, 0, 1, bad])

    p = pipe()
    p.build()
    with pytest.raises(OperatorError, match=r"fn.warp_affine.*sample 0.*'matrix' must be finite"):
        p.run()
    p.close()


def test_per_sample_matrix_must_be_finite_and_names_the_sample():
    good = np.array([[1, 0, 0], [0, 1, 0]], np.float32)
    bad = np.array([[1, 0, 0], [0, np.nan, 0]], np.float32)

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=0)
    def pipe():
        m = fn.external_source(source=lambda: [good, bad])
        return fn.warp_affine(fn.external_source(source=images), matrix=m)

    p = pipe()
    p.build()
    with pytest.raises(OperatorError, match=r"sample 1 of iteration 0.*'matrix' must be finite"):
        p.run()
    p.close()


def test_a_finite_matrix_still_warps():
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=0)
    def pipe():
        return fn.warp_affine(fn.external_source(source=images), matrix=[1, 0, 0, 0, 1, 0])

    p = pipe()
    p.build()
    (out,) = p.run()
    np.testing.assert_array_equal(out.at(0), images()[0])
    p.close()
