"""The CPU worker pool: runs per-sample work over a batch, sample-major."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor


class WorkerPool:
    """``num_threads`` workers pulling sample indices from a shared counter.

    With one thread the work runs inline in the caller, which keeps
    single-threaded runs free of hand-offs.
    """

    def __init__(self, num_threads: int, name: str = "chute-worker"):
        self.num_threads = max(1, int(num_threads))
        self._executor = (
            ThreadPoolExecutor(self.num_threads, thread_name_prefix=name)
            if self.num_threads > 1
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

        if self._executor is None or n <= 1:
            loop()
        else:
            jobs = [self._executor.submit(loop) for _ in range(min(self.num_threads, n))]
            for job in jobs:
                job.result()
        return sorted(failures, key=lambda f: f[0])

    def close(self) -> None:
        if self._executor is not None:
            self._executor.shutdown(wait=True, cancel_futures=True)
            self._executor = None
