"""tf.train.Example without TensorFlow: features, and the protobuf wire format by hand.

The messages (tensorflow/core/example/{example,feature}.proto)::

    Example   { Features features = 1; }
    Features  { map<string, Feature> feature = 1; }   // entries: key = 1, value = 2
    Feature   { oneof kind { BytesList bytes_list = 1; FloatList float_list = 2;
                             Int64List int64_list = 3; } }
    BytesList { repeated bytes value = 1; }
    FloatList { repeated float value = 1 [packed]; }
    Int64List { repeated int64 value = 1 [packed]; }

The decoder reads packed and unpacked repeated fields and skips unknown ones, as
protobuf parsers do; the encoder writes what TensorFlow writes (packed lists).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from chute.ops.readers.protowire import encode_bytes, encode_varint

__all__ = [
    "Feature",
    "FixedLenFeature",
    "VarLenFeature",
    "decode_example",
    "encode_example",
    "float32",
    "int64",
    "string",
]

# DALI's nvidia.dali.tfrecord type constants (the values of its FeatureType enum)
int64 = 0
string = 1
float32 = 2
_TYPE_NAMES = {int64: "int64", string: "string", float32: "float32"}
_KIND = {int64: 3, float32: 2, string: 1}  # the Feature field holding each type
OUTPUT_DTYPES = {
    int64: np.dtype(np.int64),
    float32: np.dtype(np.float32),
    string: np.dtype(np.uint8),
}


@dataclass(frozen=True)
class Feature:
    """What to extract from each record: a type, a shape (fixed) or a partial shape (var)."""

    dtype: int
    fixed: bool
    shape: tuple[int, ...] = ()
    default_value: object = None

    def __repr__(self) -> str:
        kind = "FixedLenFeature" if self.fixed else "VarLenFeature"
        shape = f"{list(self.shape)}, " if self.fixed or self.shape else ""
        return f"{kind}({shape}{_TYPE_NAMES[self.dtype]}, {self.default_value!r})"

    @property
    def ndim(self) -> int:
        """Dimensions of the output: a fixed shape [] gives (1,), as in DALI."""
        if self.dtype == string:
            return 1
        return max(len(self.shape), 1) if self.fixed else 1 + len(self.shape)


def _check_type(dtype: object) -> int:
    if dtype not in _TYPE_NAMES or isinstance(dtype, bool):
        raise TypeError(
            f"tfrecord feature type must be chute.tfrecord.int64, float32 or string, got {dtype!r}"
        )
    return int(dtype)  # type: ignore[call-overload]


def _check_shape(shape: object, what: str) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        shape = [shape]
    if not isinstance(shape, Sequence) or not all(
        isinstance(d, (int, np.integer)) and d >= 0 for d in shape
    ):
        raise TypeError(f"tfrecord {what} must be a list of non-negative ints, got {shape!r}")
    return tuple(int(d) for d in shape)


def FixedLenFeature(shape: Sequence[int], dtype: int, default_value: object = None) -> Feature:
    """A feature of a fixed shape; ``default_value`` fills it where a record lacks it.

    ``shape=[]`` gives a 1-element output (shape (1,)), as in DALI. A string
    feature gives the bytes of its one value (uint8); its shape must hold one value.
    """
    dtype = _check_type(dtype)
    shape = _check_shape(shape, "FixedLenFeature shape")
    if dtype == string and int(np.prod(shape)) > 1:
        raise ValueError("tfrecord: a string FixedLenFeature holds one value (shape [] or [1])")
    return Feature(dtype, True, shape, default_value)


def VarLenFeature(*args: object, default_value: object = None) -> Feature:
    """A feature of any length: ``VarLenFeature(dtype[, default])`` or
    ``VarLenFeature(partial_shape, dtype[, default])``, which reshapes the values to
    ``(-1, *partial_shape)``. A record without the feature gives an empty array (as
    TensorFlow's VarLenFeature does); ``default_value`` is accepted for DALI's signature.
    """
    if args and isinstance(args[0], (list, tuple)):
        partial, rest = _check_shape(args[0], "VarLenFeature partial_shape"), args[1:]
    else:
        partial, rest = (), args
    if not rest or len(rest) > 2:
        raise TypeError("VarLenFeature([partial_shape,] dtype[, default_value])")
    dtype = _check_type(rest[0])
    if len(rest) == 2:
        default_value = rest[1]
    if dtype == string:
        raise ValueError("tfrecord: string features must be FixedLenFeature (as in DALI)")
    return Feature(dtype, False, partial, default_value)


# ---- wire format ---------------------------------------------------------------------------
def _varint(buf: memoryview, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint in tf.train.Example")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint longer than 10 bytes in tf.train.Example")


def _fields(buf: memoryview):
    """(field number, wire type, value) of a message: ints for varints, views otherwise."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 2:
            length, pos = _varint(buf, pos)
            if pos + length > end:
                raise ValueError("length-delimited field runs past its message in tf.train.Example")
            value, pos = buf[pos : pos + length], pos + length
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            if pos + size > end:
                raise ValueError("fixed-size field runs past its message in tf.train.Example")
            value, pos = buf[pos : pos + size], pos + size
        else:
            raise ValueError(f"unsupported protobuf wire type {wire} in tf.train.Example")
        yield number, wire, value


def decode_example(data: bytes | memoryview, copy: bool = True) -> dict[str, tuple[int, object]]:
    """Parse a serialized tf.train.Example: name -> (kind, values).

    kind 1 (bytes_list) gives a list of bytes (memoryviews into ``data`` with
    ``copy=False``); 2 (float_list) a float32 array; 3 (int64_list) an int64 array.
    Raises ValueError when the bytes are not a valid Example.
    """
    out: dict[str, tuple[int, object]] = {}
    for number, wire, features in _fields(memoryview(data)):
        if number != 1 or wire != 2:
            continue
        for fnum, fwire, entry in _fields(features):
            if fnum != 1 or fwire != 2:
                continue
            name, value = "", memoryview(b"")
            for enum_, ewire, part in _fields(entry):
                if enum_ == 1 and ewire == 2:
                    name = bytes(part).decode("utf-8", "replace")
                elif enum_ == 2 and ewire == 2:
                    value = part
            out[name] = _decode_feature(value, copy)
    return out


def _decode_feature(buf: memoryview, copy: bool = True) -> tuple[int, object]:
    kind, values = 0, None
    for number, wire, lst in _fields(buf):
        if wire != 2 or number not in (1, 2, 3):
            continue
        kind = number
        if number == 1:
            values = [bytes(v) if copy else v for n, w, v in _fields(lst) if n == 1 and w == 2]
        elif number == 2:
            parts = []
            for n, w, v in _fields(lst):
                if n == 1 and w == 2:
                    if len(v) % 4:
                        raise ValueError("packed float_list of a size not divisible by 4")
                    parts.append(np.frombuffer(v, "<f4"))
                elif n == 1 and w == 5:
                    parts.append(np.frombuffer(v, "<f4"))
            values = np.concatenate(parts).astype(np.float32) if parts else np.zeros(0, np.float32)
        else:
            ints: list[int] = []
            for n, w, v in _fields(lst):
                if n == 1 and w == 2:
                    pos = 0
                    while pos < len(v):
                        x, pos = _varint(v, pos)
                        ints.append(x)
                elif n == 1 and w == 0:
                    ints.append(v)
            # varints hold int64 as two's complement on 64 bits
            values = np.array(ints, np.uint64).view(np.int64)
    return kind, values


def encode_example(features: Mapping[str, object]) -> bytes:
    """Serialize a tf.train.Example of ``name -> values`` as TensorFlow does.

    Values: ``bytes`` / ``str`` / a list of them (bytes_list), a float or float
    array/list (float_list), an int or int array/list (int64_list). NumPy arrays
    pick the list by dtype kind ("f" floats, "i"/"u"/"b" ints).
    """
    entries = []
    for name, value in features.items():
        entry = encode_bytes(1, name.encode()) + encode_bytes(2, _encode_feature(value))
        entries.append(encode_bytes(1, entry))
    return encode_bytes(1, b"".join(entries))


def _encode_feature(value: object) -> bytes:
    if isinstance(value, (bytes, str)):
        value = [value]
    if isinstance(value, np.ndarray):
        kind = "f" if value.dtype.kind == "f" else "i"
        value = value.reshape(-1).tolist()
    elif isinstance(value, (int, float, np.number)):
        kind = "f" if isinstance(value, (float, np.floating)) else "i"
        value = [value]
    else:
        value = list(value)  # type: ignore[call-overload]
        kind = "b" if value and isinstance(value[0], (bytes, str)) else None
        if kind is None:
            kind = "f" if any(isinstance(v, (float, np.floating)) for v in value) else "i"
    if kind == "b":
        items = b"".join(encode_bytes(1, v.encode() if isinstance(v, str) else v) for v in value)
        return encode_bytes(1, items)
    if kind == "f":
        return encode_bytes(2, encode_bytes(1, struct.pack(f"<{len(value)}f", *value)))
    packed = b"".join(encode_varint(int(v)) for v in value)
    return encode_bytes(3, encode_bytes(1, packed))
