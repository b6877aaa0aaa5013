"""TensorListCPU/GPU and TensorCPU/GPU made by hand, as DALI's documentation makes them:
from NumPy arrays, lists of samples, DLPack capsules and objects with ``__dlpack__``."""

from __future__ import annotations

import numpy as np
import pytest

from chute import types
from chute.tensors import TensorCPU, TensorListCPU


class Exporter:
    """A DLPack producer that is not NumPy (as a CPU torch tensor or jax array would be)."""

    def __init__(self, array: np.ndarray):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__()

    def __dlpack_device__(self):
        return (1, 0)


def test_batch_from_one_array_is_dense_with_the_first_axis_as_samples():
    data = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    batch = TensorListCPU(data, "HW")
    assert len(batch) == 2 and batch.shape() == [(3, 4), (3, 4)]
    assert batch.layout() == "HW" and batch.dtype == types.INT16 and batch.is_dense_tensor()
    assert np.shares_memory(batch.as_array(), data)  # no copy
    assert batch.at(1).tolist() == data[1].tolist()
    assert batch.as_tensor().shape() == [2, 3, 4] and batch.as_tensor().layout() == "NHW"
    assert batch.as_cpu() is batch


def test_batch_from_dlpack_capsule_and_from_an_exporter_share_memory():
    data = np.arange(6, dtype=np.float32).reshape(3, 2)
    from_capsule = TensorListCPU(data.__dlpack__(), "W")
    from_object = TensorListCPU(Exporter(data), "W")
    for batch in (from_capsule, from_object):
        assert batch.shape() == [(2,), (2,), (2,)] and batch.dtype == np.float32
        assert batch.as_array().tolist() == [[0, 1], [2, 3], [4, 5]]
        assert np.shares_memory(batch.as_array(), data)


def test_batch_from_a_list_of_samples_of_any_kind():
    samples = [
        np.array([1, 2], np.uint8),
        TensorCPU(np.array([3, 4, 5], np.uint8)),
        np.array([6], np.uint8).__dlpack__(),
        Exporter(np.array([7, 8], np.uint8)),
    ]
    batch = TensorListCPU(samples, "X")
    assert batch.shape() == [(2,), (3,), (1,), (2,)] and not batch.is_dense_tensor()
    assert [batch.at(i).tolist() for i in range(4)] == [[1, 2], [3, 4, 5], [6], [7, 8]]
    assert [t.layout() for t in batch] == ["X"] * 4
    with pytest.raises(ValueError, match="ragged"):
        batch.as_array()


def test_batch_from_a_batch_shares_memory_and_takes_a_new_layout():
    data = np.zeros((2, 4, 4), np.uint8)
    first = TensorListCPU(data, "HW", meta=[{"source_info": "a"}, {"source_info": "b"}])
    again = TensorListCPU(first, "WH")
    assert again.layout() == "WH" and first.layout() == "HW"
    assert np.shares_memory(again.as_array(), data)
    assert again.source_info() == ["a", "b"]
    assert TensorListCPU(first, None).layout() == "HW"  # None keeps it


def test_errors_name_what_is_wrong():
    with pytest.raises(ValueError, match="layout 'HWC' has 3 dimensions but the data has 2"):
        TensorListCPU(np.zeros((2, 3, 4)), "HWC")  # the first axis is the batch
    with pytest.raises(ValueError, match="layout 'AB' has 2 dimensions but the data has 1"):
        TensorCPU(np.zeros(3), "AB")
    with pytest.raises(ValueError, match="leading sample dimension"):
        TensorListCPU(np.float32(3.0))
    with pytest.raises(TypeError, match="sample 1 has dtype int32 and ndim 1, but sample 0"):
        TensorListCPU([np.zeros(2, np.float32), np.zeros(2, np.int32)])
    assert len(TensorListCPU([])) == 0


