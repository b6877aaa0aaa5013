"""types, TensorList / Tensor, legacy fn names, fn.transpose and operators outside a pipeline."""

from __future__ import annotations

import ctypes
import warnings

import numpy as np
import pytest

import chute.surface
from chute import Pipeline, fn, pipeline_def, types
from chute.tensors import TensorCPU, TensorListCPU


def test_data_types_map_to_numpy():
    assert types.to_numpy_type(types.INT32) is np.int32
    assert types.to_numpy_type(types.DALIDataType.FLOAT) is np.float32
    assert types.to_numpy_type(types.UINT8) is np.uint8
    assert np.dtype(np.int64) == types.DALIDataType.INT64
    assert types.DALIImageType.RGB is types.RGB
    assert types.DALIInterpType.INTERP_LINEAR is types.INTERP_LINEAR


def test_layout_constants_are_tensor_layouts():
    assert (types.NHWC, types.NCHW, types.NFHWC, types.NFCHW) == ("HWC", "CHW", "FHWC", "FCHW")
    assert isinstance(types.NCHW, types.TensorLayout) and isinstance(types.NCHW, str)

    @pipeline_def(batch_size=1, num_threads=1)
    def pipe():
        x = fn.external_source(
            source=lambda info: np.zeros((2, 3, 3), np.uint8), batch=False, layout=types.NHWC
        )
        return fn.transpose(x, perm=[2, 0, 1])

    (out,) = pipe().run()
    assert out.layout() == types.NCHW and out.at(0).shape == (3, 2, 3)


def test_constant_scalars_and_arrays():
    c = types.Constant(10, types.UINT8)
    assert isinstance(c, types.ScalarConstant) and c.value == 10 and c.dtype == np.uint8
    assert float(types.Constant(1.5)) == 1.5

    @pipeline_def(batch_size=2, num_threads=1)
    def pipe():
        x = fn.external_source(source=lambda info: np.array([250, 10], np.uint8), batch=False)
        table = types.Constant(np.array([[1, 2], [3, 4]], np.int16), layout="HW")
        listed = types.Constant([1, 2, 3])
        return x + c, table, listed, fn.random.coin_flip(probability=types.Constant(1.0))

    summed, table, listed, flips = pipe().run()
    assert summed.dtype == np.uint8 and summed.at(0).tolist() == [4, 20]  # uint8 wraps
    assert table.layout() == "HW" and table.at(1).tolist() == [[1, 2], [3, 4]]
    assert listed.dtype == np.int32 and listed.at(0).tolist() == [1, 2, 3]
    assert flips.as_array().tolist() == [1, 1]  # the ScalarConstant's value reached the operator
    with pytest.raises(RuntimeError, match="inside a @pipeline_def"):
        types.Constant(np.zeros(3))


def test_tensor_list_indexing_gives_tensors():
    batch = TensorListCPU(
        np.arange(12, dtype=np.int16).reshape(2, 2, 3),
        "HW",
        meta=[{"source_info": "a.jpg"}, {"source_info": "b.jpg"}],
    )
    t = batch[1]
    assert isinstance(t, TensorCPU)
    assert t.shape() == [2, 3] and t.layout() == "HW" and t.dtype == types.INT16
    assert np.asarray(t).tolist() == [[6, 7, 8], [9, 10, 11]]
    assert t.as_array() is batch.at(1) or np.shares_memory(t.as_array(), batch.at(1))
    assert np.from_dlpack(t).tolist() == [[6, 7, 8], [9, 10, 11]]
    assert t.source_info() == "b.jpg"
    assert isinstance(batch.at(0), np.ndarray)  # at(i) stays NumPy
    assert [x.shape() for x in batch] == [[2, 3], [2, 3]] and len(batch) == 2
    assert batch.source_info() == ["a.jpg", "b.jpg"]


