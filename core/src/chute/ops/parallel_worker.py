"""The worker-process side of :mod:`chute.ops.parallel`: what a worker runs, and the
shared-memory format its results travel in.

A worker packs a chunk's arrays into one segment (:func:`pack`, named by the pipeline,
which unlinks it if the worker dies) and returns only its name and the arrays' shapes;
the pipeline copies them out and unlinks the segment (:func:`unpack`). Each worker records
the sample it is computing in the pool's progress array, so that the pipeline can name it
when the worker dies.
"""

from __future__ import annotations

import os
import threading
import traceback
from collections.abc import Callable, Sequence
from multiprocessing import resource_tracker, shared_memory
from typing import Any

import numpy as np

_ALIGN = 64
# Callables handed to forked workers through inherited memory, by token.
FORK_CALLABLES: dict[int, Callable] = {}


def _fresh_tracker_lock() -> None:
    """In a forked child: a new lock for multiprocessing's resource tracker.

    A worker forked while another thread of the parent held that lock (unlinking an
    earlier batch's segment, say) inherits it held and waits forever at its first
    SharedMemory, which registers there (seen: python_function(parallel=True) hung in a
    test run). The stdlib keeps the lock private; without it there is nothing to reset.
    """
    tracker = getattr(resource_tracker, "_resource_tracker", None)
    lock = getattr(tracker, "_lock", None)
    if lock is not None:
        tracker._lock = threading.RLock() if "RLock" in type(lock).__name__ else threading.Lock()


os.register_at_fork(after_in_child=_fresh_tracker_lock)


_worker_function: Callable | None = None
# This worker's slot in the pool's progress array: [pid, sample being computed + 1] per
# worker (-1: a whole batch, 0: nothing), read by the pool when a worker dies.
_progress: Any = None
_slot = -1


def init_worker(token: int | None, function: Callable | None, progress: Any, count: Any) -> None:
    global _worker_function, _progress, _slot
    _worker_function = FORK_CALLABLES[token] if token is not None else function
    with count.get_lock():
        _slot, count.value = count.value, count.value + 1
    if 2 * _slot < len(progress):
        _progress = progress
        _progress[2 * _slot] = os.getpid()


def ready() -> None:
    """A task that starts a worker (see ProcessPool._start)."""


def _working_on(index: int | None) -> None:
    if _progress is not None:
        _progress[2 * _slot + 1] = -1 if index is None else index + 1


def pack(items: Sequence[Sequence[np.ndarray]], segment: str) -> tuple[str | None, list]:
    """Put every array of every item into the shared-memory segment named ``segment``
    (named by the pipeline, which unlinks it if this worker dies); return its description."""
    arrays = [a for item in items for a in item]
    offsets, total = [], 0
    for a in arrays:
        offsets.append(total)
        if a.dtype != object:
            total += -(-a.nbytes // _ALIGN) * _ALIGN
    shm = shared_memory.SharedMemory(name=segment, create=True, size=total) if total else None
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


def run_task(segment: str, task: tuple) -> tuple:
    """Run one chunk in a worker: ("samples", start, args, n_out) / ("batch", args, n_out) /
    ("source", infos, n_out) / ("source_batch", arg, n_out); results go to ``segment``."""
    kind = task[0]
    fn = _worker_function
    items: list[list[np.ndarray]] = []
    stop = None
    _working_on(None)
    try:
        if kind == "samples":
            _, start, arg_tuples, n_out = task
            for k, args in enumerate(arg_tuples):
                _working_on(start + k)
                try:
                    items.append(_sample_arrays(fn(*args), n_out))
                except Exception as exc:
                    return _failure(start + k, exc)
        elif kind == "source":
            _, infos, n_out = task
            for info in infos:
                _working_on(info.idx_in_epoch)
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
        return ("ok", pack(items, segment), stop)
    except Exception as exc:  # packing failed (e.g. out of shared memory)
        return _failure(None, exc)
    finally:
        if _progress is not None:
            _progress[2 * _slot + 1] = 0  # nothing in progress


def unpack(packed: tuple[str | None, list]) -> list[list[np.ndarray]]:
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
