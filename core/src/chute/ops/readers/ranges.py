"""Byte-range records: readers whose samples are ranges of files (tfrecord, webdataset, numpy, mxnet).

Each record is ``(file, offset, size)``; :class:`RangeSource` reads each planned
record's bytes through :class:`FileRanges` and hands them to the reader's ``decode``.
Local files are memory-mapped, read with ``pread``, or read with O_DIRECT; remote
files (URLs, :mod:`chute.ops.readers.storage`) get the ranges of a whole batch in one
concurrent fetch before the batch is decoded. A record that cannot be read or decoded
raises an error naming the file and the offset, or, under ``on_error="skip"``, is
skipped with a report entry while the rest of the batch is read.
"""

from __future__ import annotations

import mmap
import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import Arg
from chute.ops.readers import storage
from chute.ops.readers.local_files import NotRegularFile, open_regular
from chute.ops.readers.records import RECORD_ARGS, RecordSource

__all__ = ["RANGE_ARGS", "FileRanges", "RangeSource", "Record"]

# the indexed readers' arguments: every record reader's, and O_DIRECT
RANGE_ARGS = (
    *RECORD_ARGS,
    Arg(
        "use_o_direct",
        "bool",
        False,
        "Read with O_DIRECT (bypassing the page cache) where the file system allows it; "
        "elsewhere (tmpfs, macOS, remote storage) files are read normally.",
        per_sample=False,
    ),
)


@dataclass(frozen=True)
class Record:
    """One sample's bytes: ``size`` bytes of file ``file`` from ``offset``.

    ``error`` marks a record the index found broken (a truncated tail, a bad
    header): reading it fails with that message, so that it is reported (or
    raised) like any other bad sample and the epoch stays the same size.
    """

    file: int
    offset: int
    size: int
    name: str = ""
    error: str | None = None
    parts: tuple = ()  # what a reader needs to cut the bytes into outputs (webdataset)


