"""fn.readers.numpy: arrays from .npy files, whole or a region of interest."""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import NO_HINTS, NodeHints
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.readers import storage
from chute.ops.readers.npy_format import NpyHeader, parse_header, read_array, roi_window
from chute.ops.readers.ranges import RANGE_ARGS, RangeSource, Record
from chute.ops.readers.records import check_record_args, filtered_file_args, list_filtered_files
from chute.runtime.operator import Operator
from chute.runtime.registry import register

ROI_ARGS = ("roi_start", "rel_roi_start", "roi_end", "rel_roi_end", "roi_shape", "rel_roi_shape")


def _roi_arg(name: str, kind: str, doc: str) -> Arg:
    return Arg(name, kind, None, doc, per_sample=False)


@register(legacy=("numpy_reader",))
class NumpyReader(Operator):
    """Reads arrays from NumPy .npy files (every number and bool dtype, C or Fortran order).

    The files come from ``file_root`` (every file below it matching
    ``file_filter``, sorted), ``file_list`` (a text file of paths, one a line,
    relative to ``file_root`` or else to the list's folder) or ``files``.
    Fortran-order arrays come out in C order, big-endian ones in native order.
    A region of interest (``roi_start`` / ``rel_roi_start`` with ``roi_end``,
    ``rel_roi_end``, ``roi_shape`` or ``rel_roi_shape``, over ``roi_axes``) reads
    only that part (C-order files: only the rows it covers); ``out_of_bounds_policy``
    says what a region past the array's bounds does ("error", "trim_to_shape",
    "pad" with ``fill_value``). ROI arguments are constants here (DALI also takes
    them per sample). A malformed header or truncated data raises naming the file
    and the offset, or is skipped with a report under ``on_error="skip"``.

    With ``device="gpu"`` the arrays come out in GPU memory (the pipeline's
    ``device_id``): read on the host as above, then copied in one upload per batch on
    the reader's own CUDA stream, complete before the batch is handed on.
    """

    kind = "source"
    schema = Schema(
        name="readers.numpy",
        devices=("cpu", "gpu"),
        args=(
            *filtered_file_args("*.npy"),
            _roi_arg("roi_start", "int_list", "Region start (absolute coordinates)."),
            _roi_arg("rel_roi_start", "float_list", "Region start (fraction of the extent)."),
            _roi_arg("roi_end", "int_list", "Region end, exclusive (absolute)."),
            _roi_arg("rel_roi_end", "float_list", "Region end, exclusive (fraction)."),
            _roi_arg("roi_shape", "int_list", "Region shape (absolute)."),
            _roi_arg("rel_roi_shape", "float_list", "Region shape (fraction)."),
            Arg(
                "roi_axes",
                "int_list",
                (),
                "Axes the ROI arguments refer to (default: all).",
                per_sample=False,
            ),
            Arg(
                "out_of_bounds_policy",
                "str",
                "error",
                "A region out of bounds: 'error', 'trim_to_shape' or 'pad'.",
                per_sample=False,
                choices=("error", "trim_to_shape", "pad"),
            ),
            Arg(
                "fill_value",
                "float",
                0.0,
                "Padding value of out_of_bounds_policy='pad'.",
                per_sample=False,
            ),
            Arg(
                "cache_header_information",
                "bool",
                False,
                "Keep each file's parsed header (files must not change while read).",
                per_sample=False,
            ),
            Arg(
                "register_buffers",
                "bool",
                True,
                "Accepted for DALI compatibility (GPU).",
                per_sample=False,
            ),
            *RANGE_ARGS,
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        op = self.schema.display_name
        if all(args.get(k) is None for k in ("file_root", "file_list", "files")):
            raise ValueError(f"{op}: give file_root, file_list or files")
        if args.get("files") is not None and args.get("file_list") is not None:
            raise ValueError(f"{op}: give either files or file_list, not both")
        for group in (("roi_start", "rel_roi_start"), ROI_ARGS[2:]):
            given = [k for k in group if args.get(k) is not None]
            if len(given) > 1:
                raise ValueError(
                    f"{op}: arguments {', '.join(map(repr, given))} are mutually exclusive"
                )
        check_record_args(op, args)

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        # the first file's header says the type; a file that differs fails where it is read
        try:
            path = list_filtered_files(node)[0]
            with storage.open_binary(path, block_size=1 << 16) as f:
                header = parse_header(lambda offset, size: (f.seek(offset), f.read(size))[1])
        except (OSError, ValueError, IndexError):
            return [Spec()]
        return [Spec(header.dtype.newbyteorder("="), len(header.shape), None)]

    def open(self, node: OpNode, pipeline: Any, hints: NodeHints = NO_HINTS) -> NumpySource:
        files = list_filtered_files(node)
        on_error = node.args.get("on_error") or pipeline.on_error
        source = NumpySource(node, files, pipeline.batch_size, on_error)
        if node.device == "gpu":
            source.upload = DeviceUpload(pipeline.device_id)
        return source


class DeviceUpload:
    """Copies a batch of host arrays into GPU memory on its own stream, one copy per batch."""

    def __init__(self, device_id: int | None):
        from chute.gpu.runtime import cupy_module

        self.cp = cupy_module()
        self.device_id = 0 if device_id is None else device_id
        with self.cp.cuda.Device(self.device_id):
            self.stream = self.cp.cuda.Stream(non_blocking=True)

    def __call__(self, samples: list[np.ndarray]) -> list[Any]:
        cp = self.cp
        with cp.cuda.Device(self.device_id), self.stream:
            # each sample starts 256-byte aligned, as a GPU allocation would
            starts = np.cumsum([0] + [-(-a.nbytes // 256) * 256 for a in samples])
            host = np.empty(int(starts[-1]), np.uint8)
            views = []
            for a, lo in zip(samples, starts):
                n = a.nbytes
                host[lo : lo + n] = np.ascontiguousarray(a).reshape(-1).view(np.uint8)
                views.append((int(lo), n, a.dtype, a.shape))
            device = cp.asarray(host)  # one host-to-device copy
            out = [device[lo : lo + n].view(dtype).reshape(shape) for lo, n, dtype, shape in views]
        self.stream.synchronize()
        return out


class NumpySource(RangeSource):
    """The running numpy reader: one record per file; reads the header, then the region."""

    upload: DeviceUpload | None = None  # device="gpu"

    def next_batch(self, batch_size: int, epoch: int, iteration: int):
        outputs, meta = super().next_batch(batch_size, epoch, iteration)
        if self.upload is not None:
            outputs = [self.upload(list(samples)) for samples in outputs]
        return outputs, meta

    def __init__(self, node: OpNode, files: list[str], batch_size: int, on_error: str):
        root = node.arg("file_root")
        names = [storage.relpath(f, root) for f in files] if root else files
        self.roi = {k: node.arg(k) for k in ROI_ARGS}
        self.axes = tuple(node.arg("roi_axes") or ())
        self.policy = node.arg("out_of_bounds_policy")
        self.fill_value = node.arg("fill_value")
        self.headers: dict[int, NpyHeader] | None = (
            {} if node.arg("cache_header_information") else None
        )
        self.first: tuple[np.dtype, int] | None = None
        records = [Record(i, 0, 0) for i in range(len(files))]
        super().__init__(
            node, files, records, batch_size, self._unused, self._no_array, on_error, names
        )

    def _unused(self, data: np.ndarray, record: Record) -> list[np.ndarray]:
        raise NotImplementedError  # load() reads the records itself

    def _no_array(self) -> list[np.ndarray]:
        dtype, ndim = self.first or (np.dtype(np.uint8), 1)
        return [np.zeros((0,) * ndim, dtype)]

    def fetch_ranges(self, indices: list[int]) -> list[tuple[int, int, int | None]]:
        # header and region come from one object: remote files are fetched whole
        return [(self.records[i].file, 0, None) for i in indices]

    def source_info(self, index: int) -> str:
        return self.paths[self.records[index].file]

    def where(self, record: Record) -> str:
        return repr(self.paths[record.file])

    def load(self, record: Record) -> list[np.ndarray]:
        file = record.file

        def read(offset: int, size: int) -> np.ndarray:
            return self.ranges.read(file, offset, size)

        header = self.headers.get(file) if self.headers is not None else None
        if header is None:
            header = parse_header(lambda offset, size: read(offset, size).tobytes())
            if self.headers is not None:
                self.headers[file] = header
        window = roi_window(header.shape, self.roi, self.axes)
        array = read_array(header, read, window, self.policy, self.fill_value)
        kind = (array.dtype, array.ndim)
        if self.first is None:
            self.first = kind
        elif kind != self.first:
            raise ValueError(
                f"holds {array.dtype} of {array.ndim} dims, the reader's first file "
                f"{self.first[0]} of {self.first[1]} dims (a batch holds one type)"
            )
        return [array]
