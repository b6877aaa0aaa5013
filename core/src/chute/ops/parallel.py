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
"""

from __future__ import annotations

import itertools
import multiprocessing
import traceback
import weakref
from collections.abc import Callable, Sequence
from multiprocessing import resource_tracker, shared_memory
from typing import Any

import numpy as np

from chute.ops.external_source import ExternalSourceReader
from chute.types import BatchInfo, SampleInfo

__all__ = ["ParallelExternalSourceReader", "ProcessPool", "WorkerError", "close_worker_processes"]

_ALIGN = 64
_tokens = itertools.count()
# Callables handed to forked workers through inherited memory, by token.
_FORK_CALLABLES: dict[int, Callable] = {}
# Pools of python_function nodes, by pipeline, closed with it.
_PIPELINE_POOLS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


class WorkerError(RuntimeError):
    """A callable failed in a worker process; ``index`` is the sample (or None for a batch)."""

    def __init__(self, index: int | None, message: str):
        self.index = index
        super().__init__(message)


# ---- worker side ---------------------------------------------------------------------------
_worker_function: Callable | None = None


def _init_worker(token: int | None, function: Callable | None) -> None:
    global _worker_function
    _worker_function = _FORK_CALLABLES[token] if token is not None else function


def _pack(items: Sequence[Sequence[np.ndarray]]) -> tuple[str | None, list]:
    """Put every array of every item into one shared-memory segment; return its description."""
    arrays = [a for item in items for a in item]
    offsets, total = [], 0
    for a in arrays:
        offsets.append(total)
        if a.dtype != object:
            total += -(-a.nbytes // _ALIGN) * _ALIGN
    shm = shared_memory.SharedMemory(create=True, size=total) if total else None
    layout, k = [], 0
    for item in items:
        entry = []
        for a in item:
            if a.dtype == object:  # not plain memory: pickled along with the description
                entry.append(("inline", a))
            else:
                if shm is not None and a.nbytes:
                    view = np.ndarray(a.shape, a.dtype, buffer=shm.buf, offset=offsets[k])
                    view[...] = a
                    del view
                entry.append((offsets[k], a.shape, a.dtype.str))
            k += 1
        layout.append(entry)
    name = None
    if shm is not None:
        name = shm.name
        shm.close()
    return name, layout


def _sample_arrays(result: Any, num_outputs: int) -> list[np.ndarray]:
    if num_outputs == 0:
        return []
    if num_outputs == 1:
        return [np.asarray(result)]
    if not isinstance(result, (tuple, list)) or len(result) != num_outputs:
        raise ValueError(
            f"the function must return {num_outputs} outputs (num_outputs={num_outputs}), "
            f"got {type(result).__name__}"
        )
    return [np.asarray(r) for r in result]


def _failure(index: int | None, exc: BaseException) -> tuple:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return ("error", index, f"{type(exc).__name__}: {exc}", text)


def _run_task(task: tuple) -> tuple:
    """Run one chunk in a worker: ("samples", start, args, n_out) / ("batch", args, n_out) /
    ("source", infos, n_out) / ("source_batch", arg, n_out)."""
    kind = task[0]
    fn = _worker_function
    items: list[list[np.ndarray]] = []
    stop = None
    try:
        if kind == "samples":
            _, start, arg_tuples, n_out = task
            for k, args in enumerate(arg_tuples):
                try:
                    items.append(_sample_arrays(fn(*args), n_out))
                except Exception as exc:
                    return _failure(start + k, exc)
        elif kind == "source":
            _, infos, n_out = task
            for info in infos:
                try:
                    items.append(_sample_arrays(fn(info), n_out))
                except StopIteration:
                    stop = info.idx_in_batch
                    break
                except Exception as exc:
                    return _failure(info.idx_in_epoch, exc)
        elif kind == "batch":
            _, lists, n_out = task
            try:
                result = fn(*lists)
            except Exception as exc:
                return _failure(None, exc)
            outs = [result] if n_out == 1 else list(result)
            items = [[np.asarray(s) for s in out] for out in outs]
        else:  # "source_batch"
            _, arg, n_out = task
            try:
                result = fn() if arg is None else fn(arg)
            except StopIteration:
                return ("stop", None)
            except Exception as exc:
                return _failure(None, exc)
            outs = [result] if n_out == 1 else list(result)
            items = [[np.asarray(s) for s in out] for out in outs]
        return ("ok", _pack(items), stop)
    except Exception as exc:  # packing failed (e.g. out of shared memory)
        return _failure(None, exc)


# ---- pipeline side ---------------------------------------------------------------------------
def _unpack(packed: tuple[str | None, list]) -> list[list[np.ndarray]]:
    """Copy the arrays out of a worker's segment and unlink it."""
    name, layout = packed
    shm = shared_memory.SharedMemory(name=name) if name is not None else None
    try:
        out = []
        for entry in layout:
            item = []
            for desc in entry:
                if desc[0] == "inline":
                    item.append(desc[1])
                    continue
                offset, shape, dtype = desc
                dt = np.dtype(dtype)
                if shm is None or not int(np.prod(shape)):
                    item.append(np.empty(shape, dt))
                else:
                    item.append(np.ndarray(shape, dt, buffer=shm.buf, offset=offset).copy())
            out.append(item)
        return out
    finally:
        if shm is not None:
            shm.close()
            shm.unlink()


