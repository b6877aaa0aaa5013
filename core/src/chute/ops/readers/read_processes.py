"""Reading files in helper processes into shared memory: a reader that stays out of the GIL.

A GPU pipeline decodes 15,000-20,000 images a second. Read by a thread of the
pipeline's own process, every file costs several system calls (open, stat, read
or map, close), and each one lets go of the GIL and must win it back from the
compute threads: on an H100 the reader thread then needed ~30 ms a batch of 256
and held the whole pipeline to ~9,000 img/s (bench/results/gpu_*_probe_*).

Here helper processes (plain Python, standard library only: ``_read_worker.py``)
read the files of a batch straight into a shared-memory block (a memfd, not
/dev/shm, whose size containers often limit); this process sends the paths and
gets back where each file lies — a few GIL hand-offs a batch instead of several
per file — and hands out read-only NumPy views of the block. A block goes back to
the free list when the last view of it is gone (``weakref.finalize``), so the
bytes live exactly as long as someone uses them; when every block is in use the
caller reads the batch itself rather than wait.
"""

from __future__ import annotations

import mmap
import os
import pickle
import queue
import subprocess
import sys
import threading
import weakref
from typing import Any

import numpy as np

__all__ = ["ReadProcesses"]

_WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_read_worker.py")


class ReadProcesses:
    """``workers`` helper processes reading batches of files into ``blocks`` shared blocks.

    Each block holds up to ``block_bytes`` (virtual memory: only the pages that files
    are read into are ever used); a file that does not fit its worker's share of the
    block comes back through the pipe instead. Started on the first :meth:`read`.
    """

    def __init__(self, workers: int = 2, blocks: int = 8, block_bytes: int = 256 << 20):
        self.workers, self.blocks, self.block_bytes = workers, blocks, block_bytes
        self._procs: list[subprocess.Popen] | None = None
        self._shared: mmap.mmap | None = None
        self._free: queue.Queue = queue.Queue()
        self._lock = threading.Lock()
        self.broken: str | None = None  # why the processes stopped serving, if they did
        self.fallbacks = 0  # batches left to the caller because every block was in use

    @staticmethod
    def available() -> bool:
        """Whether this platform can share memory this way (Linux: memfd_create)."""
        return hasattr(os, "memfd_create")

    def _start(self) -> None:
        fd = os.memfd_create("chute-reader")
        try:
            os.ftruncate(fd, self.blocks * self.block_bytes)
            self._shared = mmap.mmap(fd, self.blocks * self.block_bytes)
            self._procs = [
                subprocess.Popen(
                    [sys.executable, "-I", _WORKER, str(fd)],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    pass_fds=(fd,),
                )
                for _ in range(self.workers)
            ]
        finally:
            os.close(fd)  # the mapping and the workers keep the memory
        for b in range(self.blocks):
            self._free.put(b)

    def read(self, paths: list[str], wait_s: float = 0.05) -> list[Any] | None:
        """Per path a read-only uint8 array of the file's bytes or an error message (str).

        None when no block frees within ``wait_s`` or the processes are gone: the
        caller then reads the files itself.
        """
        with self._lock:
            if self.broken is not None:
                return None
            if self._procs is None:
                try:
                    self._start()
                except (OSError, ValueError) as exc:  # e.g. no interpreter to run the workers
                    self.broken = f"cannot start the reading processes: {exc}"
                    self.close()
                    return None
            try:
                block = self._free.get(timeout=wait_s)
            except queue.Empty:
                self.fallbacks += 1
                return None
            try:
                return self._read(paths, block)
            except (OSError, EOFError, pickle.UnpicklingError) as exc:
                self.broken = f"{type(exc).__name__}: {exc}"
                self._free.put(block)
                self.close()
                return None

    def _read(self, paths: list[str], block: int) -> list[Any]:
        base = block * self.block_bytes
        procs = self._procs[: max(1, min(len(self._procs), len(paths)))]
        share = self.block_bytes // len(procs)
        bounds = np.linspace(0, len(paths), len(procs) + 1).astype(int).tolist()
        for k, proc in enumerate(procs):
            request = (base + k * share, share, paths[bounds[k] : bounds[k + 1]])
            pickle.dump(request, proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            proc.stdin.flush()
        replies = [pickle.load(proc.stdout) for proc in procs]
        view = np.frombuffer(self._shared, np.uint8, self.block_bytes, base)
        view.flags.writeable = False
        weakref.finalize(view, self._free.put, block)  # when the last file's view is gone
        out: list[Any] = []
        for reply in replies:
            for item in reply:
                if isinstance(item, tuple):
                    start = item[0] - base
                    out.append(view[start : start + item[1]])
                elif isinstance(item, bytes):
                    out.append(np.frombuffer(item, np.uint8))
                else:
                    out.append(item)
        return out

    def close(self) -> None:
        """End the helper processes (the shared memory goes with its last view)."""
        procs, self._procs = self._procs or [], None
        for proc in procs:
            try:
                proc.stdin.close()
                proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
            if proc.stdout is not None:
                proc.stdout.close()
        if self.broken is None and procs:
            self.broken = "closed"

    def __del__(self) -> None:
        if self._procs:
            self.close()
