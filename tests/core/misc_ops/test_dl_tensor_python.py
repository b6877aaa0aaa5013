"""fn.dl_tensor_python_function: the function gets DLPack capsules and gives capsules (or
objects with __dlpack__), per sample or per batch, on the CPU and (marked gpu) the GPU."""

from __future__ import annotations

import numpy as np
import pytest
from misc_helpers import run

from chute import OperatorError, fn, ops


class _Cap:
    """np.from_dlpack reads objects with __dlpack__; the function gets bare capsules."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


def _array(capsule) -> np.ndarray:
    assert type(capsule).__name__ == "PyCapsule"
    return np.from_dlpack(_Cap(capsule))


BATCH = [np.arange(6, dtype=np.int32).reshape(2, 3), np.full((1, 4), 7, np.int32)]


def test_per_sample_capsules_in_and_out():
    def double(capsule):
        return (_array(capsule) * 2).__dlpack__()  # a capsule back

    (out,) = run(lambda x: fn.dl_tensor_python_function(x, function=double), BATCH)
    for i, x in enumerate(BATCH):
        np.testing.assert_array_equal(out.at(i), x * 2)


def test_batch_processing_lists_and_several_outputs():
    seen = []

    def split(capsules, others):
        seen.append((len(capsules), len(others)))
        xs = [_array(c) for c in capsules]
        return [x + 1 for x in xs], [np.asarray(x.sum(), np.int64) for x in xs]  # arrays back

    plus, total = run(
        lambda x, y: fn.dl_tensor_python_function(
            x, y, function=split, batch_processing=True, num_outputs=2, output_layouts=["AB", None]
        ),
        BATCH,
        BATCH,
    )
    assert seen and set(seen) == {(2, 2)}  # one call per batch (prefetching runs ahead)
    assert plus.layout() == "AB"
    np.testing.assert_array_equal(plus.at(1), BATCH[1] + 1)
    assert [int(total.at(i)) for i in range(2)] == [15, 28]


def test_read_only_inputs_are_handed_over_as_copies():
    frozen = [x.copy() for x in BATCH]
    for x in frozen:
        x.flags.writeable = False
    (out,) = run(
        lambda x: fn.dl_tensor_python_function(x, function=lambda c: _array(c)[:, :1].copy()),
        frozen,
    )
    np.testing.assert_array_equal(out.at(0), [[0], [3]])


def test_wrong_output_count_and_bad_function():
    with pytest.raises(OperatorError, match="must return 2 outputs"):
        run(
            lambda x: fn.dl_tensor_python_function(x, function=lambda c: c, num_outputs=2),
            BATCH,
        )
    with pytest.raises(TypeError, match="argument 'function' must be callable"):
        run(lambda x: fn.dl_tensor_python_function(x, function=3), BATCH)
    assert ops.DLTensorPythonFunction.schema.name == "dl_tensor_python_function"


@pytest.mark.gpu
def test_gpu_capsules_point_to_device_memory():
    import cupy as cp

    from chute.ops.dl_tensor_python import to_capsule

    def square(capsule):
        x = cp.from_dlpack(_DeviceCap(capsule))
        return to_capsule(x * x)

    (out,) = run(
        lambda x: fn.dl_tensor_python_function(x.gpu(), function=square), BATCH, device_id=0
    )
    for i, x in enumerate(BATCH):
        np.testing.assert_array_equal(out.at(i), x * x)


class _DeviceCap(_Cap):
    def __dlpack_device__(self):
        return (2, 0)