def test_tensor_list_as_tensor_reshaped_array_and_copy_to_external():
    batch = TensorListCPU([np.arange(3, dtype=np.float32), np.arange(3, 6, dtype=np.float32)], "W")
    assert batch.is_dense_tensor() and batch.layout() == "W"
    tensor = batch.as_tensor()
    assert isinstance(tensor, TensorCPU) and tensor.shape() == [2, 3] and tensor.layout() == "NW"
    assert batch.as_reshaped_tensor([3, 2]).as_array().tolist() == [[0, 1], [2, 3], [4, 5]]
    with pytest.raises(ValueError, match="cannot view 6 elements as shape"):
        batch.as_reshaped_tensor([4, 2])
    assert batch.as_array().tolist() == [[0, 1, 2], [3, 4, 5]]
    target = np.zeros((2, 3), np.float32)
    batch.copy_to_external(target.ctypes.data)
    assert target.tolist() == [[0, 1, 2], [3, 4, 5]]
    buf = (ctypes.c_float * 3)()
    batch[1].copy_to_external(ctypes.c_void_p(ctypes.addressof(buf)))
    assert list(buf) == [3.0, 4.0, 5.0]
    ragged = TensorListCPU([np.zeros(2, np.uint8), np.zeros(3, np.uint8)])
    assert not ragged.is_dense_tensor()
    with pytest.raises(ValueError, match="ragged"):
        ragged.as_tensor()


def test_legacy_names_warn_once_with_dalis_text(monkeypatch):
    monkeypatch.setattr(chute.surface, "_warned", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        @pipeline_def(batch_size=2, num_threads=1, seed=0)
        def pipe():
            return fn.coin_flip(probability=1.0), fn.coin_flip(), fn.uniform(range=(0.0, 1.0))

        flips, _, draws = pipe().run()
        pipe()
    messages = [str(w.message) for w in caught if w.category is DeprecationWarning]
    assert [m.splitlines()[0] for m in messages] == [
        "WARNING: `coin_flip` is now deprecated. Use `random.coin_flip` instead.",
        "WARNING: `uniform` is now deprecated. Use `random.uniform` instead.",
    ]
    assert flips.as_array().tolist() == [1, 1]
    assert fn.file_reader.alias_of == "readers.file"
    assert fn.image_decoder.alias_of == "decoders.image"


def test_transpose_without_perm_reverses_the_axes():
    @pipeline_def(batch_size=1, num_threads=1)
    def pipe():
        x = fn.external_source(
            source=lambda info: np.arange(24).reshape(2, 3, 4), batch=False, layout="ABC"
        )
        return fn.transpose(x)

    (out,) = pipe().run()
    assert out.at(0).shape == (4, 3, 2) and out.layout() == "CBA"
    np.testing.assert_array_equal(out.at(0), np.arange(24).reshape(2, 3, 4).T)


def test_operators_outside_a_pipeline_raise_a_clear_error():
    with pytest.raises(RuntimeError, match=r"fn.random.uniform was called outside a pipeline"):
        fn.random.uniform(range=(0.0, 1.0))
    pipe = Pipeline(batch_size=1)
    with pipe:
        x = fn.random.uniform(range=(0.0, 1.0))
    with pytest.raises(RuntimeError, match=r"fn.flip was called outside a pipeline"):
        fn.flip(x)


def test_operator_arguments_none_means_default_and_no_double_definition():
    from chute import ops

    @pipeline_def(batch_size=1, num_threads=1)
    def pipe():
        x = fn.external_source(
            source=lambda info: np.arange(4).reshape(1, 4, 1), batch=False, layout="HWC"
        )
        return fn.flip(x, horizontal=None, vertical=None)  # defaults: horizontal=1

    (out,) = pipe().run()
    assert out.at(0).ravel().tolist() == [3, 2, 1, 0]
    flip = ops.Flip(horizontal=1)
    with Pipeline(batch_size=1):
        x = fn.random.uniform(range=(0.0, 1.0), shape=(1, 2, 1))
        with pytest.raises(ValueError, match="`horizontal` was already specified in __init__"):
            flip(x, horizontal=0)
