"""The CPU worker pool: runs per-sample work over a batch, sample-major."""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor


def affinity_cpus() -> list[int]:
    """The CPUs worker threads pin themselves to, in order: ``DALI_AFFINITY_MASK``
    (comma-separated CPU ids, as in DALI) else the CPUs this process may use."""
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    mask = os.environ.get("DALI_AFFINITY_MASK", "").strip()
    if mask:
        chosen = [int(c) for c in mask.split(",") if c.strip()]
        return [c for c in chosen if c in allowed] or allowed
    return allowed


def _pinner(cpus: list[int]) -> Callable[[], None]:
    """A thread initializer: the k-th thread started pins itself to ``cpus[k % len(cpus)]``."""
    counter = itertools.count()
    lock = threading.Lock()

    def pin() -> None:
        with lock:
            k = next(counter)
        os.sched_setaffinity(0, {cpus[k % len(cpus)]})  # 0: the calling thread (Linux)

    return pin


class WorkerPool:
    """``num_threads`` workers pulling sample indices from a shared counter.

    With one thread the work runs inline in the caller, which keeps
    single-threaded runs free of hand-offs; with more, the caller is one of the
    ``num_threads`` threads that pull samples. With ``affinity`` (Pipeline's
    ``set_affinity``, Linux) every worker thread pins itself to one CPU of
    :func:`affinity_cpus`, round robin; then even one thread is a worker thread,
    so the caller's own affinity is never changed.
    """

    def __init__(self, num_threads: int, name: str = "chute-worker", affinity: bool = False):
        self.num_threads = max(1, int(num_threads))
        cpus = affinity_cpus() if affinity and hasattr(os, "sched_setaffinity") else []
        self.cpus = cpus
        self._executor = (
            ThreadPoolExecutor(
                self.num_threads,
                thread_name_prefix=name,
                initializer=_pinner(cpus) if cpus else None,
            )
            if self.num_threads > 1 or cpus
            else None
        )

    def run(self, work: Callable[[int], None], n: int) -> list[tuple[int, BaseException]]:
        """Call ``work(i)`` for i in range(n); return the (index, exception) failures, sorted."""
        failures: list[tuple[int, BaseException]] = []
        stop = threading.Event()
        counter = itertools.count()

        def loop() -> None:
            while not stop.is_set():
                i = next(counter)
                if i >= n:
                    return
                try:
                    work(i)
                except BaseException as exc:
                    failures.append((i, exc))
                    stop.set()

        if self._executor is None or (n <= 1 and not self.cpus):
            loop()
        elif self.cpus:  # pinned: only the workers run samples (the caller stays unpinned)
            jobs = [self._executor.submit(loop) for _ in range(min(self.num_threads, n))]
            for job in jobs:
                job.result()
        else:
            # the caller would only wait: it takes one worker's share itself, which saves
            # a hand-off per step (many small steps in conditionals) and keeps num_threads
            # threads on the batch
            jobs = [self._executor.submit(loop) for _ in range(min(self.num_threads, n) - 1)]
            loop()
            for job in jobs:
                job.result()
        return sorted(failures, key=lambda f: f[0])

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
