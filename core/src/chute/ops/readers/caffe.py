"""fn.readers.caffe and fn.readers.caffe2: samples from LMDB databases of Caffe / Caffe2 protobufs.

Both list the database's keys at build time (LMDB's key order, as a cursor walks
it) and read the values of each batch in one read transaction. The messages are
decoded by hand (:mod:`chute.ops.readers.protowire`): Caffe's ``Datum``
(channels 1, height 2, width 3, data 4, label 5, float_data 6, encoded 7) and
Caffe2's ``TensorProtos`` (protos 1) of ``TensorProto`` (dims 1, data_type 2,
float_data 3, int32_data 4, byte_data 5, string_data 6, int64_data 10). Needs the
``lmdb`` package (``pip install 'chute[lmdb]'``).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import NO_HINTS, NodeHints
from chute.graph.schema import REQUIRED, Arg, Schema
from chute.graph.spec import Spec
from chute.ops.readers import protowire as pw
from chute.ops.readers import storage
from chute.ops.readers.file import READER_ARGS
from chute.ops.readers.lmdb_env import close_env, lmdb_module, open_env
from chute.ops.readers.records import (
    RecordError,
    RecordSource,
    check_record_args,
    on_error_of,
)
from chute.runtime.operator import Operator
from chute.runtime.registry import register

SINGLE_LABEL, MULTI_LABEL_SPARSE, MULTI_LABEL_DENSE, MULTI_LABEL_WEIGHTED_SPARSE, NO_LABEL = range(
    5
)
# TensorProto.DataType values
FLOAT, INT32, BYTE, STRING, INT64 = 1, 2, 3, 4, 10


class LmdbSource(RecordSource):
    """The keys of an LMDB database and one read transaction per batch."""

    def open_db(self, node: OpNode, pipeline: Any) -> None:
        lmdb = lmdb_module()
        self.path = node.arg("path")
        if storage.is_url(self.path):
            raise ValueError(
                f"{node.label}: argument 'path': LMDB maps its database into memory, so it "
                f"is read from a local folder, not {self.path!r} (copy it first)"
            )
        if not os.path.exists(self.path):
            raise ValueError(f"{node.label}: argument 'path': no LMDB database at {self.path!r}")
        try:
            self.env = open_env(self.path)
        except lmdb.Error as exc:
            raise ValueError(f"{node.label}: cannot open LMDB {self.path!r}: {exc}") from None
        with self.env.begin(buffers=False) as txn:
            self.keys = [bytes(k) for k in txn.cursor().iternext(keys=True, values=False)]
        self.txn = None
        self.start(
            node,
            pipeline.batch_size,
            len(self.keys),
            [repr(k) for k in self.keys],
            on_error_of(node, pipeline),
        )

    def source_info(self, index: int) -> str:
        return f"{self.path}:{self.keys[index].decode('utf-8', 'backslashreplace')}"

    def begin_batch(self, indices: list[int]) -> None:
        self.txn = self.env.begin(buffers=False)

    def end_batch(self) -> None:
        if self.txn is not None:
            self.txn.abort()
            self.txn = None

    def value(self, index: int) -> bytes:
        """The value of record ``index``; RecordError names the database and key if it is gone."""
        data = self.txn.get(self.keys[index])
        if data is None:
            raise RecordError(f"LMDB {self.path!r}: key {self.keys[index]!r} is missing")
        return data

    def fail(self, index: int, what: str) -> RecordError:
        return RecordError(f"LMDB {self.path!r} key {self.keys[index]!r}: {what}")

    def close(self) -> None:
        self.end_batch()
        if self.env is not None:
            close_env(self.path)
            self.env = None


# ---- Caffe ------------------------------------------------------------------------------------
def parse_datum(buf: bytes) -> dict[str, Any]:
    """A Caffe ``Datum`` as a dict (channels, height, width, data, label, encoded)."""
    datum: dict[str, Any] = {"channels": 0, "height": 0, "width": 0, "encoded": None}
    for number, wire, value in pw.fields(buf):
        if number in (1, 2, 3, 5) and wire == pw.VARINT:
            name = {1: "channels", 2: "height", 3: "width", 5: "label"}[number]
            datum[name] = pw.signed(value)  # type: ignore[arg-type]
        elif number == 4 and wire == pw.BYTES:
            datum["data"] = value
        elif number == 7 and wire == pw.VARINT:
            datum["encoded"] = bool(value)
    return datum


def encode_datum(
    data: bytes,
    label: int | None = None,
    encoded: bool | None = None,
    shape: tuple[int, int, int] | None = None,
) -> bytes:
    """A Caffe ``Datum`` (``shape`` = (channels, height, width) of raw data)."""
    out = b""
    if shape is not None:
        out += pw.encode_int(1, shape[0]) + pw.encode_int(2, shape[1]) + pw.encode_int(3, shape[2])
    out += pw.encode_bytes(4, data)
    if label is not None:
        out += pw.encode_int(5, label)
    if encoded is not None:
        out += pw.encode_int(7, int(encoded))
    return out


@register(legacy=("caffe_reader",))
class CaffeReader(Operator):
    """Reads (image, label) pairs from a Caffe LMDB of ``Datum`` records.

    Encoded images come out as bytes (uint8, 1-D, for fn.decoders.image); raw ones
    (``encoded`` false) as uint8 (height, width, channels) holding the Datum's bytes as
    stored. Labels are int32 of shape (1,). Needs ``pip install 'chute[lmdb]'``.
    """

    kind = "source"
    schema = Schema(
        name="readers.caffe",
        num_outputs=2,
        args=(
            Arg("path", "str", REQUIRED, "Path of the LMDB database.", per_sample=False),
            Arg(
                "image_available",
                "bool",
                True,
                "Whether the records hold images.",
                per_sample=False,
            ),
            Arg(
                "label_available",
                "bool",
                True,
                "Whether the records hold labels.",
                per_sample=False,
            ),
            *READER_ARGS,
        ),
    )

    def num_outputs(self, args: dict[str, Any], num_inputs: int = 0) -> int:
        return int(args.get("image_available", True)) + int(args.get("label_available", True))

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        check_record_args("fn.readers.caffe", args)
        if self.num_outputs(args) == 0:
            raise ValueError(
                "fn.readers.caffe: arguments 'image_available' and 'label_available' are both False"
            )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        specs = []
        if node.arg("image_available"):
            specs.append(Spec(np.dtype(np.uint8), None, None))
        if node.arg("label_available"):
            specs.append(Spec(np.dtype(np.int32), 1, None))
        return specs

    def open(self, node: OpNode, pipeline: Any, hints: NodeHints = NO_HINTS) -> CaffeSource:
        return CaffeSource(node, pipeline)


class CaffeSource(LmdbSource):
    def __init__(self, node: OpNode, pipeline: Any):
        self.image = node.arg("image_available")
        self.label = node.arg("label_available")
        self.open_db(node, pipeline)

    def read(self, index: int) -> list[Any]:
        try:
            datum = parse_datum(self.value(index))
        except pw.WireError as exc:
            raise self.fail(index, f"not a Caffe Datum: {exc}") from None
        out: list[Any] = []
        if self.image:
            data = datum.get("data")
            if data is None:
                raise self.fail(index, "the Datum has no image data")
            image = np.frombuffer(data, np.uint8)
            if datum["encoded"] is False:
                shape = (datum["height"], datum["width"], datum["channels"])
                if int(np.prod(shape)) != image.size:
                    raise self.fail(
                        index, f"raw image of {image.size} bytes does not fill (H, W, C) {shape}"
                    )
                image = image.reshape(shape)
            out.append(image)
        if self.label:
            out.append(np.array([datum.get("label", 0)], np.int32))
        return out

    def empty(self) -> list[Any]:
        out: list[Any] = []
        if self.image:
            out.append(np.zeros(0, np.uint8))
        if self.label:
            out.append(np.zeros(1, np.int32))
        return out


# ---- Caffe2 -----------------------------------------------------------------------------------
def parse_tensor(buf: bytes) -> dict[str, Any]:
    """A Caffe2 ``TensorProto``: dims, data_type and its data."""
    t: dict[str, Any] = {"dims": [], "data_type": FLOAT, "float": [], "int32": [], "int64": []}
    t["strings"] = []
    for number, wire, value in pw.fields(buf):
        if number == 1:
            t["dims"] += [pw.signed(v, 64) for v in pw.varints(wire, value)]
        elif number == 2 and wire == pw.VARINT:
            t["data_type"] = value
        elif number == 3:
            t["float"].append(pw.floats(wire, value))
        elif number == 4:
            t["int32"] += [pw.signed(v) for v in pw.varints(wire, value)]
        elif number == 5 and wire == pw.BYTES:
            t["bytes"] = value
        elif number == 6 and wire == pw.BYTES:
            t["strings"].append(value)
        elif number == 10:
            t["int64"] += [pw.signed(v, 64) for v in pw.varints(wire, value)]
    t["float"] = np.concatenate(t["float"]) if t["float"] else np.zeros(0, np.float32)
    return t


def parse_tensor_protos(buf: bytes) -> list[dict[str, Any]]:
    """A Caffe2 ``TensorProtos``: its list of tensors."""
    return [parse_tensor(v) for n, w, v in pw.fields(buf) if n == 1 and w == pw.BYTES]  # type: ignore[arg-type]


def encode_tensor(data_type: int, values: Any = (), dims: tuple[int, ...] = ()) -> bytes:
    """A Caffe2 ``TensorProto`` of one data type (STRING: ``values`` is a list of bytes)."""
    out = b"".join(pw.encode_int(1, d) for d in dims) + pw.encode_int(2, data_type)
    if data_type == FLOAT:
        out += pw.encode_packed_floats(3, values)
    elif data_type == INT32:
        out += pw.encode_packed_ints(4, values)
    elif data_type == BYTE:
        out += pw.encode_bytes(5, bytes(values))
    elif data_type == STRING:
        out += b"".join(pw.encode_bytes(6, v) for v in values)
    elif data_type == INT64:
        out += pw.encode_packed_ints(10, values)
    return out


def encode_tensor_protos(tensors: list[bytes]) -> bytes:
    return b"".join(pw.encode_bytes(1, t) for t in tensors)


def tensor_values(t: dict[str, Any], what: str) -> np.ndarray:
    """The data of a FLOAT, INT32 or INT64 tensor as an array of its type."""
    if t["data_type"] == FLOAT:
        return np.asarray(t["float"], np.float32)
    if t["data_type"] == INT32:
        return np.asarray(t["int32"], np.int32)
    if t["data_type"] == INT64:
        return np.asarray(t["int64"], np.int64)
    raise ValueError(f"{what} has unsupported data type {t['data_type']}")


@register(legacy=("caffe2_reader",))
class Caffe2Reader(Operator):
    """Reads samples from a Caffe2 LMDB of ``TensorProtos``: image, label, extra tensors, bbox.

    Outputs, in order: the image (with ``image_available``: bytes of an encoded
    image from a STRING tensor, or uint8 (H, W, C) from a BYTE tensor), the label
    (unless ``label_type`` is 4: 0 one label, 1 sparse indices -> a 0/1 vector of
    ``num_labels``, 2 a dense vector, 3 sparse indices + weights -> a float32
    vector of ``num_labels``; int32 or float32 as stored), ``additional_inputs``
    more tensors, and with ``bbox`` the int32 box of 4 stored last (empty if the
    record has none). Needs ``pip install 'chute[lmdb]'``.
    """

    kind = "source"
    schema = Schema(
        name="readers.caffe2",
        num_outputs=2,
        args=(
            Arg("path", "str", REQUIRED, "Path of the LMDB database.", per_sample=False),
            Arg(
                "image_available",
                "bool",
                True,
                "Whether the records hold an image (their first tensor).",
                per_sample=False,
            ),
            Arg(
                "label_type",
                "int",
                SINGLE_LABEL,
                "0 single label, 1 multi-label sparse, 2 multi-label dense, "
                "3 multi-label weighted sparse, 4 no label.",
                per_sample=False,
                choices=(0, 1, 2, 3, 4),
            ),
            Arg(
                "num_labels",
                "int",
                1,
                "Number of classes (length of sparse label vectors).",
                per_sample=False,
            ),
            Arg(
                "additional_inputs",
                "int",
                0,
                "Number of further tensors of each record, each an output.",
                per_sample=False,
            ),
            Arg(
                "bbox",
                "bool",
                False,
                "Output the bounding box stored as the record's last tensor.",
                per_sample=False,
            ),
            *READER_ARGS,
        ),
    )

    def num_outputs(self, args: dict[str, Any], num_inputs: int = 0) -> int:
        return (
            int(args.get("image_available", True))
            + int(args.get("label_type", 0) != NO_LABEL)
            + args.get("additional_inputs", 0)
            + int(args.get("bbox", False))
        )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        check_record_args("fn.readers.caffe2", args)
        if args.get("additional_inputs", 0) < 0 or args.get("num_labels", 1) < 1:
            raise ValueError(
                "fn.readers.caffe2: 'additional_inputs' must be >= 0 and 'num_labels' >= 1"
            )
        if self.num_outputs(args) == 0:
            raise ValueError("fn.readers.caffe2: the arguments leave no output")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        specs = []
        if node.arg("image_available"):
            specs.append(Spec(np.dtype(np.uint8), None, None))
        label_type = node.arg("label_type")
        if label_type == MULTI_LABEL_WEIGHTED_SPARSE:
            specs.append(Spec(np.dtype(np.float32), 1, None))
        elif label_type != NO_LABEL:
            specs.append(Spec(None, 1, None))  # int32 or float32, as the records store it
        specs += [Spec(None, 1, None)] * node.arg("additional_inputs")
        if node.arg("bbox"):
            specs.append(Spec(np.dtype(np.int32), 1, None))
        return specs

    def open(self, node: OpNode, pipeline: Any, hints: NodeHints = NO_HINTS) -> Caffe2Source:
        return Caffe2Source(node, pipeline)


class Caffe2Source(LmdbSource):
    def __init__(self, node: OpNode, pipeline: Any):
        self.image = node.arg("image_available")
        self.label_type = node.arg("label_type")
        self.num_labels = node.arg("num_labels")
        self.additional = node.arg("additional_inputs")
        self.bbox = node.arg("bbox")
        self.open_db(node, pipeline)

    def read(self, index: int) -> list[Any]:
        try:
            protos = parse_tensor_protos(self.value(index))
            return self._outputs(protos)
        except (pw.WireError, ValueError, IndexError) as exc:
            if isinstance(exc, RecordError):
                raise
            raise self.fail(index, f"not a valid Caffe2 TensorProtos: {exc}") from None

    def _outputs(self, protos: list[dict[str, Any]]) -> list[Any]:
        out: list[Any] = []
        k = 0
        if self.image:
            t = protos[k]
            if t["data_type"] == STRING and t["strings"]:
                out.append(np.frombuffer(t["strings"][0], np.uint8))
            elif t["data_type"] == BYTE:
                dims = t["dims"]
                shape = (dims[0], dims[1], dims[2] if len(dims) == 3 else 1)
                out.append(np.frombuffer(t.get("bytes", b""), np.uint8).reshape(shape))
            else:
                raise ValueError(f"image tensor of data type {t['data_type']} (expected 3 or 4)")
            k += 1
        if self.label_type != NO_LABEL:
            out.append(self._label(protos, k))
            k += 1
        # As in DALI, sparse labels take one more tensor than the label itself before the
        # additional tensors begin (the weights of weighted sparse labels).
        first = k + int(self.label_type in (MULTI_LABEL_SPARSE, MULTI_LABEL_WEIGHTED_SPARSE))
        for i in range(first, first + self.additional):
            out.append(tensor_values(protos[i], f"additional tensor {i}"))
        if self.bbox:
            last = first + self.additional
            if len(protos) == last + 1:
                box = protos[last]
                if box["data_type"] != INT32 or len(box["int32"]) != 4:
                    raise ValueError("the bbox tensor must hold 4 int32 values")
                out.append(np.asarray(box["int32"], np.int32))
            else:
                out.append(np.zeros(0, np.int32))
        return out

    def _label(self, protos: list[dict[str, Any]], k: int) -> np.ndarray:
        values = tensor_values(protos[k], "the label tensor")
        if self.label_type == SINGLE_LABEL:
            if values.size != 1:
                raise ValueError(f"single label tensor holds {values.size} values")
            return values
        if self.label_type == MULTI_LABEL_DENSE:
            return values
        indices = values.astype(np.int64)
        if indices.size and (indices.min() < 0 or indices.max() >= self.num_labels):
            raise ValueError(f"label index out of [0, num_labels={self.num_labels})")
        if self.label_type == MULTI_LABEL_SPARSE:
            dense = np.zeros(self.num_labels, values.dtype)
            dense[indices] = 1
            return dense
        weights = tensor_values(protos[k + 1], "the label weights tensor")
        dense = np.zeros(self.num_labels, np.float32)
        dense[indices] = weights[: indices.size]
        return dense

    def empty(self) -> list[Any]:
        out: list[Any] = []
        if self.image:
            out.append(np.zeros(0, np.uint8))
        if self.label_type != NO_LABEL:
            out.append(np.zeros(0, np.float32))
        out += [np.zeros(0, np.float32)] * self.additional
        if self.bbox:
            out.append(np.zeros(0, np.int32))
        return out
