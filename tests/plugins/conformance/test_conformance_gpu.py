"""Device batches (TensorListGPU) become framework tensors on the same GPU memory (DLPack)."""

from __future__ import annotations

import numpy as np
import pytest

from chute import Iterator, fn, pipeline_def

pytestmark = pytest.mark.gpu


def device_pointer(adapter, tensor):
    if adapter.name == "torch":
        return tensor.data_ptr()
    if adapter.name == "jax":
        return tensor.unsafe_buffer_pointer()
    if adapter.name == "paddle":
        return tensor.data_ptr()
    pytest.skip(f"no device pointer check for {adapter.name}")


def test_dense_gpu_batch_is_zero_copy(adapter):
    from chute.tensors.gpu import TensorListGPU

    host = np.arange(24, dtype=np.float32).reshape(4, 6)
    batch = TensorListGPU.from_host([host[i] for i in range(4)])
    it = adapter.iterator(_pipe(), ["x"], size=8, prepare_first_batch=False)
    tensor = adapter.convert(it, batch)
    assert device_pointer(adapter, tensor) == batch.as_array().data.ptr
    assert adapter.to_numpy(tensor).tolist() == host.tolist()


def _pipe(device_id=0):
    @pipeline_def(batch_size=4, num_threads=1, seed=9, device_id=device_id)
    def pipe():
        return fn.random.uniform(range=[0.0, 1.0], shape=[3]).gpu()

    return pipe()


def test_gpu_pipeline_values_match_raw_iterator(adapter):
    raw = Iterator(_pipe(), ["x"], size=8)
    it = adapter.iterator(_pipe(), ["x"], size=8)
    for step_raw, step in zip(raw, it):
        (expected,) = step_raw
        (got,) = adapter.unpack(step)
        assert adapter.to_numpy(got["x"]).tobytes() == expected["x"].as_cpu().as_array().tobytes()
