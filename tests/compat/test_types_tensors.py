"""types, TensorList / Tensor, legacy fn names, fn.transpose and operators outside a pipeline."""

from __future__ import annotations

import ctypes
import warnings

import cv2
import numpy as np
import pytest

import chute.runtime.deprecated
from chute import Pipeline, fn, ops, pipeline_def, types
from chute.tensors import TensorCPU, TensorListCPU


def test_data_types_map_to_numpy():
    assert types.to_numpy_type(types.INT32) is np.int32
    assert types.to_numpy_type(types.DALIDataType.FLOAT) is np.float32
    assert types.to_numpy_type(types.UINT8) is np.uint8
    assert np.dtype(np.int64) == types.DALIDataType.INT64
    assert types.DALIImageType.RGB is types.RGB
    assert types.DALIInterpType.INTERP_LINEAR is types.INTERP_LINEAR


def test_data_type_enum_has_dalis_members_and_values():
    # DALI 2.4's DALIDataType, as nvidia.dali.types lists it
    expected = {
        "NO_TYPE": -1, "UINT8": 0, "UINT16": 1, "UINT32": 2, "UINT64": 3, "INT8": 4,
        "INT16": 5, "INT32": 6, "INT64": 7, "FLOAT16": 8, "FLOAT": 9, "FLOAT64": 10,
        "BOOL": 11, "STRING": 12, "_BOOL_VEC": 13, "_INT32_VEC": 14, "_STRING_VEC": 15,
        "_FLOAT_VEC": 16, "FEATURE": 17, "_FEATURE_VEC": 18, "_FEATURE_DICT": 19,
        "IMAGE_TYPE": 20, "DATA_TYPE": 21, "INTERP_TYPE": 22, "TENSOR_LAYOUT": 23,
        "PYTHON_OBJECT": 24, "_TENSOR_LAYOUT_VEC": 25, "_DATA_TYPE_VEC": 26, "_INT64_VEC": 27,
    }  # fmt: skip
    assert {k: int(v) for k, v in types.DALIDataType.__members__.items()} == expected
    assert types.FLOAT is types.DALIDataType.FLOAT and types.DALIDataType(9) is types.FLOAT
    assert types.FLOAT == 9 and str(types.FLOAT) == "DALIDataType.FLOAT"
    assert repr(types.UINT8) == "<DALIDataType.UINT8: 0>"
    # and each element type stands for its NumPy dtype
    assert np.dtype(types.FLOAT16) == np.float16
    assert types.FLOAT == np.float32  # noqa: SIM300  (the enum on the left is the point)
    assert np.float32 == types.FLOAT
    assert np.zeros(2, types.UINT16).dtype == np.uint16
    assert np.arange(3).astype(types.INT8).dtype == np.int8
    assert types.to_dali_type(np.float64) is types.FLOAT64
    assert types.to_dali_type(np.dtype(np.bool_)) is types.BOOL
    assert types.to_dali_type("torch.int16") is types.INT16  # str(torch.int16), as DALI reads it
    with pytest.raises(TypeError, match="IMAGE_TYPE is not an element type"):
        types.to_numpy_type(types.IMAGE_TYPE)
    with pytest.raises(TypeError, match="complex64"):
        types.to_dali_type(np.complex64)


