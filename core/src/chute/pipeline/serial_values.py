"""Argument values as JSON data and back, for chute's serialized pipelines.

A serialized pipeline is data, never code: these are the only kinds of value it
holds, each tagged where JSON has no type of its own.

========================  ====================================================
value                     JSON
========================  ====================================================
None, bool, int, str      themselves
float                     itself; NaN and infinities ``{"$float": "nan"}``
list                      a list
tuple                     ``{"$tuple": [...]}``
dict                      ``{"$dict": [[key, value], ...]}``
slice, Ellipsis           ``{"$slice": [start, stop, step]}``, ``{"$ellipsis": true}``
bytes                     ``{"$bytes": "<base64>"}``
numpy dtype               ``{"$dtype": "<f4"}`` (``dtype.str``)
numpy scalar              ``{"$scalar": "<u1", "value": 3}``
numpy array               ``{"$array": "<i2", "shape": [2, 3], "data": "<base64>"}``
chute.types enum member   ``{"$enum": "DALIImageType", "name": "RGB"}``
tfrecord feature          ``{"$feature": {"dtype": 0, "fixed": true, "shape": [], "default_value": -1}}``
========================  ====================================================

Anything else (a function, an object) raises ``TypeError`` naming where it sits;
reading an unknown tag raises ``ValueError``.
"""

from __future__ import annotations

import base64
import enum
import math
from typing import Any

import numpy as np

from chute import types
from chute.ops.readers.tfrecord_example import Feature, FixedLenFeature, VarLenFeature

__all__ = ["MalformedValue", "decode_value", "encode_value"]

_DATA_KINDS = "biufUS"  # dtype kinds a serialized pipeline holds: no objects


class MalformedValue(ValueError):
    """A serialized value that :func:`encode_value` would never have written."""


_ENUMS: dict[str, type[enum.Enum]] = {
    cls.__name__: cls
    for cls in (
        types.DALIDataType,
        types.DALIImageType,
        types.DALIInterpType,
        types.LastBatchPolicy,
        types.OnError,
        types.PipelineAPIType,
    )
}


def encode_value(value: Any, where: str) -> Any:
    """``value`` as JSON data (see the module's table); TypeError naming ``where`` otherwise."""
    if value is None or isinstance(value, (bool, str)):
        return str(value) if isinstance(value, str) else value
    if isinstance(value, enum.Enum):  # before int: DALI's enums are ints
        if type(value).__name__ not in _ENUMS:
            raise TypeError(f"{where}: the enum {type(value).__name__} is not chute.types'")
        return {"$enum": type(value).__name__, "name": value.name}
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$float": repr(value)}
    if isinstance(value, np.generic):
        if value.dtype.kind not in _DATA_KINDS:
            raise TypeError(f"{where}: a NumPy {value.dtype} scalar is not data")
        return {"$scalar": value.dtype.str, "value": encode_value(value.item(), where)}
    if isinstance(value, np.dtype):
        return {"$dtype": value.str}
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in _DATA_KINDS:
            raise TypeError(f"{where}: an array of {value.dtype} is not data")
        data = np.ascontiguousarray(value).tobytes()
        return {
            "$array": value.dtype.str,
            "shape": list(value.shape),
            "data": base64.b64encode(data).decode(),
        }
    if isinstance(value, bytes):
        return {"$bytes": base64.b64encode(value).decode()}
    if isinstance(value, list):
        return [encode_value(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, tuple):
        return {"$tuple": [encode_value(v, f"{where}[{i}]") for i, v in enumerate(value)]}
    if isinstance(value, dict):
        return {
            "$dict": [
                [encode_value(k, where), encode_value(v, f"{where}[{k!r}]")]
                for k, v in value.items()
            ]
        }
    if isinstance(value, slice):
        return {"$slice": [encode_value(v, where) for v in (value.start, value.stop, value.step)]}
    if value is Ellipsis:
        return {"$ellipsis": True}
    if isinstance(value, Feature):
        fields = {
            "dtype": value.dtype,
            "fixed": value.fixed,
            "shape": list(value.shape),
            "default_value": encode_value(value.default_value, f"{where}.default_value"),
        }
        return {"$feature": fields}
    what = "code" if callable(value) else "not data"
    raise TypeError(
        f"{where} is a {type(value).__name__}, which is {what}: a serialized pipeline holds "
        "only data (numbers, strings, arrays, dtypes, ...), never code or objects"
    )


def decode_value(data: Any, where: str) -> Any:
    """The value that :func:`encode_value` wrote as ``data``; ValueError for what it never writes."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        return [decode_value(v, f"{where}[{i}]") for i, v in enumerate(data)]
    tags = [k for k in data if k.startswith("$")] if isinstance(data, dict) else []
    if len(tags) != 1:
        raise MalformedValue(f"{where}: {data!r} is not a serialized value")
    decoder = _DECODERS.get(tags[0])
    if decoder is None:
        raise MalformedValue(f"{where}: unknown value tag {tags[0]!r}")
    try:
        return decoder(data, where)
    except MalformedValue:
        raise
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
        raise MalformedValue(f"{where}: a malformed {tags[0]} value ({exc!r})") from None


def _float(data: dict, where: str) -> float:
    text = data["$float"]
    if text not in ("nan", "inf", "-inf"):
        raise MalformedValue(f"{where}: {text!r} is not nan, inf or -inf")
    return float(text)


def _data_dtype(text: str, where: str) -> np.dtype:
    dtype = np.dtype(text)
    if dtype.kind not in _DATA_KINDS:
        raise MalformedValue(f"{where}: {dtype} is not a type of data a serialized pipeline holds")
    return dtype


def _scalar(data: dict, where: str) -> Any:
    return _data_dtype(data["$scalar"], where).type(decode_value(data["value"], where))


def _array(data: dict, where: str) -> np.ndarray:
    dtype = _data_dtype(data["$array"], where)
    raw = base64.b64decode(data["data"], validate=True)
    return np.frombuffer(raw, dtype).reshape([int(n) for n in data["shape"]]).copy()


def _enum(data: dict, where: str) -> enum.Enum:
    return _ENUMS[data["$enum"]][data["name"]]


def _feature(data: dict, where: str) -> Feature:
    f = data["$feature"]
    default = decode_value(f["default_value"], where)
    shape = [int(n) for n in f["shape"]]
    if f["fixed"]:
        return FixedLenFeature(shape, int(f["dtype"]), default)
    if shape:
        return VarLenFeature(shape, int(f["dtype"]), default)
    return VarLenFeature(int(f["dtype"]), default)


_DECODERS = {
    "$float": _float,
    "$tuple": lambda d, w: tuple(decode_value(d["$tuple"], w)),
    "$dict": lambda d, w: {decode_value(k, w): decode_value(v, w) for k, v in d["$dict"]},
    "$slice": lambda d, w: slice(*decode_value(d["$slice"], w)),
    "$ellipsis": lambda d, w: Ellipsis,
    "$bytes": lambda d, w: base64.b64decode(d["$bytes"], validate=True),
    "$dtype": lambda d, w: _data_dtype(d["$dtype"], w),
    "$scalar": _scalar,
    "$array": _array,
    "$enum": _enum,
    "$feature": _feature,
}
