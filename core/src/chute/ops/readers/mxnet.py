"""fn.readers.mxnet: images and labels from MXNet RecordIO files (``.rec`` + ``.idx``).

A RecordIO file is a sequence of records, each a uint32 magic ``0xced7230a``, a
uint32 ``lrecord`` (upper 3 bits ``cflag``, lower 29 the length), the data and
zero padding to 4 bytes. ``cflag`` 0 is a whole record; 1, 2, 3 start, continue
and end a record that was split where its data held the magic (the magic goes
back between the parts). An image record's data starts with the IRHeader
``flag`` (uint32), ``label`` (float32), ``id``, ``id2`` (uint64), then ``flag``
float32 labels when ``flag`` > 0, then the encoded image. The ``.idx`` file has one
"key<TAB>offset" line per record (offsets into the ``path`` files, concatenated).
"""

from __future__ import annotations

import struct
from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import NO_HINTS, NodeHints
from chute.graph.schema import REQUIRED, Arg, Schema
from chute.graph.spec import Spec
from chute.ops.readers import storage
from chute.ops.readers.file import READER_ARGS
from chute.ops.readers.ranges import FileRanges
from chute.ops.readers.records import (
    SHUFFLE_AFTER_EPOCH,
    RecordError,
    RecordSource,
    check_record_args,
    on_error_of,
)
from chute.runtime.operator import Operator
from chute.runtime.registry import register

MAGIC = 0xCED7230A
_MAGIC_BYTES = struct.pack("<I", MAGIC)
IR_HEADER = struct.Struct("<IfQQ")  # flag, label, id, id2


def encode_record(data: bytes) -> bytes:
    """One RecordIO record of ``data``, split where the data holds the magic (as MXNet writes)."""
    parts = data.split(_MAGIC_BYTES)
    out = bytearray()
    for i, part in enumerate(parts):
        if len(parts) == 1:
            cflag = 0
        else:
            cflag = 1 if i == 0 else 3 if i == len(parts) - 1 else 2
        out += struct.pack("<II", MAGIC, cflag << 29 | len(part)) + part
        out += b"\0" * (-len(part) % 4)
    return bytes(out)


def encode_image_record(
    image: bytes, label: float | list[float], record_id: int = 0, id2: int = 0
) -> bytes:
    """The data of an image record: IRHeader (+ labels when several), then the image bytes."""
    if isinstance(label, (list, tuple, np.ndarray)):
        labels = np.asarray(label, "<f4")
        header = IR_HEADER.pack(len(labels), 0.0, record_id, id2) + labels.tobytes()
    else:
        header = IR_HEADER.pack(0, float(label), record_id, id2)
    return header + image


def decode_record(buf: bytes, where: str) -> bytes:
    """The data of the record(s) in ``buf``, joined; RecordError names ``where`` and the offset."""
    pos, parts = 0, []
    while True:
        if pos + 8 > len(buf):
            raise RecordError(f"{where}+{pos}: truncated record header ({len(buf) - pos} bytes)")
        magic, lrec = struct.unpack_from("<II", buf, pos)
        if magic != MAGIC:
            raise RecordError(f"{where}+{pos}: bad magic 0x{magic:08x}, not a RecordIO record")
        cflag, length = lrec >> 29, lrec & ((1 << 29) - 1)
        start = pos + 8
        if start + length > len(buf):
            raise RecordError(
                f"{where}+{pos}: record says {length} bytes, only {len(buf) - start} are there"
            )
        parts.append(buf[start : start + length])
        pos = start + length + (-length % 4)
        if cflag in (0, 3):
            return _MAGIC_BYTES.join(parts)
        if cflag not in (1, 2):
            raise RecordError(f"{where}+{pos}: bad cflag {cflag}")


def decode_image_record(data: bytes, where: str) -> tuple[np.ndarray, np.ndarray]:
    """(image bytes as uint8, labels as float32) of an image record's data."""
    if len(data) < IR_HEADER.size:
        raise RecordError(f"{where}: record of {len(data)} bytes is shorter than an IRHeader")
    flag, label, _, _ = IR_HEADER.unpack_from(data)
    start = IR_HEADER.size
    if flag > 0:
        end = start + 4 * flag
        if end > len(data):
            raise RecordError(f"{where}: IRHeader says {flag} labels, the record is too short")
        labels = np.frombuffer(data[start:end], "<f4").astype(np.float32)
        start = end
    else:
        labels = np.array([label], np.float32)
    return np.frombuffer(data[start:], np.uint8), labels


