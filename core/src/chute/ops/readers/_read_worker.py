"""A file-reading helper process of chute.ops.readers.read_processes (standard library only).

Run as ``python -I _read_worker.py FD``: FD is a shared-memory file (memfd) inherited
from the pipeline's process. Each request on stdin is a pickled ``(offset, capacity,
paths)``; the files are read one after the other into the shared memory from
``offset`` on (at most ``capacity`` bytes), and the reply on stdout is a pickled list
with, per path, ``(offset, size)`` where it lies, the file's bytes where it did not
fit, or an error message string. End of stdin ends the process.
"""

import mmap
import os
import pickle
import stat
import sys

# A FIFO opened for reading would wait for a writer: open without blocking, check the type.
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def read_into(view: memoryview, path: str, offset: int, end: int) -> object:
    """Read one file into ``view[offset:end]``: (offset, size), bytes when too big, or an error."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            os.close(fd)
            kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
            return f"cannot read {path!r}: {kind}"
        os.set_blocking(fd, True)
        with open(fd, "rb", buffering=0) as f:
            size = os.fstat(f.fileno()).st_size
            if offset + size > end:
                return f.read()
            got = 0
            while got < size:
                n = f.readinto(view[offset + got : offset + size])
                if not n:
                    break  # the file shrank since fstat
                got += n
            return (offset, got)
    except OSError as exc:
        return f"cannot read {path!r}: {exc.strerror or exc}"


def main() -> None:
    shared = mmap.mmap(int(sys.argv[1]), 0)
    view = memoryview(shared)
    requests, replies = sys.stdin.buffer, sys.stdout.buffer
    while True:
        try:
            offset, capacity, paths = pickle.load(requests)
        except EOFError:
            return
        end = offset + capacity
        out = []
        for path in paths:
            item = read_into(view, path, offset, end)
            if isinstance(item, tuple):
                offset += (item[1] + 63) // 64 * 64  # keep each file 64-byte aligned
            out.append(item)
        pickle.dump(out, replies, protocol=pickle.HIGHEST_PROTOCOL)
        replies.flush()


if __name__ == "__main__":
    main()
