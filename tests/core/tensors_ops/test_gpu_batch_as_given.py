"""TensorListGPU's samples kept as given (``shapes=``/``dtype=``): no CuPy view is made for a
sample until it is asked for, and whole-batch operations view every sample.

The CPU tests run the class over NumPy in CuPy's place (a decoder's images are stood in for
by objects that count how often they are read as arrays); the gpu-marked ones over CuPy with
images that expose only ``__cuda_array_interface__``, as nvImageCodec's do.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

from chute.gpu import batches
from chute.tensors import gpu as tensors_gpu
from chute.tensors.cpu import TensorListCPU
from chute.tensors.gpu import TensorListGPU


class _Context:
    def __enter__(self) -> _Context:
        return self

    def __exit__(self, *exc: object) -> bool:
        return False


class _FakeCuda:
    class Device(_Context):
        def __init__(self, device_id: int = 0):
            self.id = device_id

    class Stream:
        null = _Context()

    class Event:
        def __init__(self, disable_timing: bool = False):
            pass

        def record(self, stream: object = None) -> None:
            pass

        def synchronize(self) -> None:
            pass


NUMPY_AS_CUPY = types.SimpleNamespace(
    ndarray=np.ndarray,
    asarray=np.asarray,
    asnumpy=np.asarray,
    stack=np.stack,
    empty=np.empty,
    cuda=_FakeCuda,
)


class DeviceImage:
    """A decoder's image as the batch gets it: readable as an array, counting the reads."""

    def __init__(self, array: np.ndarray):
        self.array = array
        self.reads = 0

    def __array__(self, dtype: object = None, copy: object = None) -> np.ndarray:
        self.reads += 1
        return self.array


@pytest.fixture
def numpy_as_cupy(monkeypatch):
    monkeypatch.setattr(tensors_gpu, "cupy_module", lambda: NUMPY_AS_CUPY)


RNG = np.random.default_rng(5)
# a gray image decoded as HW (its declared shape is HWC with one channel), two RGB images
ARRAYS = [
    RNG.integers(0, 256, (4, 5), np.uint8),
    RNG.integers(0, 256, (3, 2, 3), np.uint8),
    RNG.integers(0, 256, (6, 1, 3), np.uint8),
]
SHAPES = np.array([[4, 5, 1], [3, 2, 3], [6, 1, 3]])
EXPECTED = [ARRAYS[0][..., None], ARRAYS[1], ARRAYS[2]]


def _images() -> list[DeviceImage]:
    return [DeviceImage(a) for a in ARRAYS]


def _batch(images: list) -> TensorListGPU:
    return TensorListGPU(images, "HWC", None, 0, shapes=SHAPES, dtype=np.uint8)


def test_samples_are_viewed_once_when_asked_for(numpy_as_cupy):
    images = _images()
    batch = _batch(images)
    assert len(batch) == 3 and batch.layout() == "HWC" and batch.dtype == np.uint8
    assert batch.shape() == [(4, 5, 1), (3, 2, 3), (6, 1, 3)]
    assert batch.nbytes == 20 + 18 + 18
    assert [i.reads for i in images] == [0, 0, 0]
    first = batch.at(0)
    assert first.shape == (4, 5, 1)
    np.testing.assert_array_equal(first, EXPECTED[0])
    assert batch.at(0) is first
    assert [i.reads for i in images] == [1, 0, 0]
    raw = batch.raw_samples()
    assert raw[0] is first and raw[1] is images[1] and raw[2] is images[2]


def test_gather_and_a_new_layout_keep_the_samples_as_given(numpy_as_cupy):
    images = _images()
    batch = _batch(images)
    picked = batch.gather([2, 0, 2])
    assert type(picked) is TensorListGPU
    assert picked.shape() == [(6, 1, 3), (4, 5, 1), (6, 1, 3)]
    again = TensorListGPU(batch, "HWC")
    assert again.shape() == batch.shape() and again.dtype == np.uint8
    assert [i.reads for i in images] == [0, 0, 0]
    np.testing.assert_array_equal(picked.at(1), EXPECTED[0])
    np.testing.assert_array_equal(again.at(2), EXPECTED[2])


def test_whole_batch_operations_view_every_sample(numpy_as_cupy):
    batch = _batch(_images())
    host = batch.as_cpu()
    assert isinstance(host, TensorListCPU) and host.layout() == "HWC"
    for i, want in enumerate(EXPECTED):
        np.testing.assert_array_equal(host.at(i), want)
    head = batch.head(2)
    assert head.shape() == [(4, 5, 1), (3, 2, 3)]
    np.testing.assert_array_equal(head.at(1), EXPECTED[1])
    padded = _batch(_images()).repeat_last(5)
    assert len(padded) == 5
    np.testing.assert_array_equal(padded.at(4), EXPECTED[2])
    signed = _batch(_images())
    signed.reinterpret(np.int8)
    assert signed.dtype == np.int8
    np.testing.assert_array_equal(signed.at(1), EXPECTED[1].view(np.int8))
    with pytest.raises(ValueError, match="ragged"):
        _batch(_images()).as_array()