def test_image_and_interp_types_have_dalis_values_and_work_as_arguments():
    assert {k: int(v) for k, v in types.DALIImageType.__members__.items()} == {
        "RGB": 0, "BGR": 1, "GRAY": 2, "YCbCr": 3, "ANY_DATA": 4, "HSV": 100,
    }  # fmt: skip
    assert {k: int(v) for k, v in types.DALIInterpType.__members__.items()} == {
        "INTERP_NN": 0, "INTERP_LINEAR": 1, "INTERP_CUBIC": 2, "INTERP_LANCZOS3": 3,
        "INTERP_TRIANGULAR": 4, "INTERP_GAUSSIAN": 5,
    }  # fmt: skip
    assert types.INTERP_LINEAR.arg == "linear" and types.YCbCr.arg == "YCbCr"
    assert types.GRAY.channels == 1 and types.ANY_DATA.channels is None

    @pipeline_def(batch_size=1, num_threads=1)
    def pipe(interp):
        x = fn.external_source(
            source=lambda info: np.array([[[0], [100]]], np.uint8), batch=False, layout="HWC"
        )
        gray = fn.color_space_conversion(
            fn.cat(x, x, x, axis=2), image_type=types.RGB, output_type=types.GRAY
        )
        return fn.resize(x, size=(1, 4), interp_type=interp), gray

    nn, gray = pipe(types.INTERP_NN).run()
    linear, _ = pipe(types.INTERP_LINEAR).run()
    assert nn.at(0)[0, :, 0].tolist() == [0, 0, 100, 100]
    assert linear.at(0)[0, :, 0].tolist() == [0, 25, 75, 100]
    assert gray.at(0)[:, :, 0].tolist() == [[0, 100]]


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
    monkeypatch.setattr(chute.runtime.deprecated, "_warned", set())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        @pipeline_def(batch_size=2, num_threads=1, seed=0)
        def pipe():
            return fn.coin_flip(probability=1.0), fn.coin_flip(), fn.uniform(range=(0.0, 1.0))

        flips, _, draws = pipe().run()
        pipe()
    messages = [str(w.message) for w in caught if w.category is DeprecationWarning]
    assert messages == [  # DALI 2.4's first line, in chute's module names
        "WARNING: `chute.fn.coin_flip` is now deprecated. Use `chute.fn.random.coin_flip` instead.",
        "WARNING: `chute.fn.uniform` is now deprecated. Use `chute.fn.random.uniform` instead.",
    ]
    assert all(w.filename == __file__ for w in caught)  # pointing at the caller's line
    assert flips.as_array().tolist() == [1, 1]
    assert fn.file_reader.alias_of == "readers.file"
    assert fn.image_decoder.alias_of == "decoders.image"


def test_legacy_ops_classes_warn_when_applied_as_dalis_do(monkeypatch):
    monkeypatch.setattr(chute.runtime.deprecated, "_warned", set())

    class Legacy(Pipeline):
        def __init__(self):
            super().__init__(batch_size=2, num_threads=1, seed=0)
            self.coin = ops.CoinFlip(probability=1.0)  # no warning yet: DALI warns on use
            self.shapes = ops.Shapes()
            self.equalize = ops.experimental.Equalize()
            self.values = ops.random.Uniform(range=(0.0, 1.0))  # today's name: no warning

        def define_graph(self):
            flips = self.coin()
            row = fn.cast(fn.stack(flips * 0, flips * 9), dtype=types.UINT8)
            image = fn.stack(row, row)  # [[0, 9], [0, 9]]
            return flips, self.shapes(image), self.equalize(image), self.values()

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        pipe = Legacy()
        assert not caught
        flips, shapes, equalized, _ = pipe.run()
    assert [str(w.message) for w in caught] == [
        "WARNING: `chute.ops.CoinFlip` is now deprecated. Use `chute.fn.random.coin_flip` instead.",
        "WARNING: `chute.ops.Shapes` is now deprecated.\nUse DataNode.shape() instead.",
        "WARNING: `chute.ops.experimental.Equalize` is now deprecated. Use `chute.fn.equalize` "
        "instead.\nThe operator left the experimental module; this name stays as an alias.",
    ]
    assert {w.category for w in caught} == {DeprecationWarning}
    assert flips.as_array().tolist() == [1, 1]
    assert shapes.as_array().tolist() == [[2, 2], [2, 2]]
    expected = cv2.equalizeHist(np.array([[0, 9], [0, 9]], np.uint8))
    assert equalized.as_array().tolist() == [expected.tolist()] * 2
    assert isinstance(pipe.coin, ops.random.CoinFlip) and ops.CoinFlip.__bases__ == (
        ops.random.CoinFlip,
    )


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
