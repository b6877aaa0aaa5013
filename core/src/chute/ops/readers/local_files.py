"""The bytes of files, local or remote, as read-only uint8 arrays: what the readers read.

:func:`read_files` reads a batch of paths (a compiled loop where chute.runtime._native is
built, into one recycled block a batch), :func:`read_file` one path; only regular files
are read (:func:`open_regular`), a FIFO or device is refused by name, never waited on.
"""

from __future__ import annotations

import mmap
import os
import stat

import numpy as np

from chute.ops.readers import storage
from chute.runtime import native, output_pool

__all__ = ["NotRegularFile", "open_regular", "read_file", "read_files"]

_native_read = native.read_files  # None where chute.runtime._native is not built, or not POSIX


def read_files(paths: list[str], use_mmap: bool = False) -> list[np.ndarray | str]:
    """:func:`read_file` of each path: its bytes, or the message naming it where it failed.

    Where chute.runtime._native is built (and files are read, not mapped), the whole list is read
    in one call that gives the GIL up twice instead of four times per file (with many
    decoding threads each take of the GIL waits its turn), into recycled memory
    (output_pool: fresh memory cost the reader ~20 page faults, ~35 us, per 98 KiB file),
    one block for the whole list (:func:`_buffers`).
    """
    remote = [k for k, p in enumerate(paths) if storage.is_url(p)]
    if remote:  # fetched together (storage.read_many), the local ones read as usual
        fetched = storage.read_many([paths[k] for k in remote])
        local = [k for k in range(len(paths)) if k not in set(remote)]
        read = read_files([paths[k] for k in local], use_mmap) if local else []
        out: list[np.ndarray | str] = [""] * len(paths)
        for k, item in zip(remote, fetched):
            out[k] = str(item) if isinstance(item, OSError) else np.frombuffer(item, np.uint8)
        for k, item in zip(local, read):
            out[k] = item
        return out
    native = None if use_mmap else _native_read
    results = native(paths, _buffers) if native is not None else [None] * len(paths)
    data: list[np.ndarray | str] = []
    for path, result in zip(paths, results):
        if isinstance(result, np.ndarray):
            result.flags.writeable = False
            data.append(result)
        elif isinstance(result, int):  # errno, or minus the type bits of a non-regular file
            reason = os.strerror(result) if result > 0 else _not_regular(-result)
            data.append(_cannot_read(path, reason))
        else:  # not read natively, or not the size fstat said: read again here
            try:
                data.append(read_file(path, use_mmap))
            except OSError as exc:
                data.append(str(exc))
    return data


def _buffers(sizes: list[int]) -> list[np.ndarray | None]:
    """A batch's file buffers (None where the size is 0): slices of one recycled block.

    One block a batch instead of one a file: handing out a pooled block costs a few
    microseconds of Python, a fifth of the reader's time when asked per file (2-core VM).
    The block is used again once every file of its batch has been dropped. Each file
    starts on a 64-byte boundary.
    """
    if not sizes:
        return []
    ends = np.cumsum(-(-np.asarray(sizes, np.int64) // 64) * 64)
    block = output_pool.empty((int(ends[-1]),), np.uint8)
    starts = [0, *ends[:-1].tolist()]
    return [block[a : a + n] if n else None for a, n in zip(starts, sizes)]


def _cannot_read(path: str, reason: str) -> str:
    return f"cannot read {path!r}: {reason}"


class NotRegularFile(OSError):
    """A path that is a FIFO, socket, device or directory, refused before it is read."""


def open_regular(path: str, flags: int = 0) -> int:
    """A blocking descriptor of ``path`` for reading; :class:`NotRegularFile` naming it
    when it is not a regular file (opened without waiting: a FIFO never blocks)."""
    fd = os.open(path, _OPEN_FLAGS | flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(_cannot_read(path, _not_regular(mode)))
        if _NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _not_regular(mode: int) -> str:
    """Why a path of this st_mode is not read: its file type named."""
    kinds = [
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ]
    kind = next((name for test, name in kinds if test(mode)), f"file type {stat.S_IFMT(mode):o}")
    return f"not a regular file ({kind})"


def read_file(path: str, use_mmap: bool = False) -> np.ndarray:
    """The bytes of one file as a read-only uint8 array; OSError names the file.

    With ``use_mmap`` files of 16 KiB and more are memory-mapped instead of copied: the
    reader spends less (~8 us per file instead of ~25 us), but the decoder faults the
    pages in and every unmapping interrupts the other threads; on the 2-core VM a
    readers.file -> peek_image_shape pipeline cost 110-160 us of CPU per file read
    against 150-240 us mapped, so reading is the default (on the H200 GPU pipeline the two
    measured the same, bench/results/gpu_h200_probe_*). A file truncated while mapped
    raises SIGBUS where it is read, as in DALI.
    """
    if storage.is_url(path):
        return np.frombuffer(storage.read_bytes(path), np.uint8)
    try:
        # os-level calls: open, fstat, read, close (Python's open() makes ten system calls)
        fd = os.open(path, _OPEN_FLAGS)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
                not_regular = _not_regular(st.st_mode)  # a FIFO read could block forever
            else:
                not_regular = None
                if _NONBLOCK:  # set only so that opening a FIFO does not wait for a writer
                    os.set_blocking(fd, True)
                size = st.st_size
                if use_mmap and size >= _MAP_FROM:
                    return np.frombuffer(mmap.mmap(fd, 0, access=mmap.ACCESS_READ), np.uint8)
                data = os.read(fd, size + 1)
                if len(data) > size:  # it grew since fstat (or says 0 bytes, as /proc files do)
                    data = b"".join([data, *iter(lambda: os.read(fd, 1 << 20), b"")])
        finally:
            os.close(fd)
    except OSError as exc:
        raise OSError(_cannot_read(path, exc.strerror or str(exc))) from None
    if not_regular is not None:
        raise OSError(_cannot_read(path, not_regular))
    return np.frombuffer(data, dtype=np.uint8)


_MAP_FROM = 16 * 1024  # smaller files are cheaper to copy than to map
# Only regular files are read: O_NONBLOCK (cleared after fstat) so that opening a FIFO
# does not wait for a writer, O_NOCTTY so that a terminal never becomes this process's.
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_BINARY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | _NONBLOCK
    | getattr(os, "O_NOCTTY", 0)
)
