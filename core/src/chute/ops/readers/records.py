"""Record readers: the one mechanism every reader of a listed dataset shares.

A record reader (tfrecord, webdataset, numpy, coco, mxnet, caffe, caffe2, nemo_asr,
sequence, fits) lists its dataset at build time and reads record ``i`` on demand.
:class:`RecordSource` runs the epoch plan of :mod:`chute.ops.readers.sharding` over the
records (shards, padding, ``random_shuffle`` / ``shuffle_after_epoch``, exact epochs,
state / restore), asks the reader to prefetch each batch's records (remote files are
fetched concurrently, see :mod:`chute.ops.readers.storage`), and turns a record that
cannot be read into an error naming the file and the offset, line or key — raised, or
under ``on_error="skip"`` reported while the rest of the batch still reads. Readers of
byte ranges of files build on :class:`chute.ops.readers.ranges.RangeSource`.
"""

from __future__ import annotations

import fnmatch
import logging
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import Arg
from chute.ops.readers import storage
from chute.ops.readers.file import (
    READER_ARGS,
    SHUFFLE_AFTER_EPOCH,
    check_shard_args,
    check_shuffle_after_epoch,
)
from chute.ops.readers.local_files import read_file
from chute.ops.readers.sharding import ShardedSource
from chute.runtime.errors import detached

__all__ = [
    "RECORD_ARGS",
    "SHUFFLE_AFTER_EPOCH",
    "FileCache",
    "RecordError",
    "RecordSource",
    "as_path_list",
    "bad_entry",
    "cache_dir",
    "check_record_args",
    "list_filtered_files",
    "on_error_of",
]

log = logging.getLogger("chute")

# every record reader's arguments beyond its own
RECORD_ARGS = (*READER_ARGS, *SHUFFLE_AFTER_EPOCH)


class RecordError(ValueError):
    """A record that cannot be read; the message names the file and the offset, line or key."""


def check_record_args(op_name: str, args: dict[str, Any]) -> None:
    """Trace-time checks every record reader shares (shards, shuffle_after_epoch)."""
    check_shard_args(op_name, args)
    check_shuffle_after_epoch(op_name, args)


def on_error_of(node: OpNode, pipeline: Any) -> str:
    """The node's on_error, else the pipeline's."""
    return node.args.get("on_error") or getattr(pipeline, "on_error", "raise")


def bad_entry(on_error: str, message: str) -> None:
    """A bad entry found while listing the dataset: raise, or log it and go on (skip / warn)."""
    if on_error == "raise":
        raise RecordError(message)
    log.warning("skipped: %s", message)


def as_path_list(op_name: str, arg: str, value: Any, required: bool = True) -> tuple | None:
    """A path or a list of paths (local or URLs) as a tuple of strings (DALI takes either)."""
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


def filtered_file_args(default_filter: str) -> tuple[Arg, ...]:
    """The arguments :func:`list_filtered_files` reads, ``file_filter`` defaulting to
    ``default_filter``."""
    return (
        Arg("file_root", "str", None, "Folder of the files.", per_sample=False),
        Arg(
            "file_filter",
            "str",
            default_filter,
            "Glob of the files to take from file_root.",
            per_sample=False,
        ),
        Arg("file_list", "str", None, "Text file of paths, one a line.", per_sample=False),
        Arg("files", "str_list", None, "File paths.", per_sample=False),
    )


def list_filtered_files(node: OpNode) -> list[str]:
    """The files of a reader with file_root + file_filter, file_list or files, in a stable order.

    ``files`` are relative to ``file_root`` where given; ``file_list`` is a text file of
    paths, one a line, relative to ``file_root`` or else to the list's folder.
    """
    root, label = node.arg("file_root"), node.label
    if node.arg("files") is not None:
        files = [storage.join(root, f) for f in node.arg("files")]
    elif node.arg("file_list") is not None:
        listing = node.arg("file_list")
        base = root if root is not None else storage.dirname(listing)
        try:
            names = [line.strip() for line in storage.read_text(listing).splitlines()]
        except OSError as exc:
            raise ValueError(f"{label}: cannot read file_list {listing!r}: {exc}") from None
        files = [storage.join(base, n) for n in names if n and not n.startswith("#")]
    else:
        storage.check_folder(
            root, label, "files=[...] (relative to file_root) or file_list= (a path a line)"
        )
        pattern = node.arg("file_filter")
        files = [
            storage.join(root, rel)
            for rel in storage.walk_files(root)
            if fnmatch.fnmatchcase(storage.basename(rel), pattern)
        ]
    if not files:
        raise ValueError(
            f"{label}: no files found (file_root={root!r}, file_filter={node.arg('file_filter')!r})"
        )
    return files


