"""fn.readers.file: encoded files and integer labels from a folder tree, a list, or names."""

from __future__ import annotations

import fnmatch
from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import NO_HINTS, FusionPlan, Hint, NodeHints, ReadInProcesses
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.readers import storage
from chute.ops.readers.local_files import read_files
from chute.ops.readers.read_processes import ReadProcesses
from chute.ops.readers.sharding import ShardedSource
from chute.runtime.operator import Operator
from chute.runtime.registry import register
from chute.runtime.tuning import current as current_tuning

IMAGE_FILTERS = (
    "*.jpg",
    "*.jpeg",
    "*.png",
    "*.bmp",
    "*.tif",
    "*.tiff",
    "*.pnm",
    "*.ppm",
    "*.pgm",
    "*.pbm",
    "*.webp",
    "*.gif",
    "*.jp2",
    "*.j2k",
)

READER_ARGS = (
    Arg(
        "random_shuffle",
        "bool",
        False,
        "Shuffle the whole dataset every epoch (one permutation shared by all shards).",
        per_sample=False,
    ),
    Arg(
        "initial_fill",
        "int",
        1024,
        "Shuffle buffer of streaming sources (unused: files are indexed).",
        per_sample=False,
    ),
    Arg("shard_id", "int", 0, "Which shard this pipeline reads.", per_sample=False),
    Arg("num_shards", "int", 1, "Number of shards the dataset is split into.", per_sample=False),
    Arg(
        "stick_to_shard",
        "bool",
        False,
        "Keep the same shard every epoch (else shards rotate when not shuffling).",
        per_sample=False,
    ),
    Arg(
        "pad_last_batch",
        "bool",
        False,
        "Fill the last batch of a shard by repeating its last sample.",
        per_sample=False,
    ),
    Arg(
        "read_ahead",
        "bool",
        False,
        "Indexed readers (tfrecord, webdataset, numpy, mxnet): advise the kernel to read "
        "each local file whole into the page cache when first opened; fetch each remote "
        "file whole once (one request per file, held in memory) instead of a request per "
        "record. Readers of whole files read each file whole already.",
        per_sample=False,
    ),
    Arg(
        "dont_use_mmap",
        "bool",
        None,
        "False: memory-map files of 16 KiB and more, as DALI does; True or unset: read them "
        "(measured cheaper on chute's CPU path: each unmapping interrupts every worker thread).",
        per_sample=False,
    ),
    Arg(
        "lazy_init",
        "bool",
        False,
        "Accepted for DALI compatibility: chute lists and indexes the data at build(), "
        "which DALI's first run does with lazy_init (call build() when that should happen).",
        per_sample=False,
    ),
    Arg(
        "prefetch_queue_depth",
        "int",
        1,
        "Batches the reader stage may read ahead of the computation (at least the "
        "pipeline's prefetch_queue_depth).",
        per_sample=False,
    ),
    Arg(
        "skip_cached_images",
        "bool",
        False,
        "Accepted for DALI compatibility: chute's decoders keep no decoded-image cache "
        "(their cache_* arguments are accepted and ignored), so no sample is skipped.",
        per_sample=False,
    ),
    Arg(
        "tensor_init_bytes",
        "int",
        1048576,
        "Accepted for DALI compatibility: output buffers are sized per batch.",
        per_sample=False,
    ),
)


# DALI 2.4's shuffle_after_epoch pair (the plan reads them: ShardedSource.init_plan)
SHUFFLE_AFTER_EPOCH = (
    Arg(
        "shuffle_after_epoch",
        "bool",
        False,
        "Read the first epoch in order, then every epoch as a new permutation of the whole "
        "dataset (the same on every shard).",
        per_sample=False,
    ),
    Arg(
        "shuffle_after_epoch_seed",
        "int",
        None,
        "Seed of shuffle_after_epoch's permutations (default: the reader's seed).",
        per_sample=False,
    ),
)


