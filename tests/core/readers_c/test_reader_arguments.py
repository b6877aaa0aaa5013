"""Reader arguments that chute honours beyond the sample order: prefetch_queue_depth and
read_ahead (local files; the remote case is in tests/core/remote)."""

from __future__ import annotations

import time

import numpy as np
import pytest

from chute import fn, pipeline_def
from chute.ops.readers.ranges import FileRanges


def _reads_ahead(root, reader_depth: int) -> int:
    """How many batches the reader stage has read once the user took one and it settled."""

    @pipeline_def(
        batch_size=2, num_threads=1, device_id=None, prefetch_queue_depth=1, exec_pipelined=True
    )
    def pipe():
        data, _ = fn.readers.file(file_root=str(root), name="R", prefetch_queue_depth=reader_depth)
        return data

    p = pipe()
    p.build()
    p.run()
    calls, stable_since = -1, time.monotonic()
    while time.monotonic() - stable_since < 0.5:  # no further read for half a second
        now = p.executor_statistics()["R"]["calls"]
        if now != calls:
            calls, stable_since = now, time.monotonic()
        time.sleep(0.02)
    p.close()
    return calls


def test_reader_prefetch_queue_depth_lets_the_reader_run_further_ahead(tmp_path):
    (tmp_path / "c").mkdir()
    for i in range(80):
        (tmp_path / "c" / f"{i:02d}.jpg").write_bytes(bytes([i]))
    shallow = _reads_ahead(tmp_path, 1)
    deep = _reads_ahead(tmp_path, 6)
    # the queue between the reader and the computation holds 6 batches instead of 1
    assert deep - shallow == 5


def test_read_ahead_advises_local_files_once_and_reads_the_same_bytes(tmp_path):
    path = tmp_path / "blob.bin"
    path.write_bytes(bytes(range(256)) * 64)
    for use_mmap in (False, True):
        plain = FileRanges([str(path)], use_mmap=use_mmap)
        ahead = FileRanges([str(path)], use_mmap=use_mmap, read_ahead=True)
        for offset, size in ((0, 10), (300, 1000), (16380, 100)):
            expected = (np.arange(offset, offset + size) % 256).astype(np.uint8)[: 16384 - offset]
            np.testing.assert_array_equal(plain.read(0, offset, size), expected)
            np.testing.assert_array_equal(ahead.read(0, offset, size), expected)
        assert (plain.advised, ahead.advised) == (0, 1)
        plain.close()
        ahead.close()


def _epochs(files, epochs, **kwargs):
    @pipeline_def(batch_size=len(files), num_threads=1, device_id=None, seed=3)
    def pipe():
        data, _ = fn.readers.file(files=files, **kwargs)
        return data

    p = pipe()
    p.build()
    out = []
    for _ in range(epochs):
        data = p.run()[0]
        out.append([int(np.asarray(data[i])[0]) for i in range(len(data))])
        for _ in range(100):
            try:
                p.run()
            except StopIteration:
                p.reset()
                break
    p.close()
    return out


def test_file_reader_shuffle_after_epoch(tmp_path):
    files = []
    for i in range(8):
        (tmp_path / f"{i}.jpg").write_bytes(bytes([i]))
        files.append(str(tmp_path / f"{i}.jpg"))
    epochs = _epochs(files, 3, shuffle_after_epoch=True)
    assert epochs[0] == list(range(8))  # the first epoch in order
    assert all(sorted(e) == list(range(8)) for e in epochs[1:])
    assert epochs[1] != list(range(8)) and epochs[1] != epochs[2]
    # two shards: the halves of the same permutation (shards rotate between epochs)
    halves = [
        _epochs(files[:], 3, shuffle_after_epoch=True, shard_id=k, num_shards=2) for k in (0, 1)
    ]
    for e in range(3):
        assert sorted(h[e][:4] for h in halves) == sorted([epochs[e][:4], epochs[e][4:]])
    with pytest.raises(ValueError, match="'shuffle_after_epoch' and 'random_shuffle'"):
        _epochs(files, 1, shuffle_after_epoch=True, random_shuffle=True)
