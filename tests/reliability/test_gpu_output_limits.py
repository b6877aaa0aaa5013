"""The per-sample output limit on the GPU: resize refuses before the device allocates.

The GPU twin of test_output_limits.py (runtime/limits.py, ``CHUTE_MAX_SAMPLE_BYTES``):
fn.resize on the device checks every sample's output size before the batch is
allocated; the error names the operator, the sample, the argument and the size, and
the device memory pool does not grow by what was asked.
"""

from __future__ import annotations

import numpy as np
import pytest

from chute import OperatorError, fn, pipeline_def
from chute.runtime import limits

pytestmark = pytest.mark.gpu


def images():
    return [np.full((4, 6, 3), 7, np.uint8), np.full((5, 3, 3), 9, np.uint8)]


def run_gpu(build, on_error="raise"):
    """One batch of ``images()`` through ``build`` on the GPU: (outputs, skip reports)."""

    @pipeline_def(batch_size=2, num_threads=1, device_id=0, seed=0, on_error=on_error)
    def pipe():
        return build(fn.external_source(source=images).gpu())

    p = pipe()
    p.build()
    try:
        return p.run(), p.errors()
    finally:
        p.close()


@pytest.fixture(autouse=True)
def default_limit():
    limits.set_max_sample_bytes(None)
    yield
    limits.set_max_sample_bytes(None)


def test_gpu_resize_over_the_environment_limit_is_refused_before_allocating(monkeypatch):
    import cupy as cp

    monkeypatch.setenv("CHUTE_MAX_SAMPLE_BYTES", str(1_000_000))
    pool = cp.get_default_memory_pool()

    @pipeline_def(batch_size=2, num_threads=1, device_id=0, seed=0)
    def pipe():
        return fn.resize(fn.external_source(source=images).gpu(), size=(1000, 1000))

    p = pipe()
    p.build()
    cp.cuda.Device(0).synchronize()
    before = pool.total_bytes()
    with pytest.raises(OperatorError) as info:
        p.run()
    grown = pool.total_bytes() - before
    p.close()
    message = str(info.value)
    assert "fn.resize" in message and "sample 0" in message
    assert "argument 'size' asks for an output of 1000 x 1000 x 3 uint8" in message
    assert "over the per-sample limit" in message
    # 2 x 3 MB were asked for: refused before the batch was allocated
    assert grown < 1_000_000, grown


def test_gpu_resize_under_the_limit_matches_the_cpu(monkeypatch):
    monkeypatch.setenv("CHUTE_MAX_SAMPLE_BYTES", str(1_000_000))
    (out,), errors = run_gpu(lambda x: fn.resize(x, size=(500, 500)))  # 750 KB: fits
    host = out.as_cpu()
    assert errors == []
    assert [np.asarray(host.at(k)).shape for k in range(2)] == [(500, 500, 3)] * 2
    # constant images resize to the same constants (any filter)
    np.testing.assert_array_equal(np.asarray(host.at(0)), np.full((500, 500, 3), 7, np.uint8))
    np.testing.assert_array_equal(np.asarray(host.at(1)), np.full((500, 500, 3), 9, np.uint8))


def test_gpu_limit_set_in_code_and_turned_off():
    limits.set_max_sample_bytes(1000)  # 10 x 10 x 3 = 300 bytes fit, 20 x 20 x 3 do not
    with pytest.raises(OperatorError, match=r"20 x 20 x 3 uint8 \(0.0 GiB\), over the per-sample"):
        run_gpu(lambda x: fn.resize(x, size=(20, 20)))
    (out,), _ = run_gpu(lambda x: fn.resize(x, size=(10, 10)))
    assert np.asarray(out.as_cpu().at(0)).shape == (10, 10, 3)
    limits.set_max_sample_bytes(0)
    (out,), _ = run_gpu(lambda x: fn.resize(x, size=(20, 20)))
    np.testing.assert_array_equal(np.asarray(out.as_cpu().at(1)), np.full((20, 20, 3), 9, np.uint8))


def test_gpu_a_per_sample_size_names_the_sample():
    sizes = [np.array([8, 8], np.float32), np.array([1e6, 1e6], np.float32)]
    with pytest.raises(OperatorError) as info:
        run_gpu(lambda x: fn.resize(x, size=fn.external_source(source=lambda: sizes)))
    message = str(info.value)
    assert "fn.resize" in message and "sample 1" in message
    assert "argument 'size' asks for an output of 1000000 x 1000000 x 3 uint8" in message
    assert "over the per-sample limit of 4.0 GiB" in message


def test_gpu_resize_names_the_argument_given():
    with pytest.raises(OperatorError, match=r"argument 'resize_x' asks for an output"):
        run_gpu(lambda x: fn.resize(x, resize_x=2e9))


def test_gpu_under_skip_the_huge_sample_is_skipped_and_reported():
    sizes = [np.array([8, 8], np.float32), np.array([1e6, 1e6], np.float32)]
    (out,), errors = run_gpu(
        lambda x: fn.resize(x, size=fn.external_source(source=lambda: sizes)), on_error="skip"
    )
    host = out.as_cpu()
    assert [np.asarray(host.at(k)).shape for k in range(2)] == [(8, 8, 3), (8, 8, 3)]
    assert errors and all("over the per-sample limit" in e["reason"] for e in errors)