def test_tensor_from_capsule_exporter_and_array_protocols():
    data = np.arange(6, dtype=np.int64).reshape(2, 3)
    for source in (data, data.__dlpack__(), Exporter(data)):
        t = TensorCPU(source, "AB")
        assert t.shape() == [2, 3] and t.layout() == "AB" and t.dtype == types.INT64
        assert np.shares_memory(t.as_array(), data)
    t = TensorCPU(data)
    assert t.__array_interface__["shape"] == (2, 3)
    assert np.asarray(t).tolist() == [[0, 1, 2], [3, 4, 5]]
    assert np.from_dlpack(t).tolist() == [[0, 1, 2], [3, 4, 5]]
    target = np.empty((2, 3), np.int64)
    t.copy_to_external(target)
    assert target.tolist() == [[0, 1, 2], [3, 4, 5]]


def test_set_layout_reinterpret_data_ptr_broadcast_reset():
    data = np.arange(6, dtype=np.int32).reshape(2, 3)
    batch = TensorListCPU(data, "X")
    batch.set_layout("W")
    assert batch.layout() == "W"
    with pytest.raises(ValueError, match="layout 'HW' has 2 dimensions but the data has 1"):
        batch.set_layout("HW")
    assert batch.data_ptr() == data.ctypes.data
    batch.reinterpret(types.FLOAT)  # same 4-byte elements, seen as float32
    assert batch.dtype == np.float32
    assert batch.as_array().view(np.int32).tolist() == [[0, 1, 2], [3, 4, 5]]
    with pytest.raises(ValueError, match="4-byte elements, int16 2-byte ones"):
        batch.reinterpret(types.INT16)
    sample = TensorCPU(np.array([7, 8], np.uint8), "C")
    sample.reinterpret(np.int8)
    sample.set_layout("W")
    assert sample.dtype == np.int8 and sample.layout() == "W"
    assert sample.get_property("layout") == "W" and sample.get_property("source_info") == ""
    repeated = TensorListCPU.broadcast(TensorCPU(np.array([1, 2]), "A"), 3)
    assert repeated.shape() == [(2,)] * 3 and repeated.layout() == "A"
    assert repeated.as_array().tolist() == [[1, 2]] * 3
    listed = TensorListCPU.from_dlpack_list(
        [Exporter(np.ones(2)), Exporter(np.zeros(2))], "A", True
    )
    assert listed.is_dense_tensor() and listed.as_array().tolist() == [[1, 1], [0, 0]]
    listed.reset()
    assert len(listed) == 0 and listed.data_ptr() == 0


@pytest.mark.gpu
def test_gpu_batches_and_tensors_from_cupy_capsules_and_lists():
    import cupy as cp

    from chute.tensors import TensorGPU, TensorListGPU

    data = cp.arange(12, dtype=cp.float32).reshape(3, 4)
    for source in (data, data.toDlpack(), data):
        batch = TensorListGPU(source, "W")
        assert batch.shape() == [(4,), (4,), (4,)] and batch.layout() == "W"
        assert batch.as_cpu().as_array().tolist() == cp.asnumpy(data).tolist()
    ragged = TensorListGPU([cp.zeros(2, cp.uint8), TensorGPU(cp.ones(3, cp.uint8))], "X")
    assert ragged.shape() == [(2,), (3,)] and not ragged.is_dense_tensor()
    assert ragged.as_cpu().at(1).tolist() == [1, 1, 1]
    assert TensorListGPU(ragged, "Y").layout() == "Y"
    t = TensorGPU(data.toDlpack(), "HW")
    assert t.shape() == [3, 4] and t.as_cpu().as_array().tolist() == cp.asnumpy(data).tolist()
    with pytest.raises(ValueError, match="layout 'HWC' has 3 dimensions but the data has 1"):
        TensorListGPU(data, "HWC")
    with pytest.raises(TypeError, match="TensorListGPU"):
        TensorListGPU(np.zeros((2, 2)))  # host memory
    batch = TensorListGPU(cp.arange(6, dtype=cp.int32).reshape(2, 3), "X")
    batch.reinterpret(types.FLOAT)
    batch.set_layout("W")
    assert batch.dtype == np.float32 and batch.layout() == "W"
    assert batch.data_ptr() == batch.as_array().data.ptr
    repeated = TensorListGPU.broadcast(TensorGPU(cp.array([1, 2])), 3)
    assert repeated.as_cpu().as_array().tolist() == [[1, 2]] * 3
