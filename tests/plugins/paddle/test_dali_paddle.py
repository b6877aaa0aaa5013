"""chute.paddle under DALI's names: output_map with (name, lod_level) pairs."""

from __future__ import annotations

import pytest

pytest.importorskip("paddle")

from chute import fn, pipeline_def
from chute.paddle import DALIGenericIterator


def index_pipe(files):
    @pipeline_def(batch_size=2, num_threads=1, seed=1)
    def pipe():
        return fn.readers.file(files=files, name="Reader")

    return pipe()


@pytest.fixture
def three_files(tmp_path):
    paths = []
    for i in range(3):
        (tmp_path / f"{i}.bin").write_bytes(bytes([10 + i]))
        paths.append(str(tmp_path / f"{i}.bin"))
    return paths


def test_output_map_takes_name_and_lod_level_pairs(three_files):
    it = DALIGenericIterator(index_pipe(three_files), [("data", 0), "label"], reader_name="Reader")
    batches = [
        (b["data"].numpy().ravel().tolist(), b["label"].numpy().ravel().tolist()) for (b,) in it
    ]
    assert batches == [([10, 11], [0, 1]), ([12, 10], [2, 0])]
    with pytest.raises(ValueError, match="lod_level=1"):
        DALIGenericIterator(index_pipe(three_files), [("data", 1), "label"], reader_name="Reader")
