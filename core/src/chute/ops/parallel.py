"""Worker processes for Python code that holds the GIL.

``fn.python_function(..., parallel=True)`` and ``fn.external_source(...,
parallel=True)`` run their callable in ``py_num_workers`` processes started
with the pipeline's ``py_start_method``. Each such node owns its pool,
started at build time, so that under "fork" the callable is inherited (it
need not be picklable) and under "spawn"/"forkserver" it is pickled once.

Results come back through shared memory (``multiprocessing.shared_memory``):
a worker packs a chunk's arrays into one segment and returns only its name
and the arrays' shapes; the pipeline copies them out and unlinks the segment.
Arguments go to the workers pickled. Samples keep their order; an exception
in a worker is raised in the pipeline naming the sample index and carrying
the worker's traceback.

A worker that dies (killed by a signal, by the OOM killer) breaks its pool
(``concurrent.futures``' BrokenProcessPool, which watches the workers' process
sentinels): the waiting call raises :class:`WorkerDied` at once, naming the
worker, the operator and the sample the worker was computing (each worker
records it in a small shared array), unlinks the segments of the lost work
(their names are chosen here, not by the workers) and starts fresh workers
for the next call.

This module is the pipeline's side (the pool, its errors, the parallel
external_source); what runs in the workers and the shared-memory format are in
:mod:`chute.ops.parallel_worker`.
"""

from __future__ import annotations

import gc
import itertools
import multiprocessing
import os
import signal
import weakref
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import resource_tracker, shared_memory
from typing import Any, NamedTuple

import numpy as np

from chute.ops.external_source import ExternalSourceReader
from chute.ops.parallel_worker import FORK_CALLABLES, init_worker, ready, run_task, unpack
from chute.types import BatchInfo, SampleInfo

__all__ = [
    "ParallelExternalSourceReader",
    "ProcessPool",
    "WorkerDied",
    "WorkerError",
    "close_worker_processes",
]

_tokens = itertools.count()
_segments = itertools.count()
# Pools of python_function nodes, by pipeline, closed with it.
_PIPELINE_POOLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class WorkerError(RuntimeError):
    """A callable failed in a worker process; ``index`` is the sample (or None for a batch)."""

    def __init__(self, index: int | None, message: str):
        self.index = index
        super().__init__(message)


class WorkerDied(WorkerError):
    """A worker process ended (killed, out of memory, crashed) while work was waiting on it.

    ``lost_work``: whether it died in the middle of a task (not between two)."""

    def __init__(self, index: int | None, message: str, lost_work: bool):
        self.lost_work = lost_work
        super().__init__(index, message)


def _check(result: tuple) -> tuple:
    if result[0] == "error":
        _, index, message, text = result
        where = f"sample {index}" if index is not None else "the batch"
        raise WorkerError(index, f"{where} failed in a worker process: {message}\n{text}")
    return result


class Pending(NamedTuple):
    """Work handed to the pool: its future and the shared-memory segment it writes."""

    future: Future
    segment: str
    task: tuple


