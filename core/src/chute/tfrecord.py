"""TFRecord features for ``fn.readers.tfrecord`` (DALI's ``nvidia.dali.tfrecord``).

``from chute import tfrecord`` then ``tfrecord.FixedLenFeature([], tfrecord.int64, -1)``,
``tfrecord.VarLenFeature(tfrecord.float32, 0.0)`` or
``tfrecord.VarLenFeature([4], tfrecord.float32, 0.0)`` (values reshaped to (-1, 4)).
Also here, for making TFRecord files without TensorFlow: :func:`encode_example`
(a serialized tf.train.Example), :func:`write_records` (a framed TFRecord file)
and :func:`write_index` / :func:`read_index` (DALI's tfrecord2idx format).
"""

from __future__ import annotations

from chute.ops.readers.tfrecord_example import (
    Feature,
    FixedLenFeature,
    VarLenFeature,
    decode_example,
    encode_example,
    float32,
    int64,
    string,
)
from chute.ops.readers.tfrecord_format import read_index, scan, write_index, write_records

__all__ = [
    "Feature",
    "FixedLenFeature",
    "VarLenFeature",
    "decode_example",
    "encode_example",
    "float32",
    "int64",
    "read_index",
    "scan",
    "string",
    "write_index",
    "write_records",
]