@register(legacy=("mxnet_reader",), ops_name="MXNet", ops_aliases=("MXNetReader",))
class MXNetReader(Operator):
    """Reads encoded images (uint8, 1-D) and float32 labels from MXNet RecordIO files.

    ``path`` lists the ``.rec`` files, ``index_path`` the one ``.idx`` file (MXNet's
    im2rec.py writes both). Labels have shape (1,), or (flag,) for records with
    several labels.
    """

    kind = "source"
    schema = Schema(
        name="readers.mxnet",
        num_outputs=2,
        args=(
            Arg("path", "str_list", REQUIRED, "The RecordIO (.rec) files.", per_sample=False),
            Arg(
                "index_path",
                "str_list",
                REQUIRED,
                "A list of one index (.idx) file.",
                per_sample=False,
            ),
            *SHUFFLE_AFTER_EPOCH,
            *READER_ARGS,
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        check_record_args("fn.readers.mxnet", args)
        if len(args["index_path"]) != 1:
            raise ValueError(
                f"fn.readers.mxnet: argument 'index_path' takes one file, got {len(args['index_path'])}"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [Spec(np.dtype(np.uint8), 1, None), Spec(np.dtype(np.float32), 1, None)]

    def open(self, node: OpNode, pipeline: Any, hints: NodeHints = NO_HINTS) -> RecordIOSource:
        return RecordIOSource(node, pipeline)


def read_index(path: str, label: str) -> list[int]:
    """The record offsets of an ``.idx`` file, in file order (sorted by offset)."""
    try:
        lines = storage.read_text(path).splitlines()
    except OSError as exc:
        raise ValueError(f"{label}: cannot read index {path!r}: {exc.strerror or exc}") from None
    offsets = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        parts = line.split()
        try:
            if len(parts) != 2:
                raise ValueError
            offsets.append(int(parts[1]))
        except ValueError:
            raise ValueError(
                f"{label}: index {path!r} line {number}: expected 'key offset', got {line!r}"
            ) from None
    return sorted(offsets)


class RecordIOSource(RecordSource):
    """The records of the ``.rec`` files, cut by the offsets of the ``.idx`` file."""

    def __init__(self, node: OpNode, pipeline: Any):
        self.files = list(node.arg("path"))
        index = node.arg("index_path")[0]
        self.sizes = []
        for f in self.files:
            try:
                self.sizes.append(storage.size(f))
            except OSError as exc:
                raise ValueError(
                    f"{node.label}: cannot read {f!r}: {exc.strerror or exc}"
                ) from None
        self.starts = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)
        self.offsets = read_index(index, node.label)
        total = int(self.starts[-1])
        if self.offsets and (self.offsets[0] < 0 or self.offsets[-1] >= total):
            raise ValueError(
                f"{node.label}: index {index!r} has offsets outside the {total} bytes of 'path'"
            )
        ends = [*self.offsets[1:], total]
        self.lengths = [e - o for o, e in zip(self.offsets, ends)]
        self.ranges = FileRanges(
            self.files,
            use_mmap=node.args.get("dont_use_mmap") is False,
            read_ahead=bool(node.args.get("read_ahead")),
        )
        names = [f"{storage.basename(index)}@{o}" for o in self.offsets]
        self.start(node, pipeline.batch_size, len(self.offsets), names, on_error_of(node, pipeline))

    def locate(self, index: int) -> tuple[int, int]:
        """(file number, offset in that file) of record ``index``."""
        offset = self.offsets[index]
        k = int(np.searchsorted(self.starts, offset, side="right")) - 1
        return k, offset - int(self.starts[k])

    def source_info(self, index: int) -> str:
        k, offset = self.locate(index)
        return f"{self.files[k]}@{offset}"

    def length(self, index: int) -> int:
        """Bytes of record ``index``: up to the next offset or its file's end."""
        k, offset = self.locate(index)
        return min(self.lengths[index], self.sizes[k] - offset)

    def begin_batch(self, indices: list[int]) -> None:
        self.ranges.prefetch([(*self.locate(i), self.length(i)) for i in indices])

    def end_batch(self) -> None:
        self.ranges.forget()

    def read(self, index: int) -> list[Any]:
        k, offset = self.locate(index)
        # a record belongs to one file: read up to the next offset or the file's end
        try:
            buf = memoryview(self.ranges.read(k, offset, self.length(index)))
        except OSError as exc:
            if self.files[k] in str(exc):
                raise
            raise OSError(f"cannot read {self.files[k]!r}: {exc.strerror or exc}") from None
        where = f"{self.files[k]!r} offset {offset}"
        data = decode_record(buf, where)
        image, labels = decode_image_record(data, where)
        return [image, labels]

    def empty(self) -> list[Any]:
        return [np.zeros(0, np.uint8), np.zeros(1, np.float32)]

    def close(self) -> None:
        self.ranges.close()
