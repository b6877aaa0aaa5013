"""Indexed records: the machinery shared by readers whose samples are byte ranges of files.

TFRecord files, webdataset tar shards and NumPy files all come down to a list of
records, each one ``(file, offset, size)``: the epoch plan of
:mod:`chute.ops.readers.sharding` runs over that list (exact global shuffling,
shards, padding, state), and :class:`RecordSource` reads each record's bytes and
hands them to the reader's ``decode``. A record that cannot be read or decoded
raises an error naming the file and the offset, or, under ``on_error="skip"``,
is skipped with a report entry while the rest of the batch is read.
"""

from __future__ import annotations

import dataclasses
import mmap
import os
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import Arg
from chute.ops.readers.file import READER_ARGS, check_shard_args
from chute.ops.readers.sharding import EpochPlan, ShardedSource

__all__ = [
    "RECORD_ARGS",
    "FileRanges",
    "Record",
    "RecordSource",
    "as_path_list",
    "cache_dir",
    "check_record_args",
]

# DALI 2.4's arguments of every indexed reader beyond chute's READER_ARGS.
RECORD_ARGS = (
    *READER_ARGS,
    Arg(
        "shuffle_after_epoch",
        "bool",
        False,
        "Read the first epoch in order, then a new global permutation every epoch.",
        per_sample=False,
    ),
    Arg(
        "shuffle_after_epoch_seed",
        "int",
        None,
        "Seed of shuffle_after_epoch's permutations (default: the reader's seed).",
        per_sample=False,
    ),
    Arg(
        "use_o_direct",
        "bool",
        False,
        "Read with O_DIRECT (bypassing the page cache) where the file system allows it; "
        "elsewhere (tmpfs, macOS) files are read normally.",
        per_sample=False,
    ),
)


def check_record_args(op_name: str, args: dict[str, Any]) -> None:
    """Trace-time checks shared by the indexed readers."""
    check_shard_args(op_name, args)
    if args.get("shuffle_after_epoch"):
        if args.get("random_shuffle"):
            raise ValueError(
                f"{op_name}: arguments 'shuffle_after_epoch' and 'random_shuffle' "
                "are mutually exclusive"
            )
        if args.get("stick_to_shard"):
            raise ValueError(
                f"{op_name}: arguments 'shuffle_after_epoch' and 'stick_to_shard' "
                "are mutually exclusive"
            )


def as_path_list(op_name: str, arg: str, value: Any, required: bool = True) -> tuple | None:
    """A path or a list of paths as a tuple of strings (DALI takes either)."""
    if value is None:
        if required:
            raise TypeError(f"{op_name}: argument '{arg}' is required")
        return None
    if isinstance(value, (str, os.PathLike)):
        value = [value]
    if not isinstance(value, Sequence) or not all(isinstance(v, (str, os.PathLike)) for v in value):
        raise TypeError(f"{op_name}: argument '{arg}' must be a path or a list of paths")
    if required and not value:
        raise ValueError(f"{op_name}: argument '{arg}' is empty")
    return tuple(os.fspath(v) for v in value)


def cache_dir(kind: str) -> str | None:
    """chute's cache folder for ``kind`` ($CHUTE_CACHE_DIR, else ~/.cache/chute), or None."""
    base = os.environ.get("CHUTE_CACHE_DIR") or os.path.join(
        os.path.expanduser("~"), ".cache", "chute"
    )
    path = os.path.join(base, kind)
    try:
        os.makedirs(path, exist_ok=True)
    except OSError:
        return None
    return path if os.access(path, os.W_OK) else None


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


@dataclass
class AfterFirstEpochPlan(EpochPlan):
    """shuffle_after_epoch: epoch 0 in order, then one global permutation per epoch."""

    def order(self, epoch: int) -> np.ndarray:
        if epoch == 0:
            return np.arange(self.size)
        return super().order(epoch)