def _check(result: tuple) -> tuple:
    if result[0] == "error":
        _, index, message, text = result
        where = f"sample {index}" if index is not None else "the batch"
        raise WorkerError(index, f"{where} failed in a worker process: {message}\n{text}")
    return result


class ProcessPool:
    """``num_workers`` processes that run one callable on chunks of samples or whole batches."""

    def __init__(self, function: Callable, num_workers: int, start_method: str | None = "fork"):
        self.num_workers = max(1, int(num_workers or 1))
        method = start_method or multiprocessing.get_start_method()
        context = multiprocessing.get_context(method)
        # Started here so that workers share it and segments unlinked here are forgotten there.
        resource_tracker.ensure_running()
        self._token = None
        if method == "fork":
            self._token = next(_tokens)
            _FORK_CALLABLES[self._token] = function
            initargs: tuple = (self._token, None)
        else:
            initargs = (None, function)
        self._pool = context.Pool(self.num_workers, initializer=_init_worker, initargs=initargs)
        self._finalizer = weakref.finalize(self, _shutdown, self._pool, self._token)

    def _chunks(self, n: int) -> list[range]:
        parts = min(n, self.num_workers * 2)
        bounds = [round(k * n / parts) for k in range(parts + 1)] if parts else [0]
        return [range(a, b) for a, b in itertools.pairwise(bounds) if b > a]

    def map_samples(self, arg_tuples: Sequence[tuple], num_outputs: int) -> list[list[np.ndarray]]:
        """``function(*args)`` for every sample, in order: one list of output arrays per sample."""
        tasks = [
            ("samples", r.start, [arg_tuples[i] for i in r], num_outputs)
            for r in self._chunks(len(arg_tuples))
        ]
        return self._collect(self._pool.map(_run_task, tasks))[0]

    def call_batch(self, lists: Sequence[list], num_outputs: int) -> list[list[np.ndarray]]:
        """``function(*lists)`` once in a worker: one list of samples per output."""
        return self._collect([self._pool.apply(_run_task, (("batch", list(lists), num_outputs),))])[
            0
        ]

    def submit_source(self, infos: list[SampleInfo], num_outputs: int) -> list:
        """Start per-sample source calls; ``collect_source`` gives the results in order."""
        tasks = [("source", infos[r.start : r.stop], num_outputs) for r in self._chunks(len(infos))]
        return [self._pool.apply_async(_run_task, (t,)) for t in tasks]

    def submit_source_batch(self, arg: Any, num_outputs: int) -> Any:
        return self._pool.apply_async(_run_task, (("source_batch", arg, num_outputs),))

    def _collect(self, results: list[tuple]) -> tuple[list[list[np.ndarray]], int | None]:
        """Unpack every chunk (unlinking all segments even after an error); stop = first
        StopIteration's position."""
        out: list[list[np.ndarray]] = []
        error = None
        stop = None
        for result in results:
            if result[0] == "ok":
                items = _unpack(result[1])
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


def _shutdown(pool: Any, token: int | None) -> None:
    pool.terminate()
    pool.join()
    if token is not None:
        _FORK_CALLABLES.pop(token, None)


def pool_for_node(node: Any, function: Callable, pipeline: Any = None) -> ProcessPool:
    """The process pool of a python_function node, closed with ``pipeline`` (None: one
    worker started by fork, closed with the pool)."""
    workers = pipeline.py_num_workers if pipeline is not None else 1
    method = pipeline.py_start_method if pipeline is not None else "fork"
    pool = ProcessPool(function, workers, method)
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
        self._pool = ProcessPool(self.source, pipeline.py_num_workers, pipeline.py_start_method)
        self._ahead: tuple[tuple, Any] | None = None  # (position, pending results)

    def _next_raw(self, batch_size: int) -> Any:
        if self.batch:
            return self._next_batch_call()
        position = (self.epoch, self.iteration, self.idx_in_epoch, batch_size)
        pending = self._take_ahead(position)
        if pending is None:
            pending = self._pool.submit_source(self._infos(*position), self.num_outputs)
        samples, stop = self._pool._collect([r.get() for r in pending])
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
            result = _check(self._pool.submit_source_batch(arg, self.num_outputs).get())
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

    def _drop(self, pending: list) -> None:
        """Wait for work nobody will use and free its shared memory."""
        for r in pending:
            try:
                result = r.get()
                if result[0] == "ok":
                    _unpack(result[1])
            except Exception:
                pass

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
