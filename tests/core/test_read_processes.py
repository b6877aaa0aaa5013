"""ReadProcesses: files read by helper processes into shared memory, blocks reused when free."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from chute.ops.readers.read_processes import ReadProcesses

pytestmark = pytest.mark.skipif(not ReadProcesses.available(), reason="needs memfd_create (Linux)")


@pytest.fixture
def files(tmp_path):
    rng = np.random.default_rng(0)
    paths = []
    for i, size in enumerate([0, 1, 100, 5000, 70_001, 3000]):
        paths.append(str(tmp_path / f"f{i}.bin"))
        with open(paths[-1], "wb") as f:
            f.write(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
    return paths


def _bytes(path):
    with open(path, "rb") as f:
        return f.read()


def test_bytes_errors_and_files_too_big_for_the_block(files, tmp_path):
    # 2 workers share a 64 KiB block: the 70,001-byte file comes back through the pipe
    reader = ReadProcesses(workers=2, blocks=2, block_bytes=64 * 1024)
    missing = str(tmp_path / "missing.jpg")
    out = reader.read([*files, missing])
    assert [o.tobytes() for o in out[:-1]] == [_bytes(p) for p in files]
    assert isinstance(out[-1], str) and "missing.jpg" in out[-1]
    assert all(not o.flags.writeable for o in out[:-1])
    reader.close()


def test_blocks_come_back_when_their_last_view_is_gone(files):
    reader = ReadProcesses(workers=1, blocks=2, block_bytes=1 << 20)
    first = reader.read(files)
    kept = first[3]  # one file's view keeps its whole block in use
    second = reader.read(files)
    assert reader.read(files, wait_s=0.01) is None  # both blocks in use: caller reads itself
    assert reader.fallbacks == 1
    del first, second
    gc.collect()
    third = reader.read(files, wait_s=0.01)  # the second block is free again
    assert third is not None and [o.tobytes() for o in third] == [_bytes(p) for p in files]
    assert kept.tobytes() == _bytes(files[3])  # not overwritten while held
    reader.close()
    assert reader.read(files) is None  # closed: the caller reads


def test_a_dead_worker_makes_the_caller_read_itself(files):
    reader = ReadProcesses(workers=1, blocks=2, block_bytes=1 << 20)
    assert reader.read(files) is not None
    reader._procs[0].kill()
    reader._procs[0].wait()
    assert reader.read(files) is None
    assert reader.broken is not None


def test_workers_that_cannot_start_leave_reading_to_the_caller(files, monkeypatch):
    import chute.ops.readers.read_processes as rp

    monkeypatch.setattr(rp, "_WORKER", "/nonexistent/worker.py")
    monkeypatch.setattr(rp.sys, "executable", "/nonexistent/python")
    reader = rp.ReadProcesses(workers=1, blocks=1, block_bytes=1 << 20)
    assert reader.read(files) is None
    assert "cannot start" in reader.broken