class FileRanges:
    """Reads byte ranges of files: memory-mapped, read, or read with O_DIRECT.

    Mapped ranges are zero-copy read-only views (the mapping lives as long as its
    last view). Read ranges come from ``os.pread`` on descriptors kept open (the
    most recent 32 files). O_DIRECT needs aligned offsets, lengths and memory:
    whole pages are read into page-aligned memory and the range is cut from
    them; where the file system refuses O_DIRECT the file is read normally.
    """

    _OPEN_FILES = 32
    _ALIGN = 4096

    def __init__(self, paths: Sequence[str], use_mmap: bool = False, o_direct: bool = False):
        self.paths = list(paths)
        self.use_mmap = use_mmap
        self.o_direct = o_direct and hasattr(os, "O_DIRECT")
        self._fds: OrderedDict[int, int] = OrderedDict()
        self._maps: dict[int, mmap.mmap | None] = {}
        self.direct_reads = 0  # ranges read with O_DIRECT (tests, statistics)

    def size(self, file: int) -> int:
        return os.stat(self.paths[file]).st_size

    def read(self, file: int, offset: int, size: int) -> np.ndarray:
        """Up to ``size`` bytes from ``offset`` (fewer where the file ends), read-only uint8."""
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

    def _fd(self, file: int) -> int:
        fd = self._fds.pop(file, None)
        if fd is None:
            fd = os.open(self.paths[file], os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            while len(self._fds) >= self._OPEN_FILES:
                os.close(self._fds.popitem(last=False)[1])
        self._fds[file] = fd
        return fd

    def _map(self, file: int) -> mmap.mmap | None:
        if file not in self._maps:
            try:
                with open(self.paths[file], "rb") as f:
                    self._maps[file] = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            except ValueError:  # an empty file cannot be mapped
                self._maps[file] = None
        return self._maps[file]

    def _read_direct(self, file: int, offset: int, size: int) -> np.ndarray | None:
        align = self._ALIGN
        start = offset - offset % align
        end = -(-(offset + size) // align) * align
        try:
            fd = os.open(self.paths[file], os.O_RDONLY | os.O_DIRECT)
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


class RecordSource(ShardedSource):
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
        if not records:
            raise ValueError(f"{node.label}: the dataset has no samples")
        self.paths = list(paths)
        self.records = records
        self.decode = decode
        self.empty = empty
        self.on_error = on_error
        self.ranges = FileRanges(
            self.paths,
            use_mmap=node.arg("dont_use_mmap") is False,
            o_direct=bool(node.arg("use_o_direct")),
        )
        self.init_plan(node, len(records), batch_size, names or self._names())
        if node.arg("shuffle_after_epoch"):
            seed = node.arg("shuffle_after_epoch_seed")
            fields = {f.name: getattr(self.plan, f.name) for f in dataclasses.fields(self.plan)}
            fields.update(shuffle=True, seed=self.plan.seed if seed is None else seed)
            self.plan = AfterFirstEpochPlan(**fields)

    def _names(self) -> list[str]:
        # the default seed: the same on every shard, wherever the files are mounted
        bases = [os.path.basename(p) for p in self.paths]
        return [f"{bases[r.file]}:{r.offset}:{r.name}" for r in self.records]

    def source_info(self, index: int) -> str:
        """Where a sample lies: ``path:offset`` (``path:offset:name`` for named members)."""
        r = self.records[index]
        where = f"{self.paths[r.file]}:{r.offset}"
        return f"{where}:{r.name}" if r.name else where

    def where(self, record: Record) -> str:
        """The file and offset an error message names."""
        return f"{self.paths[record.file]!r} at offset {record.offset}"

    def read_record(self, record: Record) -> list[np.ndarray]:
        """The outputs of one record; raises naming the file and offset when it is bad."""
        where = self.where(record)
        if record.error is not None:
            raise ValueError(f"{self.node.label}: {where}: {record.error}")
        try:
            return self.load(record)
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise OSError(f"{self.node.label}: cannot read {where}: {reason}") from None
        except ValueError as exc:
            raise ValueError(f"{self.node.label}: {where}: {exc}") from None

    def load(self, record: Record) -> list[np.ndarray]:
        """Read the record's bytes and decode them (readers with other layouts override)."""
        return self.decode(self.ranges.read(record.file, record.offset, record.size), record)

    def next_batch(self, batch_size: int, epoch: int, iteration: int):
        slots, meta = self.take_batch(self.source_info)
        columns: list[list[np.ndarray]] | None = None
        for k, slot in enumerate(slots):
            try:
                outputs = self.read_record(self.records[slot.index])
            except (ValueError, OSError) as exc:
                if self.on_error == "raise":
                    raise
                outputs = self.empty()
                meta[k]["error"] = (self.node.label, exc)
            if columns is None:
                columns = [[] for _ in outputs]
            for column, value in zip(columns, outputs):
                column.append(value)
        return columns or [], meta

    def close(self) -> None:
        self.ranges.close()
