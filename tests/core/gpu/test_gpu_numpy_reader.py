"""fn.readers.numpy(device="gpu"): the same arrays as the CPU reader, in GPU memory."""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, pipeline_def

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """Files of several dtypes, orders and shapes (odd byte sizes: alignment of the packing)."""
    root = tmp_path_factory.mktemp("npy_gpu")
    # one dtype and ndim (a reader's files share them), orders and odd sizes that differ
    arrays = [
        np.arange(7, dtype=np.float32).reshape(1, 7),
        np.arange(12, dtype=np.float32).reshape(3, 4) / 7,
        np.asfortranarray(np.arange(15, dtype=np.float32).reshape(5, 3)),
        np.array([[1.5, -2.0, 3.25]], dtype=np.float32),
        np.arange(30, dtype=np.float32).reshape(6, 5),
        np.array([[3.5]], dtype=np.float32),
    ]
    for i, a in enumerate(arrays):
        np.save(root / f"{i}.npy", a)
    return root


def _read(folder, device, **kwargs):
    @pipeline_def(batch_size=3, num_threads=2, device_id=0)
    def pipe():
        return fn.readers.numpy(file_root=str(folder), device=device, name="R", **kwargs)

    p = pipe()
    p.build()
    out = []
    for _ in range(2):
        (batch,) = p.run()
        for i in range(len(batch)):
            sample = batch.at(i)
            if device == "gpu":
                assert isinstance(sample, cp.ndarray) and sample.device.id == 0
                sample = cp.asnumpy(sample)
            out.append(sample)
    p.close()
    return out


def test_gpu_reader_gives_the_cpu_arrays(folder):
    cpu = _read(folder, "cpu")
    gpu = _read(folder, "gpu")
    assert len(gpu) == 6
    for c, g in zip(cpu, gpu):
        assert g.dtype == c.dtype and g.shape == c.shape
        np.testing.assert_array_equal(g, c)
    np.testing.assert_array_equal(gpu[1], np.arange(12, dtype=np.float32).reshape(3, 4) / 7)


def test_gpu_reader_regions(tmp_path):
    np.save(tmp_path / "a.npy", np.arange(40, dtype=np.int32).reshape(4, 10))

    @pipeline_def(batch_size=1, num_threads=1, device_id=0)
    def pipe():
        return fn.readers.numpy(
            file_root=str(tmp_path), device="gpu", roi_start=[2], roi_end=[5], roi_axes=[1]
        )

    p = pipe()
    p.build()
    (batch,) = p.run()
    expected = np.arange(40, dtype=np.int32).reshape(4, 10)[:, 2:5]
    np.testing.assert_array_equal(cp.asnumpy(batch.at(0)), expected)
    p.close()
