"""chute.torch under DALI's names: DALIRaggedIterator tags, feed_ndarray, experimental.proxy."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from chute import TensorListCPU, fn, pipeline_def, types
from chute.torch import DALIRaggedIterator, feed_ndarray
from chute.torch.experimental.proxy import DALIServer, DataLoader


def ragged_pipe():
    # sample i of every batch: [i+1] * (i+1)
    @pipeline_def(batch_size=3, num_threads=1, seed=0)
    def pipe():
        ragged = fn.external_source(
            source=lambda info: np.full(info.idx_in_batch + 1, info.idx_in_batch + 1, np.int32),
            batch=False,
        )
        dense = fn.external_source(
            source=lambda info: np.full(2, info.idx_in_batch, np.float32), batch=False
        )
        return ragged, ragged, dense

    return pipe()


def test_ragged_iterator_tags():
    it = DALIRaggedIterator(
        ragged_pipe(),
        ["list", "coo", "dense"],
        size=3,
        output_types=[
            DALIRaggedIterator.SPARSE_LIST_TAG,
            DALIRaggedIterator.SPARSE_COO_TAG,
            DALIRaggedIterator.DENSE_TAG,
        ],
    )
    (batch,) = next(it)
    assert [t.tolist() for t in batch["list"]] == [[1], [2, 2], [3, 3, 3]]
    coo = batch["coo"]
    assert coo.is_sparse and coo.to_dense().tolist() == [[1, 0, 0], [2, 2, 0], [3, 3, 3]]
    assert batch["dense"].tolist() == [[0.0, 0.0], [1.0, 1.0], [2.0, 2.0]]
    assert (
        DALIRaggedIterator.DENSE_TAG,
        DALIRaggedIterator.SPARSE_LIST_TAG,
        DALIRaggedIterator.SPARSE_COO_TAG,
    ) == ("dense", "sparse_list", "sparse_coo")


def test_ragged_iterator_refuses_a_ragged_dense_output_and_unknown_tags():
    with pytest.raises(ValueError, match="'r' is ragged"):
        DALIRaggedIterator(ragged_pipe(), ["r", "c", "d"], size=3)
    with pytest.raises(ValueError, match="output_types"):
        DALIRaggedIterator(ragged_pipe(), ["r", "c", "d"], size=3, output_types=["x"] * 3)


def test_feed_ndarray_copies_a_batch_and_a_sample():
    batch = TensorListCPU(np.arange(6, dtype=np.float32).reshape(2, 3))
    target = torch.zeros(2, 3)
    assert feed_ndarray(batch, target) is target
    assert target.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    sample = torch.zeros(3)
    feed_ndarray(batch.at(1), sample)
    assert sample.tolist() == [3.0, 4.0, 5.0]
    with pytest.raises(TypeError, match="float32"):
        feed_ndarray(batch, torch.zeros(2, 3, dtype=torch.int32))
    with pytest.raises(ValueError, match="shapes differ"):
        feed_ndarray(batch, torch.zeros(3, 2))


class Squares(torch.utils.data.Dataset):
    def __init__(self, transform):
        self.transform = transform

    def __len__(self):
        return 6

    def __getitem__(self, i):
        return self.transform(np.full(2, i, np.int32))


@pipeline_def(batch_size=3, num_threads=1, seed=0)
def square_pipe():
    x = fn.external_source(name="x", dtype=types.INT32, ndim=1)
    return x * x


def test_dali_server_and_dataloader():
    with DALIServer(square_pipe()) as server:
        loader = DataLoader(server, Squares(server.proxy), batch_size=3, num_workers=0)
        batches = [b.tolist() for b in loader]
    assert batches == [[[0, 0], [1, 1], [4, 4]], [[9, 9], [16, 16], [25, 25]]]
    server = DALIServer(square_pipe())
    server.start_thread()
    try:
        loader = DataLoader(server, Squares(server.proxy), batch_size=2, num_workers=0)
        assert next(iter(loader)).tolist() == [[0, 0], [1, 1]]
    finally:
        server.stop_thread()
    with pytest.raises(NotImplementedError, match="deterministic"):
        DALIServer(square_pipe(), deterministic=True)