@register(legacy=("file_reader",), ops_aliases=("readers.FileReader",))
class FileReader(Operator):
    """Reads files as encoded bytes (uint8, 1-D) with an int32 label of shape (1,).

    The dataset comes from ``file_root`` (one subfolder per class, labels by
    sorted folder name), from ``file_list`` (lines "path label", paths
    relative to ``file_root``), or from ``files`` (+ ``labels``). Epochs are
    exact over shards (see chute.ops.readers.sharding); with
    ``random_shuffle`` each epoch is a full permutation drawn from (``seed``,
    epoch), so every shard must use the same reader seed — the default seed is
    derived from the file list, so shards agree without setting one.

    Reading runs ahead of the compute stage on the reader thread; when only GPU
    ("mixed") decoders use the bytes, two helper processes read the files into
    shared memory instead (chute.ops.readers.read_processes), so that reading
    costs the pipeline's GIL almost nothing.
    """

    kind = "source"
    schema = Schema(
        name="readers.file",
        num_outputs=2,
        args=(
            Arg(
                "file_root",
                "str",
                None,
                "Folder of class subfolders (or base of file_list paths).",
                per_sample=False,
            ),
            Arg("file_list", "str", None, 'Text file of "path label" lines.', per_sample=False),
            Arg("files", "str_list", None, "File paths.", per_sample=False),
            Arg(
                "labels",
                "int_list",
                None,
                "Labels of `files` (default: 0, 1, 2, ...).",
                per_sample=False,
            ),
            Arg(
                "file_filters",
                "str_list",
                IMAGE_FILTERS,
                "Glob patterns of files to take from file_root.",
                per_sample=False,
            ),
            Arg(
                "case_sensitive_filter",
                "bool",
                False,
                "Match file_filters case-sensitively.",
                per_sample=False,
            ),
            *READER_ARGS,
            *SHUFFLE_AFTER_EPOCH,
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        given = [k for k in ("file_root", "file_list", "files") if args.get(k) is not None]
        if not given:
            raise ValueError("fn.readers.file: give file_root, file_list or files")
        if args.get("files") is not None and args.get("file_list") is not None:
            raise ValueError("fn.readers.file: give either files or file_list, not both")
        labels = args.get("labels")
        if labels is not None and (args.get("files") is None or len(labels) != len(args["files"])):
            raise ValueError("fn.readers.file: argument 'labels' needs 'files' of the same length")
        check_shard_args("fn.readers.file", args)
        check_shuffle_after_epoch("fn.readers.file", args)

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [Spec(np.dtype(np.uint8), 1, None), Spec(np.dtype(np.int32), 1, None)]

    def fusion_hints(
        self, node: OpNode, consumers: list[list[OpNode] | None], decided: FusionPlan
    ) -> tuple[Hint, ...]:
        # When only GPU ("mixed") decoders use the bytes, the pipeline runs fast enough
        # that reading in a thread of this process would bound it (every system call a
        # GIL hand-off): helper processes read the files (see read_processes).
        readers = consumers[0]
        if readers and all(c.device == "mixed" for c in readers):
            return (ReadInProcesses(),)
        return ()

    def open(self, node: OpNode, pipeline: Any, hints: NodeHints = NO_HINTS) -> FileSource:
        files, labels = list_files(node)
        on_error = node.args.get("on_error") or pipeline.on_error
        in_processes = hints.get(ReadInProcesses) is not None
        return FileSource(node, files, labels, pipeline.batch_size, on_error, in_processes)


def check_shuffle_after_epoch(op_name: str, args: dict[str, Any]) -> None:
    """shuffle_after_epoch goes with neither random_shuffle nor stick_to_shard (as in DALI)."""
    if args.get("shuffle_after_epoch"):
        for other in ("random_shuffle", "stick_to_shard"):
            if args.get(other):
                raise ValueError(
                    f"{op_name}: arguments 'shuffle_after_epoch' and {other!r} "
                    "are mutually exclusive"
                )


def check_shard_args(op_name: str, args: dict[str, Any]) -> None:
    """Trace-time checks of shard_id / num_shards."""
    num_shards = args.get("num_shards", 1)
    shard_id = args.get("shard_id", 0)
    if num_shards < 1:
        raise ValueError(f"{op_name}: argument 'num_shards' must be >= 1, got {num_shards}")
    if not 0 <= shard_id < num_shards:
        raise ValueError(
            f"{op_name}: argument 'shard_id' must be in [0, {num_shards}), got {shard_id}"
        )


def list_files(node: OpNode) -> tuple[list[str], list[int]]:
    """The dataset of a file reader node: paths and labels, in a stable order."""
    root = node.arg("file_root")
    label = node.label
    if node.arg("files") is not None:
        files = [storage.join(root, f) for f in node.arg("files")]
        labels = list(node.arg("labels") or range(len(files)))
    elif node.arg("file_list") is not None:
        files, labels = _read_file_list(node.arg("file_list"), root, label)
    else:
        files, labels = _scan_root(
            root, node.arg("file_filters"), node.arg("case_sensitive_filter"), label
        )
    if not files:
        raise ValueError(
            f"{label}: no files found (file_root={root!r}, filters {node.arg('file_filters')})"
        )
    return files, labels


def _read_file_list(path: str, root: str | None, label: str) -> tuple[list[str], list[int]]:
    try:
        lines = storage.read_text(path).splitlines()
    except OSError as exc:
        reason = exc.strerror or exc
        raise ValueError(f"{label}: cannot read file_list {path!r}: {reason}") from None
    files, labels = [], []
    for number, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, _, lab = line.rpartition(" ")
        if not name:
            name, lab = lab, "0"
        try:
            labels.append(int(lab))
        except ValueError:
            raise ValueError(
                f"{label}: file_list {path!r} line {number}: label {lab!r} is not an integer"
            ) from None
        files.append(storage.join(root, name.strip()))
    return files, labels


def _scan_root(
    root: str, filters: tuple, case_sensitive: bool, label: str
) -> tuple[list[str], list[int]]:
    storage.check_folder(
        root, label, "files=[...] (with labels=) or file_list= (lines 'path label')"
    )
    patterns = filters if case_sensitive else tuple(p.lower() for p in filters)
    files, labels = [], []
    for index, cls in enumerate(storage.list_dirs(root)):
        folder = storage.join(root, cls)
        for rel in storage.walk_files(folder):
            name = storage.basename(rel)
            key = name if case_sensitive else name.lower()
            if any(fnmatch.fnmatchcase(key, p) for p in patterns):
                files.append(storage.join(folder, rel))
                labels.append(index)
    return files, labels


class FileSource(ShardedSource):
    """The running file reader: reads the files of each batch the epoch plan gives."""

    def __init__(
        self,
        node: OpNode,
        files: list[str],
        labels: list[int],
        batch_size: int,
        on_error: str = "raise",
        read_in_processes: bool = False,
    ):
        self.on_error = on_error
        self.use_mmap = node.arg("dont_use_mmap") is False
        # helper processes reading the files, see FileReader.fusion_hints
        self.processes = None
        processes = current_tuning().read_processes  # opened at build: the pipeline's Tuning
        if read_in_processes and processes and not any(map(storage.is_url, files)):
            self.processes = ReadProcesses(processes) if ReadProcesses.available() else None
        self.files = files
        self.labels = np.asarray(labels, np.int32)
        # The default shuffle seed hashes the names relative to file_root, so the
        # order is the same wherever the dataset is mounted (on every rank, every run).
        root = node.arg("file_root")
        names = [storage.relpath(f, root) for f in files] if root else files
        self.init_plan(node, len(files), batch_size, names)

    def next_batch(self, batch_size: int, epoch: int, iteration: int):
        slots, meta = self.take_batch(self.files.__getitem__)
        paths = [m["source_info"] for m in meta]
        rows = np.fromiter((s.index for s in slots), np.int64, len(slots))
        labels = list(self.labels[rows].reshape(-1, 1))  # (1,) each, one new array
        data = self.processes.read(paths) if self.processes is not None else None
        if data is None:
            data = read_files(paths, self.use_mmap)
        for k, (item, m) in enumerate(zip(data, meta)):
            if isinstance(item, str):  # the file could not be read: the message names it
                if self.on_error == "raise":
                    raise OSError(item)
                data[k] = np.zeros(0, np.uint8)
                m["error"] = (self.node.label, OSError(item))
        return [data, labels], meta

    def close(self) -> None:
        if self.processes is not None:
            self.processes.close()
