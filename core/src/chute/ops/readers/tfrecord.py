"""fn.readers.tfrecord: features of tf.train.Example records, as DALI reads them.

The output is a dict ``{feature name: DataNode}`` in the order of the
``features`` dict (DALI's order). int64 features give int64 arrays, float32
features float32 arrays, string features the bytes of their value (uint8).
Epochs, shards, shuffling and state are the indexed readers' (records.py):
the records of all files, in file order, form the dataset.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import DataNode, OpNode
from chute.graph.passes.hints import NO_HINTS, NodeHints
from chute.graph.schema import REQUIRED, Arg, Schema
from chute.graph.spec import Spec
from chute.ops.readers import storage, tfrecord_format
from chute.ops.readers.ranges import RANGE_ARGS, RangeSource, Record
from chute.ops.readers.records import as_path_list, check_record_args
from chute.ops.readers.tfrecord_example import (
    OUTPUT_DTYPES,
    Feature,
    decode_example,
    float32,
    int64,
    string,
)
from chute.runtime.operator import Operator
from chute.runtime.registry import register

_KIND = {int64: 3, float32: 2, string: 1}
_KIND_NAMES = {1: "bytes_list", 2: "float_list", 3: "int64_list", 0: "no value list"}


@register(legacy=("tfrecord_reader",), ops_name="TFRecord", ops_aliases=("TFRecordReader",))
class TFRecordReader(Operator):
    """Reads features of tf.train.Example records from TFRecord files.

    Returns a dict of outputs keyed by feature name, in the order of
    ``features`` (``chute.tfrecord.FixedLenFeature`` / ``VarLenFeature``).
    ``index_path`` lists DALI ``tfrecord2idx`` index files, one per ``path``;
    without it chute indexes each file on first use and keeps the index in its
    cache folder ($CHUTE_CACHE_DIR or ~/.cache/chute; a changed file is indexed
    again). ``check_crc`` (a chute extra; DALI has no CRC check) verifies both
    CRCs of every record read. A record that is truncated, corrupt or lacks a
    feature without default raises naming the file and offset, or is skipped with
    a report under ``on_error="skip"``.
    """

    kind = "source"
    schema = Schema(
        name="readers.tfrecord",
        num_outputs=1,
        args=(
            Arg("path", "any", REQUIRED, "TFRecord file(s).", per_sample=False),
            Arg(
                "index_path",
                "any",
                None,
                "tfrecord2idx index file(s), one per path (default: chute indexes the files).",
                per_sample=False,
            ),
            Arg(
                "features",
                "any",
                REQUIRED,
                "Dict of feature name -> chute.tfrecord.FixedLenFeature / VarLenFeature.",
                per_sample=False,
            ),
            Arg(
                "check_crc",
                "bool",
                False,
                "Verify the CRC32C of each record's length and data (chute extra).",
                per_sample=False,
            ),
            *RANGE_ARGS,
        ),
    )

    def __call__(self, *inputs: Any, **kwargs: Any) -> dict[str, DataNode]:  # type: ignore[override]
        outputs = super().__call__(*inputs, **kwargs)
        if isinstance(outputs, DataNode):
            outputs = [outputs]
        names = list({**self.init_args, **kwargs}["features"])
        return dict(zip(names, outputs))

    def num_outputs(self, args: dict[str, Any], num_inputs: int = 0) -> int:
        return len(args["features"])

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        op = self.schema.display_name
        args["path"] = as_path_list(op, "path", args.get("path"))
        index = as_path_list(op, "index_path", args.get("index_path"), required=False)
        if index is not None and len(index) != len(args["path"]):
            raise ValueError(
                f"{op}: argument 'index_path' lists {len(index)} file(s) for "
                f"{len(args['path'])} path(s); give one index per TFRecord file"
            )
        args["index_path"] = index
        features = args.get("features")
        if not isinstance(features, dict) or not features:
            raise TypeError(f"{op}: argument 'features' must be a non-empty dict name -> Feature")
        for name, feature in features.items():
            if not isinstance(name, str) or not isinstance(feature, Feature):
                raise TypeError(
                    f"{op}: argument 'features': {name!r} must map a name to "
                    "chute.tfrecord.FixedLenFeature or VarLenFeature, got "
                    f"{type(feature).__name__}"
                )
        check_record_args(op, args)

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [Spec(OUTPUT_DTYPES[f.dtype], f.ndim, None) for f in node.args["features"].values()]

    def open(self, node: OpNode, pipeline: Any, hints: NodeHints = NO_HINTS) -> RangeSource:
        paths = list(node.arg("path"))
        index_paths = node.arg("index_path")
        records: list[Record] = []
        for i, path in enumerate(paths):
            try:
                if index_paths is not None:
                    index = tfrecord_format.read_index(index_paths[i])
                else:
                    index = tfrecord_format.record_index(path)
            except OSError as exc:
                raise OSError(f"{node.label}: cannot index {path!r}: {exc}") from None
            except ValueError as exc:
                raise ValueError(f"{node.label}: {exc}") from None
            records.extend(Record(i, offset, size) for offset, size in index)
        features: dict[str, Feature] = dict(node.args["features"])
        check_crc = bool(node.arg("check_crc"))

        def decode(data: np.ndarray, record: Record) -> list[np.ndarray]:
            if len(data) < record.size:
                raise ValueError(
                    f"truncated TFRecord: the record needs {record.size} bytes, "
                    f"the file holds {len(data)} from there"
                )
            payload = tfrecord_format.unframe(data, check_crc)
            # string values stay views of the record's bytes (read for this record alone,
            # or a read-only view of the mapped file): no copy of an image's bytes
            example = decode_example(payload, copy=False)
            return [parse_feature(name, f, example) for name, f in features.items()]

        def empty() -> list[np.ndarray]:
            return [
                np.zeros((0,) * max(f.ndim, 1), OUTPUT_DTYPES[f.dtype]) for f in features.values()
            ]

        on_error = node.args.get("on_error") or pipeline.on_error
        names = [f"{storage.basename(paths[r.file])}:{r.offset}" for r in records]
        return RangeSource(
            node, paths, records, pipeline.batch_size, decode, empty, on_error, names
        )


def parse_feature(name: str, feature: Feature, example: dict[str, tuple[int, Any]]) -> np.ndarray:
    """One feature of a decoded Example as the reader outputs it (see FixedLen/VarLenFeature)."""
    dtype = OUTPUT_DTYPES[feature.dtype]
    kind, values = example.get(name, (0, None))
    if kind == 0 and name in example:
        values = [] if feature.dtype == string else np.zeros(0, dtype)  # a Feature with no list
    elif name not in example:
        if not feature.fixed:
            return np.zeros((0, *feature.shape), dtype)
        if feature.default_value is None:
            raise ValueError(f"feature {name!r} is missing and has no default_value")
        return _default(name, feature)
    elif kind != _KIND[feature.dtype]:
        raise ValueError(
            f"feature {name!r} holds a {_KIND_NAMES[kind]}, the reader expects "
            f"{_KIND_NAMES[_KIND[feature.dtype]]} ({OUTPUT_DTYPES[feature.dtype]})"
        )
    if feature.dtype == string:
        if len(values) != 1:
            raise ValueError(f"string feature {name!r} holds {len(values)} values, expected 1")
        return np.frombuffer(values[0], np.uint8)
    values = np.asarray(values, dtype)
    if feature.fixed:
        shape = feature.shape or (1,)
        if values.size != int(np.prod(shape)):
            raise ValueError(
                f"feature {name!r} holds {values.size} values, its shape {list(feature.shape)} "
                f"needs {int(np.prod(shape))}"
            )
        return values.reshape(shape)
    inner = int(np.prod(feature.shape)) if feature.shape else 1
    if inner == 0 or values.size % inner:
        raise ValueError(
            f"feature {name!r} holds {values.size} values, not a whole number of "
            f"partial shape {list(feature.shape)}"
        )
    return values.reshape((-1, *feature.shape))


def _default(name: str, feature: Feature) -> np.ndarray:
    dtype = OUTPUT_DTYPES[feature.dtype]
    value = feature.default_value
    if feature.dtype == string:
        raw = value.encode() if isinstance(value, str) else bytes(value)  # type: ignore[arg-type]
        return np.frombuffer(raw, np.uint8).copy()
    shape = feature.shape or (1,)
    arr = np.asarray(value, dtype)
    if arr.size == 1:
        return np.full(shape, arr.reshape(-1)[0], dtype)
    if arr.size != int(np.prod(shape)):
        raise ValueError(
            f"feature {name!r}: default_value has {arr.size} values, shape {list(shape)} "
            f"needs {int(np.prod(shape))}"
        )
    return arr.reshape(shape).copy()