class ProcessPool:
    """``num_workers`` processes that run one callable on chunks of samples or whole batches.

    ``label`` names the operator in errors (a worker that died names it).
    """

    def __init__(
        self,
        function: Callable,
        num_workers: int,
        start_method: str | None = "fork",
        label: str = "a parallel operator",
    ):
        self.num_workers = max(1, int(num_workers or 1))
        self.label = label
        method = start_method or multiprocessing.get_start_method()
        self._context = multiprocessing.get_context(method)
        # Started here so that workers share it and segments unlinked here are forgotten there.
        resource_tracker.ensure_running()
        self._token = None
        if method == "fork":
            self._token = next(_tokens)
            FORK_CALLABLES[self._token] = function
            self._function = None
        else:
            self._function = function
        self._prefix = f"chute_{os.getpid()}_{next(_tokens)}_"
        # executor, its worker processes by pid, progress array: replaced when a worker dies
        self._workers: dict[str, Any] = {"executor": None, "processes": {}}
        self._finalizer = weakref.finalize(self, _shutdown, self._workers, self._token)
        self._start()

    def _start(self) -> None:
        n = self.num_workers
        progress = self._context.Array("q", 2 * n, lock=False)
        count = self._context.Value("i", 0)
        executor = ProcessPoolExecutor(
            n,
            mp_context=self._context,
            initializer=init_worker,
            initargs=(self._token, self._function, progress, count),
        )
        self._workers.update(executor=executor, processes={}, progress=progress)
        # Start the workers now (under fork all at once, while the pipeline builds) rather
        # than when the first batch is under way.
        for _ in range(n):
            executor.submit(ready)
        self._note_processes()

    def _note_processes(self) -> None:
        # The executor's own table (no public accessor): who may die, for the error message.
        self._workers["processes"].update(getattr(self._workers["executor"], "_processes", {}))

    def _submit(self, task: tuple) -> Pending:
        segment = f"{self._prefix}{next(_segments)}"
        if self._workers["executor"] is None:
            self._start()
        try:
            future = self._workers["executor"].submit(run_task, segment, task)
        except BrokenProcessPool:  # a worker died between calls: no work was lost
            self._restart()
            future = self._workers["executor"].submit(run_task, segment, task)
        self._note_processes()
        return Pending(future, segment, task)

    def _restart(self) -> None:
        _stop_workers(self._workers)
        self._start()

    def _chunks(self, n: int) -> list[range]:
        parts = min(n, self.num_workers * 2)
        bounds = [round(k * n / parts) for k in range(parts + 1)] if parts else [0]
        return [range(a, b) for a, b in itertools.pairwise(bounds) if b > a]

    def map_samples(self, arg_tuples: Sequence[tuple], num_outputs: int) -> list[list[np.ndarray]]:
        """``function(*args)`` for every sample, in order: one list of output arrays per sample."""
        pending = [
            self._submit(("samples", r.start, [arg_tuples[i] for i in r], num_outputs))
            for r in self._chunks(len(arg_tuples))
        ]
        return self.collect(pending)[0]

    def call_batch(self, lists: Sequence[list], num_outputs: int) -> list[list[np.ndarray]]:
        """``function(*lists)`` once in a worker: one list of samples per output."""
        return self.collect([self._submit(("batch", list(lists), num_outputs))])[0]

    def submit_source(self, infos: list[SampleInfo], num_outputs: int) -> list[Pending]:
        """Start per-sample source calls; ``collect`` gives the results in order."""
        return [
            self._submit(("source", infos[r.start : r.stop], num_outputs))
            for r in self._chunks(len(infos))
        ]

    def submit_source_batch(self, arg: Any, num_outputs: int) -> Pending:
        return self._submit(("source_batch", arg, num_outputs))

    def results(self, pending: list[Pending]) -> list[tuple]:
        """The workers' answers to ``pending``, in order.

        If a worker dies in the middle of a task: WorkerDied, after freeing what the
        others produced. If it died between tasks (no work of its own lost, but the
        executor dropped the queued work with it), the work runs again on fresh workers.
        """
        retried = False
        while True:
            results: list[tuple | None] = []
            for p in pending:
                try:
                    results.append(p.future.result())
                except BrokenProcessPool:
                    results.append(None)
            if all(r is not None for r in results):
                return results  # type: ignore[return-value]
            error = self._died()  # first: no worker may write a segment after its unlink
            for p, r in zip(pending, results):
                if r is None:
                    _unlink(p.segment)
                elif r[0] == "ok":
                    unpack(r[1])
            if error.lost_work or retried:
                raise error
            retried = True
            pending = [self._submit(p.task) for p in pending]

    def collect(self, pending: list[Pending]) -> tuple[list[list[np.ndarray]], int | None]:
        """Wait for ``pending`` and unpack it: (samples in order, first StopIteration's place)."""
        return self._collect(self.results(pending))

    def discard(self, pending: list[Pending]) -> None:
        """Wait for work nobody will use and free its shared memory."""
        lost = []
        for p in pending:
            try:
                result = p.future.result()
            except Exception:
                lost.append(p.segment)
                continue
            if result[0] == "ok":
                unpack(result[1])
        if lost:  # a worker died: stop the others before their segments are unlinked
            _stop_workers(self._workers)
            self._workers.update(executor=None, processes={})
            for segment in lost:
                _unlink(segment)

    def _died(self) -> WorkerDied:
        """The error for a worker that died; fresh workers are started for the next call."""
        workers = self._workers
        progress = workers["progress"]
        _stop_workers(workers)  # joins them all: every exit code is known
        doing = {progress[2 * k]: progress[2 * k + 1] for k in range(len(progress) // 2)}
        dead = [
            (pid, p.exitcode)
            for pid, p in workers["processes"].items()
            if p.exitcode not in (0, -signal.SIGTERM)  # the others, terminated by the executor
        ] or [(pid, p.exitcode) for pid, p in workers["processes"].items()]
        workers["processes"] = {}
        parts, index, lost = [], None, False
        for pid, code in dead:
            step = doing.get(pid, 0)
            lost = lost or step != 0
            what = "between samples" if step == 0 else "on the whole batch"
            if step > 0:
                what = f"while computing sample {step - 1}"
                index = step - 1 if index is None else index
            parts.append(f"worker process {pid} {_exit_reason(code)} {what}")
        workers["executor"] = None  # started again on the next call
        return WorkerDied(
            index,
            f"{self.label}: {'; '.join(parts)}. The work it held is lost; a worker killed by "
            "SIGKILL is often the out-of-memory killer's doing (lower py_num_workers or the "
            "memory each sample needs). Fresh workers serve the next batch.",
            lost,
        )

    def _collect(self, results: list[tuple]) -> tuple[list[list[np.ndarray]], int | None]:
        """Unpack every chunk (unlinking all segments even after an error); stop = first
        StopIteration's position."""
        out: list[list[np.ndarray]] = []
        error = None
        stop = None
        for result in results:
            if result[0] == "ok":
                items = unpack(result[1])
                if stop is None:
                    out.extend(items)
                    stop = result[2]
            elif error is None and stop is None:
                error = result
        if error is not None:
            _check(error)
        return out, stop

    def close(self) -> None:
        self._finalizer()


def _exit_reason(code: int | None) -> str:
    if code is None:
        return "died"
    if code < 0:
        try:
            return f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with status {code}"


def _unlink(segment: str) -> None:
    """Remove a segment that a dead worker may have left (or never made)."""
    try:
        shm = shared_memory.SharedMemory(name=segment)
    except (FileNotFoundError, ValueError):
        return
    shm.close()
    shm.unlink()


def _stop_workers(workers: dict[str, Any]) -> None:
    """Stop an executor's processes now (work in progress is dropped) and join them."""
    executor = workers.get("executor")
    if executor is None:
        return
    # (read before shutdown(), which forgets them)
    processes = {**workers["processes"], **(getattr(executor, "_processes", None) or {})}
    workers["processes"] = processes
    executor.shutdown(wait=False, cancel_futures=True)
    for p in processes.values():
        if p.exitcode is None:
            p.terminate()
    for p in processes.values():
        p.join()
    executor.shutdown(wait=True)


def _shutdown(workers: dict[str, Any], token: int | None) -> None:
    _stop_workers(workers)
    # The Process objects hold the executor's queues, whose semaphores (named, under
    # spawn) live as long as they do.
    workers.update(executor=None, processes={})
    gc.collect()  # the executor's queues sit in reference cycles: free their semaphores now
    if token is not None:
        FORK_CALLABLES.pop(token, None)


def pool_for_node(node: Any, function: Callable, pipeline: Any = None) -> ProcessPool:
    """The process pool of a python_function node, closed with ``pipeline`` (None: one
    worker started by fork, closed with the pool)."""
    workers = pipeline.py_num_workers if pipeline is not None else 1
    method = pipeline.py_start_method if pipeline is not None else "fork"
    pool = ProcessPool(function, workers, method, getattr(node, "label", "fn.python_function"))
    if pipeline is not None:
        _PIPELINE_POOLS.setdefault(pipeline, []).append(pool)
    return pool


def close_worker_processes(pipeline: Any) -> None:
    """Stop the worker processes of a pipeline's python_function nodes."""
    for pool in _PIPELINE_POOLS.pop(pipeline, []):
        pool.close()


class ParallelExternalSourceReader(ExternalSourceReader):
    """external_source(parallel=True): the callable runs in worker processes, a batch ahead."""

    def __init__(self, node: Any, pipeline: Any):
        super().__init__(node)
        if self._mode != "callable":
            raise TypeError(
                f"{self.label}: parallel=True needs a callable source (per sample with "
                "batch=False and a SampleInfo argument, or per batch); iterables, generators "
                "and feed_input run in the main process with parallel=False"
            )
        self._pool = ProcessPool(
            self.source, pipeline.py_num_workers, pipeline.py_start_method, self.label
        )
        self._ahead: tuple[tuple, Any] | None = None  # (position, pending results)

    def _next_raw(self, batch_size: int) -> Any:
        if self.batch:
            return self._next_batch_call()
        position = (self.epoch, self.iteration, self.idx_in_epoch, batch_size)
        pending = self._take_ahead(position)
        if pending is None:
            pending = self._pool.submit_source(self._infos(*position), self.num_outputs)
        samples, stop = self._pool.collect(pending)
        if stop == 0 or not samples:
            raise StopIteration
        if stop is None:  # a full batch: start the next one while this one is processed
            nxt = (self.epoch, self.iteration + 1, self.idx_in_epoch + batch_size, batch_size)
            self._ahead = (nxt, self._pool.submit_source(self._infos(*nxt), self.num_outputs))
        return [s[0] if self.num_outputs == 1 else tuple(s) for s in samples]

    def _infos(self, epoch: int, iteration: int, start: int, n: int) -> list[SampleInfo]:
        return [SampleInfo(start + i, i, iteration, epoch) for i in range(n)]

    def _next_batch_call(self) -> Any:
        for attempt in (0, 1):
            arg = None
            if self._accepts_argument():
                arg = BatchInfo(self.iteration, self.epoch) if self.batch_info else self.iteration
            pending = self._pool.submit_source_batch(arg, self.num_outputs)
            (result,) = self._pool.results([pending])
            result = _check(result)
            if result[0] != "stop":
                outs, _ = self._pool._collect([result])
                return outs[0] if self.num_outputs == 1 else outs
            if self.cycle != "quiet" or attempt:
                raise StopIteration
            self.iteration = 0
        raise StopIteration

    def _take_ahead(self, position: tuple) -> Any:
        ahead, self._ahead = self._ahead, None
        if ahead is None:
            return None
        if ahead[0] == position:
            return ahead[1]
        self._drop(ahead[1])
        return None

    def _drop(self, pending: list[Pending]) -> None:
        self._pool.discard(pending)

    def reset(self) -> None:
        super().reset()
        if self._ahead is not None:
            self._drop(self._ahead[1])
            self._ahead = None

    def restore(self, state: dict[str, Any]) -> None:
        super().restore(state)
        if self._ahead is not None:
            self._drop(self._ahead[1])
            self._ahead = None

    def close(self) -> None:
        if self._ahead is not None:
            self._drop(self._ahead[1])
            self._ahead = None
        self._pool.close()