class FileCache:
    """Whole files of one batch: remote ones fetched together, local ones read when asked."""

    def __init__(self, use_mmap: bool = False):
        self.use_mmap = use_mmap
        self._fetched: dict[str, bytes | OSError] = {}

    def fetch(self, paths: Sequence[str]) -> None:
        """Fetch the remote ones among ``paths`` concurrently (local files are read later)."""
        remote = list(dict.fromkeys(p for p in paths if storage.is_url(p)))
        remote = [p for p in remote if p not in self._fetched]
        for path, data in zip(remote, storage.read_many(remote)):
            self._fetched[path] = data

    def read(self, path: str) -> np.ndarray:
        """The file's bytes (read-only uint8); OSError names it."""
        if storage.is_url(path):
            data = self._fetched.pop(path, None)
            if data is None:
                data = storage.read_many([path])[0]
            if isinstance(data, OSError):
                raise data
            return np.frombuffer(data, np.uint8)
        return read_file(path, self.use_mmap)

    def clear(self) -> None:
        self._fetched.clear()


class RecordSource(ShardedSource):
    """A running record reader: the epoch plan over ``size`` records, read by :meth:`read`.

    Subclasses call :meth:`start` once their records are listed, and implement
    ``read(index) -> list of outputs`` (raising RecordError, ValueError or OSError
    naming the file and where in it), ``source_info(index)`` and ``empty()`` (the
    outputs of a record that failed under on_error="skip"; the executor replaces it
    with a good sample). :meth:`begin_batch` gets the batch's record indices first
    (to prefetch them, or open a transaction); :meth:`end_batch` follows.
    """

    on_error = "raise"
    # a chute.runtime.workers.WorkerPool where reading decodes (sequence, fits): the
    # records of a batch are read on its threads (``read`` must be thread-safe then)
    pool: Any = None

    def start(
        self, node: OpNode, batch_size: int, size: int, names: list[str], on_error: str
    ) -> None:
        """Set the plan over ``size`` records (``names`` seed the default shuffle)."""
        if size == 0:
            raise ValueError(f"{node.label}: the dataset has no samples")
        self.on_error = on_error
        self.init_plan(node, size, batch_size, names)

    def read(self, index: int) -> list[Any]:
        raise NotImplementedError

    def source_info(self, index: int) -> str:
        raise NotImplementedError

    def empty(self) -> list[Any]:
        raise NotImplementedError

    def begin_batch(self, indices: list[int]) -> None:
        """Called with the batch's record indices before they are read."""

    def end_batch(self) -> None:
        """Called after the records of a batch were read (or failed)."""

    def next_batch(self, batch_size: int, epoch: int, iteration: int):
        slots, meta = self.take_batch(self.source_info)
        rows: list[list[Any] | None] = [None] * len(slots)

        def work(k: int) -> None:
            try:
                rows[k] = self.read(slots[k].index)
            except (OSError, ValueError) as exc:
                if self.on_error == "raise":
                    raise
                meta[k]["error"] = (self.node.label, detached(exc))
                rows[k] = self.empty()

        self.begin_batch([s.index for s in slots])
        try:
            if self.pool is None:
                for k in range(len(slots)):
                    work(k)
            else:
                failures = self.pool.run(work, len(slots))
                if failures:
                    raise failures[0][1]
        finally:
            self.end_batch()
        columns: list[list[Any]] = [list(c) for c in zip(*rows)] if rows else []
        return columns, meta

    def close(self) -> None:
        """Release files and connections (the pipeline closes its sources)."""
        if self.pool is not None:
            self.pool.close()


class FileRecordSource(RecordSource):
    """A record reader whose records are whole files: record i is ``paths[i]``, read through
    ``files`` (a :class:`FileCache` that fetches a batch's remote files together)."""

    paths: list[str]
    files: FileCache

    def source_info(self, index: int) -> str:
        return self.paths[index]

    def begin_batch(self, indices: list[int]) -> None:
        self.files.fetch([self.paths[i] for i in indices])

    def end_batch(self) -> None:
        self.files.clear()
