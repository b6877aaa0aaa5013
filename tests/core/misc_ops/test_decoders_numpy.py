"""fn.decoders.numpy: .npy bytes decode to what np.load gives; dtype converts; bad files raise."""

from __future__ import annotations

import io

import numpy as np
import pytest
from misc_helpers import npy_bytes, run

from chute import OperatorError, fn


@pytest.mark.parametrize(
    "array",
    [
        np.arange(12, dtype=np.float32).reshape(3, 4),
        np.asfortranarray(np.arange(24, dtype=np.int16).reshape(2, 3, 4)),
        np.array([True, False, True]).reshape(3, 1),
        np.zeros((0, 5), np.uint16),
        np.arange(5, dtype=">i4").reshape(5, 1),  # big-endian data: native values out
    ],
    ids=["c_f32", "fortran_i16", "bool", "empty", "big_endian"],
)
def test_decodes_what_np_load_gives(array):
    (out,) = run(lambda x: fn.decoders.numpy(x), [npy_bytes(array), npy_bytes(array[:1])])
    for i, want in enumerate([array, array[:1]]):
        got = out.at(i)
        np.testing.assert_array_equal(got, np.load(io.BytesIO(npy_bytes(want).tobytes())))
        assert got.dtype == want.dtype.newbyteorder("=") and got.shape == want.shape


def test_dtype_converts_with_rounding_and_saturation():
    src = np.array([[-5.6, 300.4], [2.5, 3.5]], np.float32)
    (out,) = run(lambda x: fn.decoders.numpy(x, dtype=np.uint8), [npy_bytes(src)])
    np.testing.assert_array_equal(out.at(0), [[0, 255], [3, 4]])  # halves away from zero (DALI)
    assert out.dtype == np.uint8


def test_version_2_header():
    buf = io.BytesIO()
    np.lib.format.write_array(buf, np.arange(4.0), version=(2, 0))
    (out,) = run(lambda x: fn.decoders.numpy(x), [np.frombuffer(buf.getvalue(), np.uint8)])
    np.testing.assert_array_equal(out.at(0), [0.0, 1.0, 2.0, 3.0])


@pytest.mark.parametrize(
    "sample, message",
    [
        (np.frombuffer(b"PK\x03\x04 not numpy", np.uint8), "not a .npy file"),
        (npy_bytes(np.arange(10.0))[:-8], "truncated .npy data"),
        (npy_bytes(np.ones(3, np.complex64)), "complex arrays are not supported"),
        (np.zeros(0, np.uint8), "input sample is empty"),
    ],
    ids=["magic", "truncated", "complex", "empty"],
)
def test_bad_files_raise_naming_the_operator(sample, message):
    with pytest.raises(OperatorError, match=message) as info:
        run(lambda x: fn.decoders.numpy(x), [sample])
    assert "decoders.numpy" in str(info.value)


def test_wrong_input_type_and_mixed_batch():
    with pytest.raises(OperatorError, match="1-D uint8 tensor of .npy file bytes, got 1-D float32"):
        run(lambda x: fn.decoders.numpy(x), [np.zeros(4, np.float32)])
    mixed = [npy_bytes(np.zeros(2, np.float32)), npy_bytes(np.zeros(2, np.int32))]
    with pytest.raises(Exception, match="one dtype"):
        run(lambda x: fn.decoders.numpy(x), mixed)
    (same,) = run(lambda x: fn.decoders.numpy(x, dtype=np.float64), mixed)
    assert same.dtype == np.float64
    with pytest.raises(TypeError, match="argument 'dtype'"):
        run(lambda x: fn.decoders.numpy(x, dtype=np.complex64), mixed)
