"""Type constants in DALI's vocabulary: data types, image types, interpolation, policies.

Data types are plain :class:`numpy.dtype` objects, so ``types.FLOAT == np.float32``
holds and any NumPy dtype is accepted wherever a ``types.*`` constant is.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = [
    "Constant",
    "DALIDataType",
    "DALIImageType",
    "DALIInterpType",
    "DType",
    "ImageType",
    "InterpType",
    "LastBatchPolicy",
    "OnError",
    "SampleInfo",
    "BatchInfo",
    "ScalarConstant",
    "TensorLayout",
    "to_dtype",
    "to_numpy_type",
]


class DType:
    """Data types of tensor elements (each a ``numpy.dtype``)."""

    BOOL = np.dtype(np.bool_)
    INT8 = np.dtype(np.int8)
    UINT8 = np.dtype(np.uint8)
    INT16 = np.dtype(np.int16)
    UINT16 = np.dtype(np.uint16)
    INT32 = np.dtype(np.int32)
    UINT32 = np.dtype(np.uint32)
    INT64 = np.dtype(np.int64)
    UINT64 = np.dtype(np.uint64)
    FLOAT16 = np.dtype(np.float16)
    FLOAT = np.dtype(np.float32)
    FLOAT32 = np.dtype(np.float32)
    FLOAT64 = np.dtype(np.float64)
    STRING = np.dtype(np.str_)


DALIDataType = DType

BOOL = DType.BOOL
INT8 = DType.INT8
UINT8 = DType.UINT8
INT16 = DType.INT16
UINT16 = DType.UINT16
INT32 = DType.INT32
UINT32 = DType.UINT32
INT64 = DType.INT64
UINT64 = DType.UINT64
FLOAT16 = DType.FLOAT16
FLOAT = DType.FLOAT
FLOAT32 = DType.FLOAT32
FLOAT64 = DType.FLOAT64
STRING = DType.STRING


def to_dtype(value: object) -> np.dtype:
    """Return the numpy dtype for a ``types.*`` constant, a numpy dtype/type or a name."""
    if isinstance(value, str) and value.upper() in vars(DType):
        return vars(DType)[value.upper()]
    try:
        return np.dtype(value)  # type: ignore[arg-type]
    except TypeError as exc:
        raise TypeError(f"not a data type: {value!r}") from exc


def to_numpy_type(dali_type: object) -> type:
    """The NumPy scalar type of a ``types.*`` data type: ``to_numpy_type(types.INT32) is np.int32``."""
    return to_dtype(dali_type).type


class TensorLayout(str):
    """A layout: one letter per dimension ("HWC", "FCHW"); a ``str`` wherever one is expected."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"TensorLayout({str(self)!r})"


# DALI's layout constants (the batch dimension is implicit)
NHWC = TensorLayout("HWC")
NCHW = TensorLayout("CHW")
NFHWC = TensorLayout("FHWC")
NFCHW = TensorLayout("FCHW")
SAMPLE = TensorLayout("")


class ScalarConstant:
    """A scalar with an optional data type, for pipeline arithmetic and operator arguments.

    ``images * types.Constant(2, types.UINT8)`` keeps uint8 (a plain ``2`` would too);
    ``types.Constant(0.5, types.FLOAT16)`` makes the other operand's type promote as
    float16. Operators take its ``value``.
    """

    __slots__ = ("dtype", "value")

    def __init__(self, value: Any, dtype: object = None):
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value.item()
        if isinstance(value, np.generic):
            dtype = value.dtype if dtype is None else dtype
            value = value.item()
        if not isinstance(value, (bool, int, float)):
            raise TypeError(f"ScalarConstant takes a bool, int or float, got {value!r}")
        self.dtype = None if dtype is None else to_dtype(dtype)
        self.value = value if self.dtype is None else self.dtype.type(value).item()

    def as_array(self) -> np.ndarray:
        """The value as a 0-d array of its dtype (NumPy's type for it when none was given)."""
        return np.asarray(self.value, self.dtype)

    def __int__(self) -> int:
        return int(self.value)

    def __float__(self) -> float:
        return float(self.value)

    def __bool__(self) -> bool:
        return bool(self.value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ScalarConstant):
            return self.value == other.value and self.dtype == other.dtype
        return self.value == other

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        dtype = "" if self.dtype is None else f", {self.dtype.name}"
        return f"ScalarConstant({self.value!r}{dtype})"


# chute.pipeline binds how a non-scalar Constant becomes a node of the pipeline being defined
_constant_node: Callable[..., Any] | None = None


