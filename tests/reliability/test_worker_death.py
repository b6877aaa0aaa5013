"""A worker process of a parallel operator that dies (SIGKILL, the OOM killer) is an error
within seconds that names it and the sample, never a pipeline that waits forever; no
process or shared-memory segment stays behind (issue 30, item 3)."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
import time

import numpy as np
import pytest

from chute import fn, pipeline_def

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="POSIX signals")

DEADLINE_S = 10.0


def _shm() -> set[str]:
    return (
        {n for n in os.listdir("/dev/shm") if n.startswith("chute")}
        if os.path.isdir("/dev/shm")
        else set()
    )


def _within(seconds: float, call):
    """(finished, result or exception) of ``call`` run in a daemon thread."""
    box: dict = {}

    def target():
        try:
            box["value"] = call()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    return not thread.is_alive(), box


def _no_children_within(seconds: float, before: frozenset = frozenset()) -> list:
    """Child processes (other than those in ``before``) still alive after ``seconds``."""

    def left() -> list:
        return [c for c in multiprocessing.active_children() if c.pid not in before]

    end = time.monotonic() + seconds
    while left() and time.monotonic() < end:
        time.sleep(0.05)
    return left()


def _children() -> frozenset:
    """The pids of the children alive now (an earlier test's may still be exiting)."""
    return frozenset(c.pid for c in multiprocessing.active_children())


def _killing_source(victim: int):
    def source(info):
        if info.idx_in_epoch == victim:
            os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer would
        return np.full((2,), info.idx_in_epoch, np.int32)

    return source


def _killing_function(victim: int):
    def function(x):
        if int(x[0]) == victim:
            os.kill(os.getpid(), signal.SIGKILL)
        return x * 2

    return function


def _check_death(pipe, steps: int, sample: int, children: frozenset) -> None:
    before = _shm()
    done, box = _within(DEADLINE_S, lambda: [pipe.run() for _ in range(steps)])
    closed, _ = _within(DEADLINE_S, pipe.close)
    assert done, f"pipe.run() still waits {DEADLINE_S} s after a worker was killed"
    assert closed, "pipe.close() hangs after a worker was killed"
    error = box.get("error")
    assert error is not None, "a killed worker went unnoticed"
    message = str(error)
    assert "worker process" in message and "SIGKILL" in message, message
    assert f"sample {sample}" in message, message
    assert _no_children_within(5, children) == []
    assert _shm() - before == set()


def test_killed_external_source_worker_is_an_error_naming_it():
    @pipeline_def(batch_size=4, num_threads=1, seed=0, py_num_workers=2, py_start_method="fork")
    def pipe():
        return fn.external_source(source=_killing_source(6), batch=False, parallel=True, name="src")

    children = _children()
    p = pipe()
    _check_death(p, 3, 6, children)


def test_killed_python_function_worker_is_an_error_naming_it():
    @pipeline_def(batch_size=4, num_threads=1, seed=0, py_num_workers=2, py_start_method="fork")
    def pipe():
        x = fn.external_source(
            source=lambda info: np.array([info.idx_in_epoch], np.int64), batch=False
        )
        return fn.python_function(x, function=_killing_function(5), parallel=True)

    children = _children()
    p = pipe()
    _check_death(p, 3, 1, children)  # the 6th sample is sample 1 of the second batch


def test_pipeline_runs_on_after_a_worker_died_between_batches():
    """A worker killed while idle lost no work: the next batches come from fresh workers."""
    children = _children()

    # not pipelined: the second batch must not be computed (by the victim) before the kill
    @pipeline_def(
        batch_size=4,
        num_threads=1,
        seed=0,
        py_num_workers=2,
        py_start_method="fork",
        exec_pipelined=False,
        exec_async=False,
    )
    def pipe():
        x = fn.external_source(
            source=lambda info: np.array([info.idx_in_epoch], np.int64), batch=False
        )
        return fn.python_function(
            x, function=lambda v: (v * 2, os.getpid()), num_outputs=2, parallel=True
        )

    p = pipe()
    done, box = _within(DEADLINE_S, p.run)
    assert done and "error" not in box, box
    (_, pids) = box["value"]
    victim = int(pids.at(0))
    os.kill(victim, signal.SIGKILL)
    time.sleep(0.3)
    done, box = _within(DEADLINE_S, p.run)
    closed, _ = _within(DEADLINE_S, p.close)
    assert done and closed
    assert "error" not in box, box.get("error")
    (doubled, pids) = box["value"]
    assert [int(doubled.at(i)[0]) for i in range(4)] == [8, 10, 12, 14]
    assert victim not in {int(pids.at(i)) for i in range(4)}
    assert _no_children_within(5, children) == []


# ---- the same under "spawn": workers start fresh and get the callables pickled by name ----


def test_killed_spawned_external_source_worker_is_an_error_naming_it():
    import _death_helpers as helpers

    @pipeline_def(batch_size=4, num_threads=1, seed=0, py_num_workers=2, py_start_method="spawn")
    def pipe():
        return fn.external_source(
            source=helpers.kill_at_sample_6, batch=False, parallel=True, name="src"
        )

    children = _children()
    p = pipe()
    p.build()
    (first,) = p.run()  # the spawned workers start (slowly) outside the deadline
    assert [int(first.at(i)[0]) for i in range(4)] == [0, 1, 2, 3]
    _check_death(p, 2, 6, children)


def test_killed_spawned_python_function_worker_is_an_error_naming_it():
    import _death_helpers as helpers

    @pipeline_def(batch_size=4, num_threads=1, seed=0, py_num_workers=2, py_start_method="spawn")
    def pipe():
        x = fn.external_source(
            source=lambda info: np.array([info.idx_in_epoch], np.int64), batch=False
        )
        return fn.python_function(x, function=helpers.kill_at_value_5, parallel=True)

    children = _children()
    p = pipe()
    p.build()
    (first,) = p.run()
    assert [int(first.at(i)[0]) for i in range(4)] == [0, 2, 4, 6]
    _check_death(p, 2, 1, children)  # the 6th sample is sample 1 of the second batch
