"""fn.experimental.readers.fits: image HDUs of FITS files, one output per HDU index."""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import NO_HINTS, NodeHints
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.readers import fits_format, storage
from chute.ops.readers.records import (
    RECORD_ARGS,
    FileCache,
    FileRecordSource,
    RecordError,
    check_record_args,
    filtered_file_args,
    list_filtered_files,
    on_error_of,
)
from chute.runtime.operator import Operator
from chute.runtime.registry import register
from chute.runtime.workers import WorkerPool
from chute.types import to_dtype


@register
class FitsReader(Operator):
    """Reads image HDUs of FITS files: one output per entry of ``hdu_indices``.

    The files come from ``file_root`` (every file below it matching ``file_filter``,
    sorted), ``file_list`` (a text file of paths, one a line) or ``files``.
    ``hdu_indices`` counts HDUs from 1, the primary HDU (the default, 2, is the first
    extension). Images come out in the FITS axis order reversed (``NAXISn`` first,
    ``NAXIS1`` last: C order), native byte order, with BSCALE / BZERO applied
    (the unsigned-integer conventions give uint16/32/64 exactly). ``dtypes`` gives
    each output's type, and a file whose HDU has another type is an error; without
    it the first file's HDUs set the types. Tile-compressed HDUs (RICE_1, GZIP, ...)
    are decompressed through astropy (``pip install 'chute[fits]'``). A missing HDU,
    a table HDU or a truncated file raises naming the file and the HDU, or is skipped
    with a report under ``on_error="skip"``.
    """

    kind = "source"
    schema = Schema(
        name="experimental.readers.fits",
        num_outputs=1,
        args=(
            *filtered_file_args("*.fits"),
            Arg(
                "hdu_indices",
                "int_list",
                (2,),
                "HDUs to read, counted from 1 (the primary HDU); one output each.",
                per_sample=False,
            ),
            Arg(
                "dtypes",
                "any",
                None,
                "Type of each output (default: the first file's).",
                per_sample=False,
            ),
            *RECORD_ARGS,
        ),
    )

    def num_outputs(self, args: dict[str, Any], num_inputs: int = 0) -> int:
        return len(args.get("hdu_indices") or (2,))

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        op = self.schema.display_name
        if all(args.get(k) is None for k in ("file_root", "file_list", "files")):
            raise ValueError(f"{op}: give file_root, file_list or files")
        if args.get("files") is not None and args.get("file_list") is not None:
            raise ValueError(f"{op}: give either files or file_list, not both")
        indices = args.get("hdu_indices") or (2,)
        if not indices or any(i < 1 for i in indices):
            raise ValueError(f"{op}: argument 'hdu_indices' counts HDUs from 1, got {indices}")
        dtypes = args.get("dtypes")
        if dtypes is not None:
            dtypes = dtypes if isinstance(dtypes, (list, tuple)) else [dtypes]
            try:
                args["dtypes"] = tuple(np.dtype(to_dtype(d)) for d in dtypes)
            except TypeError as exc:
                raise TypeError(f"{op}: argument 'dtypes': {exc}") from None
            if len(args["dtypes"]) != len(indices):
                raise ValueError(
                    f"{op}: {len(args['dtypes'])} dtypes for {len(indices)} hdu_indices; "
                    "give one per output"
                )
        check_record_args(op, args)

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        indices = list(node.arg("hdu_indices"))
        dtypes = node.arg("dtypes")
        try:  # the first file's headers give the types and ranks
            kinds = first_file_kinds(node, indices)
        except (OSError, ValueError, IndexError):
            kinds = [(None, None)] * len(indices)
        return [
            Spec(dtypes[k] if dtypes is not None else kinds[k][0], kinds[k][1], None)
            for k in range(len(indices))
        ]

    def open(self, node: OpNode, pipeline: Any, hints: NodeHints = NO_HINTS) -> FitsSource:
        return FitsSource(node, pipeline)


def first_file_kinds(node: OpNode, indices: list[int]) -> list[tuple[np.dtype, int]]:
    """(dtype, ndim) of the wanted HDUs of the reader's first file."""
    path = list_filtered_files(node)[0]
    with storage.open_binary(path, block_size=1 << 16) as f:
        raw = f.read()
    hdus = fits_format.read_hdus(raw, repr(path), upto=max(indices))
    return [
        (fits_format.image_dtype(hdus[i - 1]), fits_format.image_ndim(hdus[i - 1])) for i in indices
    ]


class FitsSource(FileRecordSource):
    """One record per file: the file is read whole (mapped locally), its HDUs parsed."""

    def __init__(self, node: OpNode, pipeline: Any):
        self.node = node
        self.paths = list_filtered_files(node)
        self.indices = list(node.arg("hdu_indices"))
        try:  # the types when dtypes is not given: the first file's, whichever thread reads
            self.kinds: list[tuple[np.dtype, int]] | None = first_file_kinds(node, self.indices)
        except (OSError, ValueError, IndexError):
            self.kinds = None  # that file is bad: reading it reports why
        dtypes = node.arg("dtypes")
        self.dtypes = list(dtypes) if dtypes is not None else None
        self.files = FileCache(use_mmap=node.arg("dont_use_mmap") is False)
        root = node.arg("file_root")
        names = [storage.relpath(p, root) for p in self.paths] if root else self.paths
        self.start(node, pipeline.batch_size, len(self.paths), names, on_error_of(node, pipeline))
        self.pool = WorkerPool(max(1, pipeline.num_threads), name="chute-fits")

    def read(self, index: int) -> list[Any]:
        path = self.paths[index]
        where = repr(path)
        raw = self.files.read(path)
        try:
            hdus = fits_format.read_hdus(raw, where, upto=max(self.indices))
        except ValueError as exc:
            raise RecordError(str(exc)) from None
        out = []
        for k, number in enumerate(self.indices):
            if number > len(hdus):
                raise RecordError(
                    f"{where} has {len(hdus)} HDU(s); hdu_indices asks for HDU {number}"
                )
            try:
                array = fits_format.image(raw, hdus[number - 1], where)
            except ValueError as exc:
                raise RecordError(str(exc)) from None
            if self.dtypes is not None:
                want = self.dtypes[k]
            else:
                want = self.kinds[k][0] if self.kinds is not None else array.dtype
            if array.dtype != want:
                raise RecordError(
                    f"{where} HDU {number} holds {array.dtype} data, the output is {want} "
                    "(dtypes, or the first file's type: a batch holds one type)"
                )
            out.append(array)
        return out

    def empty(self) -> list[Any]:
        out = []
        for k in range(len(self.indices)):
            dtype = self.dtypes[k] if self.dtypes is not None else None
            if dtype is None and self.kinds is not None:
                dtype = self.kinds[k][0]
            ndim = self.kinds[k][1] if self.kinds is not None else 2
            out.append(np.zeros((0,) * ndim, dtype or np.uint8))
        return out
