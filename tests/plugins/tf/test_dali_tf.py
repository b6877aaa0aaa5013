"""chute.tf under DALI's names: DALIDataset, experimental.DALIDatasetWithInputs, DALIIterator."""

from __future__ import annotations

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from chute import fn, pipeline_def, types  # noqa: E402
from chute.tf import DALIDataset, DALIIterator, dataset_options, experimental  # noqa: E402


def counting_pipe(device_id=None):
    # sample j of batch k holds [3k + j] * 2; ends after 2 batches (an external source that stops)
    def source(info):
        if info.iteration >= 2:
            raise StopIteration
        return np.full(2, info.idx_in_epoch, np.int32)

    @pipeline_def(batch_size=3, num_threads=1, seed=1, device_id=device_id)
    def pipe():
        x = fn.external_source(source=source, batch=False)
        return x, fn.cast(x, dtype=types.FLOAT) / 2

    return pipe()


def test_dali_dataset_yields_one_run_per_element_and_restarts():
    with tf.device("/cpu:0"):
        ds = DALIDataset(
            counting_pipe(),
            output_dtypes=(tf.int32, tf.float32),
            output_shapes=((3, 2), (3, 2)),
            batch_size=3,
            device_id=None,
        )
    assert ds.element_spec[0].shape.as_list() == [3, 2]
    first = [(a.numpy()[:, 0].tolist(), b.numpy()[:, 0].tolist()) for a, b in ds]
    assert first == [([0, 1, 2], [0.0, 0.5, 1.0]), ([3, 4, 5], [1.5, 2.0, 2.5])]
    assert [a.numpy()[:, 0].tolist() for a, _ in ds] == [[0, 1, 2], [3, 4, 5]]


def test_single_dtype_gives_tensors_and_checks():
    @pipeline_def(batch_size=2, num_threads=1, seed=1)
    def one():
        return fn.external_source(
            source=lambda i: np.full(1, i.idx_in_epoch, np.int32), batch=False
        )

    with tf.device("/cpu:0"):
        ds = DALIDataset(one(), output_dtypes=tf.int32, device_id=None)
    assert [t.numpy().ravel().tolist() for t in ds.take(2)] == [[0, 1], [2, 3]]
    with tf.device("/cpu:0"):
        wrong = DALIDataset(one(), output_dtypes=tf.float32, device_id=None)
    with pytest.raises(Exception, match="holds int32 but output_dtypes"):
        next(iter(wrong))
    with pytest.raises(ValueError, match="2 outputs but output_dtypes names 1"):
        DALIDataset(counting_pipe(), output_dtypes=tf.int32)
    with pytest.raises(ValueError, match="output_dtypes"):
        DALIDataset(counting_pipe())


def test_device_mismatch():
    @pipeline_def(batch_size=2, num_threads=1, seed=1, device_id=0)
    def on_gpu():
        return fn.external_source(source=lambda i: np.zeros(1, np.int32), batch=False)

    with tf.device("/cpu:0"), pytest.raises(RuntimeError, match="placed on the CPU"):
        DALIDataset(on_gpu(), output_dtypes=tf.int32)


def test_dataset_with_inputs_samples_and_batches():
    @pipeline_def(batch_size=2, num_threads=1, seed=1)
    def doubled():
        return fn.external_source(name="x") * 2

    with tf.device("/cpu:0"):
        ds = experimental.DALIDatasetWithInputs(
            doubled(), output_dtypes=tf.int64, input_datasets={"x": tf.data.Dataset.range(5)}
        )
    assert [t.numpy().tolist() for t in ds] == [[0, 2], [4, 6], [8]]
    batches = tf.data.Dataset.from_tensor_slices(np.arange(8, dtype=np.int32).reshape(4, 2, 1))
    with tf.device("/cpu:0"):
        ds = DALIDataset(
            doubled(),
            output_dtypes=tf.int32,
            input_datasets={"x": experimental.Input(batches, batch=True)},
        )
    assert [t.numpy().ravel().tolist() for t in ds] == [[0, 2], [4, 6], [8, 10], [12, 14]]
    with pytest.raises(ValueError, match="no fn.external_source named \\['y'\\]"):
        experimental.DALIDatasetWithInputs(
            doubled(), output_dtypes=tf.int64, input_datasets={"y": tf.data.Dataset.range(2)}
        )


def test_dali_iterator_dense_and_sparse():
    @pipeline_def(batch_size=2, num_threads=1, seed=1)
    def ragged():
        x = fn.external_source(
            source=lambda i: np.full(i.idx_in_batch + 1, 7, np.int32), batch=False
        )
        return x, fn.external_source(source=lambda i: np.ones(2, np.float32), batch=False)

    op = DALIIterator()
    sparse, dense = op(pipeline=ragged(), sparse=[True, False], dtypes=[tf.int32, tf.float32])
    assert tf.sparse.to_dense(sparse).numpy().tolist() == [[7, 0], [7, 7]]
    assert dense.numpy().tolist() == [[1.0, 1.0], [1.0, 1.0]]


def test_dataset_options():
    options = dataset_options()
    assert options.experimental_optimization.apply_default_optimizations is False
    assert options.autotune.enabled is False