def bind_constant_node(factory: Callable[..., Any]) -> None:
    """Set what :func:`Constant` calls for arrays: ``factory(array, layout, device)``."""
    global _constant_node
    _constant_node = factory


def Constant(
    value: Any,
    dtype: object = None,
    shape: Any = None,
    layout: str | None = None,
    device: str | None = None,
    **kwargs: Any,
) -> Any:
    """A constant: a :class:`ScalarConstant` for a scalar with no shape, layout or device,
    else (inside a pipeline definition) a DataNode whose every sample is ``value``
    (reshaped to ``shape``, of ``dtype``, on ``device``)."""
    is_scalar = isinstance(value, (bool, int, float, np.generic)) or (
        isinstance(value, np.ndarray) and value.ndim == 0
    )
    if is_scalar and shape is None and layout is None and device is None and not kwargs:
        return ScalarConstant(value, dtype)
    array = np.array(value, dtype=None if dtype is None else to_dtype(dtype))
    if array.dtype == np.float64 and dtype is None and not isinstance(value, np.ndarray):
        array = array.astype(np.float32)  # DALI: Python floats become FLOAT
    if array.dtype == np.int64 and dtype is None and not isinstance(value, np.ndarray):
        array = array.astype(np.int32)  # and Python ints INT32
    if shape is not None:
        array = array.reshape(tuple(shape) if not isinstance(shape, int) else (shape,))
    if _constant_node is None:
        raise RuntimeError("types.Constant needs chute.pipeline (import chute first)")
    return _constant_node(array, layout, device)


class ImageType(enum.Enum):
    """Color spaces of decoded images."""

    RGB = "RGB"
    BGR = "BGR"
    GRAY = "GRAY"
    YCbCr = "YCbCr"
    HSV = "HSV"
    ANY_DATA = "ANY_DATA"

    @property
    def channels(self) -> int | None:
        return {"GRAY": 1, "ANY_DATA": None}.get(self.value, 3)


DALIImageType = ImageType
RGB = ImageType.RGB
BGR = ImageType.BGR
GRAY = ImageType.GRAY
YCbCr = ImageType.YCbCr
HSV = ImageType.HSV
ANY_DATA = ImageType.ANY_DATA


class InterpType(enum.Enum):
    """Interpolation methods of resampling operators."""

    INTERP_NN = "nn"
    INTERP_LINEAR = "linear"
    INTERP_CUBIC = "cubic"
    INTERP_LANCZOS3 = "lanczos3"
    INTERP_TRIANGULAR = "triangular"
    INTERP_GAUSSIAN = "gaussian"


DALIInterpType = InterpType
INTERP_NN = InterpType.INTERP_NN
INTERP_LINEAR = InterpType.INTERP_LINEAR
INTERP_CUBIC = InterpType.INTERP_CUBIC
INTERP_LANCZOS3 = InterpType.INTERP_LANCZOS3
INTERP_TRIANGULAR = InterpType.INTERP_TRIANGULAR
INTERP_GAUSSIAN = InterpType.INTERP_GAUSSIAN


class LastBatchPolicy(enum.Enum):
    """What an iterator does with the last, incomplete batch of an epoch."""

    FILL = "fill"
    DROP = "drop"
    PARTIAL = "partial"


class OnError(enum.Enum):
    """What happens to a sample that fails to read, decode or process."""

    RAISE = "raise"
    SKIP = "skip"
    WARN = "warn"


class SampleInfo:
    """Where a sample stands, handed to per-sample ``external_source`` callbacks."""

    __slots__ = ("epoch_idx", "idx_in_batch", "idx_in_epoch", "iteration")

    def __init__(self, idx_in_epoch: int, idx_in_batch: int, iteration: int, epoch_idx: int):
        self.idx_in_epoch = idx_in_epoch
        self.idx_in_batch = idx_in_batch
        self.iteration = iteration
        self.epoch_idx = epoch_idx

    def __repr__(self) -> str:
        return (
            f"SampleInfo(idx_in_epoch={self.idx_in_epoch}, idx_in_batch={self.idx_in_batch}, "
            f"iteration={self.iteration}, epoch_idx={self.epoch_idx})"
        )


class BatchInfo:
    """Where a batch stands, handed to batch ``external_source`` callbacks with batch_info=True."""

    __slots__ = ("epoch_idx", "iteration")

    def __init__(self, iteration: int, epoch_idx: int):
        self.iteration = iteration
        self.epoch_idx = epoch_idx

    def __repr__(self) -> str:
        return f"BatchInfo(iteration={self.iteration}, epoch_idx={self.epoch_idx})"
