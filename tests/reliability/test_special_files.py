"""A FIFO, device or socket among a dataset's files is an error (or a skip), never a hang."""

from __future__ import annotations

import os
import socket
import threading
import time

import numpy as np
import pytest
from PIL import Image

from chute import OperatorError, fn, pipeline_def
from chute.ops.readers import local_files as file_reader

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs (POSIX)")

DEADLINE_S = 1.0


def _keep_releasing(fifo: str, seconds: float = 30.0) -> None:
    """Unblock readers stuck opening ``fifo`` (the code before the fix), for a while: each
    open to write lets one blocked open for reading return, and read end of file."""

    def loop():
        end = time.monotonic() + seconds
        while time.monotonic() < end and os.path.exists(fifo):
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                pass  # nobody is reading it now
            time.sleep(0.01)

    threading.Thread(target=loop, daemon=True).start()


def _within(seconds: float, call, fifo: str):
    """``call()``'s result or exception, failing the test if it takes longer than ``seconds``."""
    box: dict = {}

    def target():
        try:
            box["value"] = call()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    start = time.monotonic()
    thread.start()
    thread.join(seconds)
    elapsed = time.monotonic() - start
    if thread.is_alive():
        _keep_releasing(fifo)
        thread.join(5)
        pytest.fail(f"reading a FIFO blocked for more than {seconds} s")
    return box, elapsed


@pytest.fixture(params=["native", "python"])
def read_path(request, monkeypatch):
    if request.param == "native":
        if file_reader._native_read is None:
            pytest.skip("chute.runtime._native is not built")
    else:
        monkeypatch.setattr(file_reader, "_native_read", None)
    return request.param


@pytest.fixture
def dataset_with_fifo(tmp_path):
    (tmp_path / "c").mkdir()
    for name in ("a.png", "c.png"):
        Image.fromarray(np.full((4, 4, 3), 7, np.uint8)).save(tmp_path / "c" / name)
    fifo = str(tmp_path / "c" / "b.png")
    os.mkfifo(fifo)
    return tmp_path, fifo


def _pipe(root, on_error):
    @pipeline_def(batch_size=3, num_threads=1, seed=0, on_error=on_error)
    def pipe():
        data, _ = fn.readers.file(file_root=str(root), name="R")
        return fn.decoders.image(data)

    return pipe()


def test_read_files_refuses_a_fifo(tmp_path, read_path):
    fifo = str(tmp_path / "pipe.bin")
    os.mkfifo(fifo)
    regular = tmp_path / "f.bin"
    regular.write_bytes(b"abc")
    box, _ = _within(DEADLINE_S, lambda: file_reader.read_files([fifo, str(regular)]), fifo)
    out = box["value"]
    assert isinstance(out[0], str) and fifo in out[0] and "not a regular file" in out[0]
    assert out[1].tobytes() == b"abc"


def test_read_file_refuses_a_fifo_and_a_socket(tmp_path):
    fifo = str(tmp_path / "pipe.bin")
    os.mkfifo(fifo)
    box, _ = _within(DEADLINE_S, lambda: file_reader.read_file(fifo), fifo)
    assert isinstance(box.get("error"), OSError) and "not a regular file" in str(box["error"])
    with socket.socket(socket.AF_UNIX) as server:
        path = str(tmp_path / "sock")
        server.bind(path)
        with pytest.raises(OSError, match="sock"):
            file_reader.read_file(path)


@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="no /dev/null")
def test_read_files_refuses_a_character_device(read_path):
    # (/dev/null, not /dev/zero: read as a file before the fix, /dev/zero filled memory)
    (out,) = file_reader.read_files(["/dev/null"])
    assert isinstance(out, str) and "/dev/null" in out and "character device" in out


def test_fifo_in_dataset_raises_operator_error(dataset_with_fifo, read_path):
    root, fifo = dataset_with_fifo
    p = _pipe(root, "raise")
    box, elapsed = _within(DEADLINE_S, p.run, fifo)
    p.close()
    error = box.get("error")
    assert isinstance(error, OperatorError), box
    assert fifo in str(error) and "not a regular file" in str(error)
    assert elapsed < DEADLINE_S


def test_fifo_in_dataset_is_skipped(dataset_with_fifo, read_path):
    root, fifo = dataset_with_fifo
    p = _pipe(root, "skip")
    box, _ = _within(DEADLINE_S, p.run, fifo)
    errors = p.errors()
    p.close()
    assert "error" not in box, box.get("error")
    (images,) = box["value"]  # the batch is filled with the next files in order
    assert [images.at(i).shape for i in range(len(images))] == [(4, 4, 3)] * 3
    assert [e["path"] for e in errors] == [fifo]
    assert "not a regular file" in errors[0]["reason"]