def test_a_dense_batch_given_with_shapes_stacks(numpy_as_cupy):
    arrays = [RNG.integers(0, 256, (2, 3), np.uint8) for _ in range(4)]
    images = [DeviceImage(a) for a in arrays]
    batch = TensorListGPU(images, "HWC", None, 0, shapes=[[2, 3, 1]] * 4, dtype=np.uint8)
    dense = batch.as_array()
    np.testing.assert_array_equal(dense, np.stack(arrays)[..., None])
    assert [i.reads for i in images] == [1, 1, 1, 1]
    assert batch.nbytes == 24 and batch.raw_samples()[3].shape == (2, 3, 1)


def test_samples_given_with_shapes_need_their_dtype_and_a_shape_each(numpy_as_cupy):
    with pytest.raises(TypeError, match="dtype="):
        TensorListGPU(_images(), "HWC", shapes=SHAPES)
    with pytest.raises(ValueError, match=r"one row per sample.*\(2, 3\) for 3 samples"):
        TensorListGPU(_images(), "HWC", shapes=SHAPES[:2], dtype=np.uint8)
    empty = TensorListGPU([], "HWC", shapes=np.zeros((0, 3)), dtype=np.uint8)
    assert len(empty) == 0 and empty.shape() == [] and empty.nbytes == 0
    batch = _batch(_images())
    batch.reset()
    assert len(batch) == 0 and batch.shape() == []


def test_decoded_images_give_arrays_and_keep_region_notes_through_gather(numpy_as_cupy):
    images = _images()
    ctx = types.SimpleNamespace(stream=None, device_id=0)
    batch = batches.decoded_images(images, SHAPES, ctx)
    batch.keepalive = "staging buffers"
    batch.origins = np.array([[0, 0], [1, 2], [3, 4]])
    batch.full_shapes = np.array([[4, 5], [9, 9], [8, 7]])
    picked = batch.gather([1, 2])
    assert type(picked) is type(batch) and picked.keepalive == "staging buffers"
    np.testing.assert_array_equal(picked.origins, [[1, 2], [3, 4]])
    np.testing.assert_array_equal(picked.full_shapes, [[9, 9], [8, 7]])
    np.testing.assert_array_equal(batches.sample_shapes(picked), SHAPES[1:])
    assert batches.raw_samples(picked) == images[1:]
    assert [i.reads for i in images] == [0, 0, 0]
    sample = picked[1]  # a decoder's batch hands out arrays, as it did
    assert isinstance(sample, np.ndarray)
    np.testing.assert_array_equal(sample, EXPECTED[2])


# ---- on the GPU --------------------------------------------------------------------------


class CudaImage:
    """A device image readable only through ``__cuda_array_interface__`` (as nvImageCodec's)."""

    def __init__(self, array: object):
        self.array = array

    @property
    def __cuda_array_interface__(self) -> dict:
        return self.array.__cuda_array_interface__


@pytest.mark.gpu
def test_gpu_samples_as_given_match_their_arrays():
    cp = pytest.importorskip("cupy")
    arrays = [cp.asarray(a) for a in ARRAYS]
    stream = cp.cuda.Stream(non_blocking=True)
    batch = TensorListGPU(
        [CudaImage(a) for a in arrays], "HWC", stream, 0, shapes=SHAPES, dtype=np.uint8
    )
    assert batch.shape() == [tuple(s) for s in SHAPES.tolist()]
    view = batch.at(0)
    assert isinstance(view, cp.ndarray) and view.shape == (4, 5, 1)
    assert view.data.ptr == arrays[0].data.ptr  # a view: no copy
    host = batch.gather([2, 0]).as_cpu()
    np.testing.assert_array_equal(host.at(0), EXPECTED[2])
    np.testing.assert_array_equal(host.at(1), EXPECTED[0])
    whole = batch.as_cpu()
    for i, want in enumerate(EXPECTED):
        np.testing.assert_array_equal(whole.at(i), want)


@pytest.mark.gpu
def test_gpu_decoded_images_stay_unviewed_until_read():
    cp = pytest.importorskip("cupy")
    images = [CudaImage(cp.asarray(a)) for a in ARRAYS]
    ctx = types.SimpleNamespace(stream=cp.cuda.Stream(non_blocking=True), device_id=0)
    batch = batches.decoded_images(images, SHAPES, ctx)
    assert batches.raw_samples(batch) == images
    assert batch.nbytes == 56
    sample = batch[0]
    assert isinstance(sample, cp.ndarray) and sample.shape == (4, 5, 1)
    assert batches.raw_samples(batch)[1:] == images[1:]
    np.testing.assert_array_equal(cp.asnumpy(batch.at(1)), EXPECTED[1])
