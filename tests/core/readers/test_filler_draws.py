"""Random draws of samples that a reader repeats to fill a batch.

A batch larger than what is left of the shard is filled by repeating its samples (marked
not real). A sample's stream is keyed by its dataset index and epoch, so that it draws the
same wherever it lands; a filler must not share the stream of the sample it repeats (a
batch of 32 over 8 images gave every coin flip four times).
"""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, pipeline_def


@pytest.fixture
def three_files(tmp_path):
    for k in range(3):
        (tmp_path / "a").mkdir(exist_ok=True)
        (tmp_path / "a" / f"{k}.jpg").write_bytes(bytes([k]) * (k + 1))
    return tmp_path


def _draws(root, batch_size: int, pad_last_batch: bool = False) -> tuple[list, list]:
    @pipeline_def(batch_size=batch_size, num_threads=1, device_id=None, seed=9)
    def pipe():
        data, _ = fn.readers.file(file_root=str(root), pad_last_batch=pad_last_batch)
        return data, fn.random.uniform(range=(0.0, 1.0))

    p = pipe()
    p.build()
    data, draws = p.run()
    first = [int(np.asarray(data.at(i))[0]) for i in range(batch_size)]
    return first, [float(np.asarray(draws.at(i))) for i in range(batch_size)]


@pytest.mark.parametrize("pad_last_batch", [False, True])
def test_fillers_draw_their_own_numbers(three_files, pad_last_batch):
    index, draws = _draws(three_files, 8, pad_last_batch)
    exact_index, exact_draws = _draws(three_files, 3)
    assert index[:3] == exact_index == [0, 1, 2]
    # the real samples draw as they do in a batch of exactly the shard
    assert draws[:3] == exact_draws
    # the five fillers repeat samples but not their draws
    assert len(set(draws)) == 8, draws