def test_read_processes_refuse_a_fifo(tmp_path):
    """The helper processes that read files for GPU decoders never block on a FIFO."""
    from chute.ops.readers.read_processes import ReadProcesses

    if not ReadProcesses.available():
        pytest.skip("helper processes need memfd (Linux)")
    regular = tmp_path / "a.jpg"
    regular.write_bytes(b"\xff\xd8 seven")
    fifo = tmp_path / "b.jpg"
    os.mkfifo(fifo)
    processes = ReadProcesses(1, blocks=1, block_bytes=1 << 20)
    results: list = []
    # the worker is another process: a blocked read would block read() itself
    thread = threading.Thread(
        target=lambda: results.append(processes.read([str(regular), str(fifo)], wait_s=1.0)),
        daemon=True,
    )
    thread.start()
    thread.join(5)
    try:
        if thread.is_alive():
            _keep_releasing(fifo)
            pytest.fail("reading a FIFO in a helper process blocked for more than 5 s")
        (result,) = results
        assert bytes(result[0]) == b"\xff\xd8 seven"
        assert isinstance(result[1], str) and "not a regular file" in result[1]
        assert str(fifo) in result[1]
    finally:
        processes.close()


@pytest.mark.parametrize("recursive", [True, False])
def test_chute_check_names_a_fifo_instead_of_blocking(dataset_with_fifo, recursive):
    """``chute check`` reads as readers.file does: before, it blocked on the FIFO forever."""
    from chute.tools.check import check

    root, fifo = dataset_with_fifo
    folder = str(root / "c")
    box, elapsed = _within(DEADLINE_S, lambda: check(folder, recursive, 1, False, False), fifo)
    report = box["value"]
    assert report.files == 3
    assert [(b.path, b.reason, b.category) for b in report.bad] == [
        (fifo, "cannot read: not a regular file (a FIFO)", "unreadable")
    ]
    # named on the command line, it is checked and refused too (was "no image files")
    box, _ = _within(DEADLINE_S, lambda: check(fifo, progress=False), fifo)
    assert [b.reason for b in box["value"].bad] == ["cannot read: not a regular file (a FIFO)"]


def _record_reader(kind: str, tmp_path, fifo: str):
    """A range reader (chute.ops.readers.ranges) over a FIFO: numpy or tfrecord."""
    if kind == "numpy":
        good = str(tmp_path / "a.npy")
        np.save(good, np.arange(4))
        return lambda: fn.readers.numpy(files=[good, fifo], name="R")
    from chute import tfrecord

    index = tmp_path / "f.idx"
    index.write_text("0 100\n")
    features = {"x": tfrecord.FixedLenFeature([], tfrecord.int64, -1)}
    return lambda: fn.readers.tfrecord(
        path=[fifo], index_path=[str(index)], features=features, name="R"
    )["x"]


@pytest.mark.parametrize("kind", ["numpy", "tfrecord"])
def test_range_readers_refuse_a_fifo(tmp_path, kind):
    """numpy, tfrecord, webdataset and mxnet read ranges of files: before, os.open of a
    FIFO waited for a writer forever."""
    fifo = str(tmp_path / ("b.npy" if kind == "numpy" else "data.tfrecord"))
    os.mkfifo(fifo)
    reader = _record_reader(kind, tmp_path, fifo)

    @pipeline_def(batch_size=2, num_threads=1, seed=0, device_id=None)
    def pipe():
        return reader()

    p = pipe()
    p.build()
    box, elapsed = _within(DEADLINE_S, p.run, fifo)
    p.close()
    error = box.get("error")
    assert isinstance(error, OperatorError), box
    assert fifo in str(error) and "not a regular file (a FIFO)" in str(error)
    assert elapsed < DEADLINE_S


def test_open_regular_names_what_it_refuses(tmp_path):
    assert file_reader._not_regular(os.stat(tmp_path).st_mode) == "not a regular file (a directory)"
    with pytest.raises(file_reader.NotRegularFile, match="not a regular file \\(a directory\\)"):
        file_reader.open_regular(str(tmp_path))
    regular = tmp_path / "f.bin"
    regular.write_bytes(b"xyz")
    fd = file_reader.open_regular(str(regular))
    try:
        assert os.get_blocking(fd) and os.read(fd, 10) == b"xyz"
    finally:
        os.close(fd)
