"""chute.jax under DALI's names: data_iterator's decorator arguments, the clu peekable iterator."""

from __future__ import annotations

import pytest

jax = pytest.importorskip("jax")

from chute import fn  # noqa: E402
from chute.jax import DALIGenericIterator, data_iterator  # noqa: E402
from chute.jax.clu import DALIGenericPeekableIterator, peekable_data_iterator  # noqa: E402


@pytest.fixture
def five_files(tmp_path):
    paths = []
    for i in range(5):
        (tmp_path / f"{i}.bin").write_bytes(bytes([i]))
        paths.append(str(tmp_path / f"{i}.bin"))
    return paths


def test_decorator_takes_pipeline_arguments(five_files):
    @data_iterator(output_map=["data", "label"], reader_name="R", batch_size=2, num_threads=1)
    def iterator_fn():
        return fn.readers.file(files=five_files, name="R")

    it = iterator_fn(seed=0)
    assert isinstance(it, DALIGenericIterator) and len(it) == 3
    assert [b["data"].ravel().tolist() for b in it] == [[0, 1], [2, 3], [4, 0]]
    with pytest.raises(ValueError, match="batch_size given both"):
        iterator_fn(batch_size=4)


def test_peekable_iterator(five_files):
    @peekable_data_iterator(output_map=["data", "label"], reader_name="R")
    def iterator_fn():
        return fn.readers.file(files=five_files, name="R")

    it = iterator_fn(batch_size=2, num_threads=1, seed=0)
    assert isinstance(it, DALIGenericPeekableIterator)
    assert it.element_spec["data"].shape == (2, 1)
    assert it.peek()["data"].ravel().tolist() == [0, 1]
    assert next(it)["data"].ravel().tolist() == [0, 1]
    assert it.peek_async().result()["data"].ravel().tolist() == [2, 3]
    assert next(it)["label"].ravel().tolist() == [2, 3]
