"""on_error="skip" when a reader's outputs go straight to the user (no step reads them)."""

from __future__ import annotations

import os

import numpy as np
import pytest

from chute import fn, pipeline_def


@pytest.fixture
def dataset_with_fifo(tmp_path):
    root = tmp_path / "data"
    (root / "a").mkdir(parents=True)
    for i in range(5):
        (root / "a" / f"{i}.jpg").write_bytes(bytes([i + 1]) * (10 + i))
    os.mkfifo(root / "a" / "2.jpg.fifo.jpg")  # sorts after 2.jpg: the fourth file
    return root


def test_reader_outputs_alone_skip_and_report_the_bad_file(dataset_with_fifo):
    @pipeline_def(batch_size=6, num_threads=1, device_id=None, seed=0, on_error="skip")
    def pipe():
        jpegs, labels = fn.readers.file(file_root=str(dataset_with_fifo), name="r")
        return jpegs, labels

    p = pipe()
    p.build()
    jpegs, labels = p.run()
    meta = jpegs.meta
    real = [m.get("real", True) for m in meta]
    assert real == [True] * 5 + [False]
    # the five regular files, each once, in order; the FIFO's slot holds a copy, not real
    got = [bytes(np.asarray(jpegs.at(i))) for i in range(5)]
    assert got == [bytes([i + 1]) * (10 + i) for i in range(5)]
    assert len(bytes(np.asarray(jpegs.at(5)))) > 0
    (entry,) = p.errors()
    assert entry["path"].endswith("2.jpg.fifo.jpg")
    assert "not a regular file" in entry["reason"]
    p.close()