class FileRanges:
    """Reads byte ranges of files: memory-mapped, read, read with O_DIRECT, or fetched.

    Mapped ranges are zero-copy read-only views (the mapping lives as long as its
    last view). Read ranges come from ``os.pread`` on descriptors kept open (the
    most recent 32 files). O_DIRECT needs aligned offsets, lengths and memory:
    whole pages are read into page-aligned memory and the range is cut from
    them; where the file system refuses O_DIRECT the file is read normally.
    Remote files (URLs) are read from what :meth:`prefetch` fetched for the batch,
    else one request at a time.

    ``read_ahead`` (DALI's reader argument): a local file is advised to the kernel as
    needed whole (``posix_fadvise(WILLNEED)``) when first opened, so that the page cache
    fills ahead of the reads; a remote file is fetched whole at its first batch and its
    records are cut from that copy for the rest of the run (one request per file instead
    of one per record, at the cost of holding the files in memory).
    """

    _OPEN_FILES = 32
    _ALIGN = 4096

    def __init__(
        self,
        paths: Sequence[str],
        use_mmap: bool = False,
        o_direct: bool = False,
        read_ahead: bool = False,
    ):
        self.paths = list(paths)
        self.read_ahead = read_ahead
        self._whole: dict[int, bytes] = {}  # remote files fetched whole (read_ahead)
        self.advised = 0  # local files advised as needed whole (read_ahead; statistics)
        self.remote = [storage.is_url(p) for p in self.paths]
        self.use_mmap = use_mmap
        self.o_direct = o_direct and hasattr(os, "O_DIRECT")
        self._fds: OrderedDict[int, int] = OrderedDict()
        self._maps: dict[int, mmap.mmap | None] = {}
        # remote bytes of this batch: file -> [(offset, data or error, whole object?)]
        self._fetched: dict[int, list[tuple[int, bytes | OSError, bool]]] = {}
        self.direct_reads = 0  # ranges read with O_DIRECT (tests, statistics)

    def size(self, file: int) -> int:
        return storage.size(self.paths[file])

    def prefetch(self, ranges: Sequence[tuple[int, int, int | None]]) -> None:
        """Fetch the remote ones of ``(file, offset, size)`` concurrently (None: to the end)."""
        wanted = [(f, o, s) for f, o, s in dict.fromkeys(ranges) if self.remote[f]]
        if self.read_ahead:
            self._fetch_whole([f for f, _, _ in wanted])
            return
        requests = [(self.paths[f], o, None if s is None else o + s) for f, o, s in wanted]
        for (f, o, s), data in zip(wanted, storage.read_ranges(requests)):
            self._fetched.setdefault(f, []).append((o, data, s is None))

    def forget(self) -> None:
        """Drop what :meth:`prefetch` fetched (the batch is done)."""
        self._fetched.clear()

    def read(self, file: int, offset: int, size: int) -> np.ndarray:
        """Up to ``size`` bytes from ``offset`` (fewer where the file ends), read-only uint8."""
        if self.remote[file]:
            return self._read_remote(file, offset, size)
        if self.use_mmap:
            mapped = self._map(file)
            if mapped is not None:
                end = min(offset + size, len(mapped))
                return np.frombuffer(mapped, np.uint8, max(0, end - offset), offset)
        if self.o_direct:
            data = self._read_direct(file, offset, size)
            if data is not None:
                return data
        data = os.pread(self._fd(file), size, offset)
        return np.frombuffer(data, np.uint8)

    def _fetch_whole(self, files: Sequence[int]) -> None:
        new = [f for f in dict.fromkeys(files) if f not in self._whole]
        for f, data in zip(new, storage.read_many([self.paths[f] for f in new])):
            if isinstance(data, OSError):
                raise data
            self._whole[f] = data

    def _read_remote(self, file: int, offset: int, size: int) -> np.ndarray:
        if self.read_ahead:
            self._fetch_whole([file])
            return np.frombuffer(self._whole[file], np.uint8)[offset : offset + size]
        for start, data, whole in self._fetched.get(file, ()):
            if isinstance(data, OSError):
                if start == offset:
                    raise data
                continue
            if start <= offset and (whole or offset + size <= start + len(data)):
                lo = offset - start
                return np.frombuffer(data, np.uint8)[lo : lo + size]
        (data,) = storage.read_ranges([(self.paths[file], offset, offset + size)])
        if isinstance(data, OSError):
            raise data
        return np.frombuffer(data, np.uint8)

    def _fd(self, file: int) -> int:
        fd = self._fds.pop(file, None)
        if fd is None:
            fd = open_regular(self.paths[file])  # a FIFO is refused, not waited on
            self._advise(fd)
            while len(self._fds) >= self._OPEN_FILES:
                os.close(self._fds.popitem(last=False)[1])
        self._fds[file] = fd
        return fd

    def _map(self, file: int) -> mmap.mmap | None:
        if file not in self._maps:
            fd = open_regular(self.paths[file])
            try:
                self._advise(fd)
                self._maps[file] = mmap.mmap(fd, 0, access=mmap.ACCESS_READ)
            except ValueError:  # an empty file cannot be mapped
                self._maps[file] = None
            finally:
                os.close(fd)
        return self._maps[file]

    def _advise(self, fd: int) -> None:
        if self.read_ahead and hasattr(os, "posix_fadvise"):
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
            self.advised += 1

    def _read_direct(self, file: int, offset: int, size: int) -> np.ndarray | None:
        align = self._ALIGN
        start = offset - offset % align
        end = -(-(offset + size) // align) * align
        try:
            fd = open_regular(self.paths[file], os.O_DIRECT)
        except NotRegularFile:
            raise
        except OSError:
            self.o_direct = False  # not on this file system: read normally from now on
            return None
        try:
            buffer = mmap.mmap(-1, max(end - start, align))  # page-aligned memory
            try:
                got = os.preadv(fd, [buffer], start)
            except OSError:
                self.o_direct = False
                return None
            lo = offset - start
            out = np.frombuffer(buffer, np.uint8)[lo : max(lo, min(got, lo + size))].copy()
        finally:
            os.close(fd)
        self.direct_reads += 1
        out.flags.writeable = False
        return out

    def close(self) -> None:
        while self._fds:
            os.close(self._fds.popitem()[1])
        self._maps.clear()  # mappings close when their last view is gone
        self._fetched.clear()
        self._whole.clear()


class RangeSource(RecordSource):
    """A running indexed reader: reads each planned record and decodes it into the outputs.

    ``decode(data, record)`` returns one array per output, or raises ValueError /
    OSError with a message naming what is wrong; the message gets the file and
    offset prepended. ``empty()`` gives the outputs of a skipped sample.
    """

    def __init__(
        self,
        node: OpNode,
        paths: Sequence[str],
        records: list[Record],
        batch_size: int,
        decode: Callable[[np.ndarray, Record], list[np.ndarray]],
        empty: Callable[[], list[np.ndarray]],
        on_error: str = "raise",
        names: list[str] | None = None,
    ):
        self.node = node
        self.paths = list(paths)
        self.records = records
        self.decode = decode
        self._empty = empty
        self.ranges = FileRanges(
            self.paths,
            use_mmap=node.arg("dont_use_mmap") is False,
            o_direct=bool(node.arg("use_o_direct")),
            read_ahead=bool(node.arg("read_ahead")),
        )
        self.start(node, batch_size, len(records), names or self._names(), on_error)

    def _names(self) -> list[str]:
        # the default seed: the same on every shard, wherever the files are mounted
        bases = [storage.basename(p) for p in self.paths]
        return [f"{bases[r.file]}:{r.offset}:{r.name}" for r in self.records]

    def source_info(self, index: int) -> str:
        """Where a sample lies: ``path:offset`` (``path:offset:name`` for named members)."""
        r = self.records[index]
        where = f"{self.paths[r.file]}:{r.offset}"
        return f"{where}:{r.name}" if r.name else where

    def where(self, record: Record) -> str:
        """The file and offset an error message names."""
        return f"{self.paths[record.file]!r} at offset {record.offset}"

    def empty(self) -> list[np.ndarray]:
        return self._empty()

    def begin_batch(self, indices: list[int]) -> None:
        self.ranges.prefetch(self.fetch_ranges(indices))

    def fetch_ranges(self, indices: list[int]) -> list[tuple[int, int, int | None]]:
        """The ``(file, offset, size)`` spans the batch reads (readers with headers override)."""
        return [(r.file, r.offset, r.size) for r in (self.records[i] for i in indices)]

    def end_batch(self) -> None:
        self.ranges.forget()

    def read(self, index: int) -> list[np.ndarray]:
        """The outputs of one record; raises naming the file and offset when it is bad."""
        record = self.records[index]
        where = self.where(record)
        if record.error is not None:
            raise ValueError(f"{self.node.label}: {where}: {record.error}")
        try:
            return self.load(record)
        except OSError as exc:
            path = self.paths[record.file]
            if path in str(exc):  # storage's errors name the URL already
                message = f"{exc} (the record at offset {record.offset})"
            else:
                message = f"cannot read {where}: {exc.strerror or exc}"
            raise OSError(f"{self.node.label}: {message}") from None
        except ValueError as exc:
            raise ValueError(f"{self.node.label}: {where}: {exc}") from None

    def load(self, record: Record) -> list[np.ndarray]:
        """Read the record's bytes and decode them (readers with other layouts override)."""
        return self.decode(self.ranges.read(record.file, record.offset, record.size), record)

    def close(self) -> None:
        self.ranges.close()
