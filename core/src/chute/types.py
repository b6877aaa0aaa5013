"""Type constants in DALI's vocabulary: data types, image types, interpolation, policies.

``DALIDataType``, ``DALIImageType`` and ``DALIInterpType`` are enums with DALI 2.4's
members and integer values. A data type also stands for its NumPy dtype
(``np.dtype(types.FLOAT)`` is float32, ``types.FLOAT == np.float32``), and any NumPy
dtype is accepted wherever a ``types.*`` data type is; batches report NumPy dtypes.
Operator arguments take the image and interpolation types by their ``arg`` strings
too (``output_type="RGB"``, ``interp_type="linear"``).
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
    "PipelineAPIType",
    "to_dali_type",
    "to_dtype",
    "to_numpy_type",
]


class DALIDataType(enum.IntEnum):
    """DALI's data types, with DALI 2.4's members and values (``int(types.FLOAT) == 9``).

    Each element type stands for a NumPy dtype (:attr:`dtype`), and NumPy takes it
    wherever it takes a dtype: ``np.dtype(types.FLOAT)`` is float32,
    ``arr.astype(types.UINT8)`` works and ``arr.dtype == types.FLOAT`` holds.
    Beyond DALI, ``types.FLOAT == np.float32`` holds too (chute's batches report NumPy
    dtypes). The members that are not element types (``IMAGE_TYPE``, ``DATA_TYPE``,
    ``TENSOR_LAYOUT``, the ``_..._VEC`` argument types, ...) have no NumPy dtype.
    """

    NO_TYPE = -1
    UINT8 = 0
    UINT16 = 1
    UINT32 = 2
    UINT64 = 3
    INT8 = 4
    INT16 = 5
    INT32 = 6
    INT64 = 7
    FLOAT16 = 8
    FLOAT = 9
    FLOAT64 = 10
    BOOL = 11
    STRING = 12
    _BOOL_VEC = 13
    _INT32_VEC = 14
    _STRING_VEC = 15
    _FLOAT_VEC = 16
    FEATURE = 17
    _FEATURE_VEC = 18
    _FEATURE_DICT = 19
    IMAGE_TYPE = 20
    DATA_TYPE = 21
    INTERP_TYPE = 22
    TENSOR_LAYOUT = 23
    PYTHON_OBJECT = 24
    _TENSOR_LAYOUT_VEC = 25
    _DATA_TYPE_VEC = 26
    _INT64_VEC = 27

    @property
    def dtype(self) -> np.dtype:
        """The NumPy dtype of this element type; TypeError for the non-element members."""
        try:
            return _NUMPY_OF[int(self)]
        except KeyError:
            raise TypeError(
                f"types.{self.name} is not an element type: it has no NumPy dtype"
            ) from None

    def __eq__(self, other: object) -> bool:
        numpy_dtype = _NUMPY_OF.get(int(self))
        if isinstance(other, (int, enum.Enum)) or numpy_dtype is None:
            return int(self) == other
        try:
            return numpy_dtype == np.dtype(other)  # type: ignore[call-overload]
        except TypeError:
            return NotImplemented

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    def __hash__(self) -> int:
        # equal to its NumPy dtype, so it hashes like it (dicts keyed by dtypes find it)
        return hash(_NUMPY_OF.get(int(self), int(self)))

    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


# DALIDataType value -> NumPy dtype (keyed by int: a member's hash is its dtype's)
_NUMPY_OF: dict[int, np.dtype] = {
    0: np.dtype(np.uint8),
    1: np.dtype(np.uint16),
    2: np.dtype(np.uint32),
    3: np.dtype(np.uint64),
    4: np.dtype(np.int8),
    5: np.dtype(np.int16),
    6: np.dtype(np.int32),
    7: np.dtype(np.int64),
    8: np.dtype(np.float16),
    9: np.dtype(np.float32),
    10: np.dtype(np.float64),
    11: np.dtype(np.bool_),
    12: np.dtype(np.str_),  # STRING: chute's; DALI has no NumPy type for it
}

CPU_ONLY_DEVICE_ID = -99999  # DALI's device_id of a CPU-only pipeline (chute takes None too)

# chute's earlier name for the data types
DType = DALIDataType

NO_TYPE = DALIDataType.NO_TYPE
BOOL = DALIDataType.BOOL
INT8 = DALIDataType.INT8
UINT8 = DALIDataType.UINT8
INT16 = DALIDataType.INT16
UINT16 = DALIDataType.UINT16
INT32 = DALIDataType.INT32
UINT32 = DALIDataType.UINT32
INT64 = DALIDataType.INT64
UINT64 = DALIDataType.UINT64
FLOAT16 = DALIDataType.FLOAT16
FLOAT = DALIDataType.FLOAT
FLOAT32 = DALIDataType.FLOAT  # chute's spelling of FLOAT
FLOAT64 = DALIDataType.FLOAT64
STRING = DALIDataType.STRING
FEATURE = DALIDataType.FEATURE
IMAGE_TYPE = DALIDataType.IMAGE_TYPE
DATA_TYPE = DALIDataType.DATA_TYPE
INTERP_TYPE = DALIDataType.INTERP_TYPE
TENSOR_LAYOUT = DALIDataType.TENSOR_LAYOUT
PYTHON_OBJECT = DALIDataType.PYTHON_OBJECT


def to_dtype(value: object) -> np.dtype:
    """Return the numpy dtype for a ``types.*`` constant, a numpy dtype/type or a name."""
    if isinstance(value, DALIDataType):
        return value.dtype
    if isinstance(value, str) and value.upper() in DALIDataType.__members__:
        return DALIDataType[value.upper()].dtype
    if isinstance(value, str) and value.upper() == "FLOAT32":
        return np.dtype(np.float32)
    try:
        return np.dtype(value)  # type: ignore[call-overload]
    except TypeError as exc:
        raise TypeError(f"not a data type: {value!r}") from exc


def to_numpy_type(dali_type: object) -> type:
    """The NumPy scalar type of a ``types.*`` data type: ``to_numpy_type(types.INT32) is np.int32``."""
    return to_dtype(dali_type).type


def to_dali_type(framework_type: object) -> DALIDataType:
    """The ``types.*`` data type of a NumPy dtype or type (or anything NumPy reads as one):
    ``to_dali_type(np.float32) is types.FLOAT``."""
    try:
        dtype = to_dtype(framework_type)
    except TypeError:  # a framework's dtype: torch.float32 -> "float32"
        name = str(framework_type).rpartition(".")[2]
        try:
            dtype = np.dtype(name)
        except TypeError:
            raise TypeError(f"{framework_type!r} has no DALI data type") from None
    if dtype.kind == "U":
        return DALIDataType.STRING
    for value, numpy_dtype in _NUMPY_OF.items():
        if numpy_dtype == dtype:
            return DALIDataType(value)
    raise TypeError(f"{dtype} has no DALI data type")


class TensorLayout(str):
    """A layout: one letter per dimension ("HWC", "FCHW"); a ``str`` wherever one is expected."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"TensorLayout({str(self)!r})"


# DALI's layout constants (the batch dimension is implicit)
SAME = TensorLayout("")  # DALI: keep the input's layout
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


class _ArgumentEnum(enum.IntEnum):
    """A DALI enum (an int, as in DALI) that operator arguments also take by its ``arg`` string."""

    @property
    def arg(self) -> str:
        """The string an operator argument holds for this member (``"RGB"``, ``"linear"``)."""
        return self.name

    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"


class DALIImageType(_ArgumentEnum):
    """Color spaces of decoded images: DALI 2.4's members and values, and chute's ``HSV``."""

    RGB = 0
    BGR = 1
    GRAY = 2
    YCbCr = 3
    ANY_DATA = 4
    HSV = 100  # chute's (color_space_conversion); not in DALI

    @property
    def channels(self) -> int | None:
        """Channels of an image of this type (None for ANY_DATA)."""
        return {"GRAY": 1, "ANY_DATA": None}.get(self.name, 3)


ImageType = DALIImageType  # chute's earlier name
RGB = ImageType.RGB
BGR = ImageType.BGR
GRAY = ImageType.GRAY
YCbCr = ImageType.YCbCr
HSV = ImageType.HSV
ANY_DATA = ImageType.ANY_DATA


class DALIInterpType(_ArgumentEnum):
    """Interpolation methods of resampling operators: DALI 2.4's members and values.

    Arguments hold them as strings: ``types.INTERP_LINEAR.arg == "linear"``.
    """

    INTERP_NN = 0
    INTERP_LINEAR = 1
    INTERP_CUBIC = 2
    INTERP_LANCZOS3 = 3
    INTERP_TRIANGULAR = 4
    INTERP_GAUSSIAN = 5

    @property
    def arg(self) -> str:
        return self.name.removeprefix("INTERP_").lower()


InterpType = DALIInterpType  # chute's earlier name
INTERP_NN = InterpType.INTERP_NN
INTERP_LINEAR = InterpType.INTERP_LINEAR
INTERP_CUBIC = InterpType.INTERP_CUBIC
INTERP_LANCZOS3 = InterpType.INTERP_LANCZOS3
INTERP_TRIANGULAR = InterpType.INTERP_TRIANGULAR
INTERP_GAUSSIAN = InterpType.INTERP_GAUSSIAN


class PipelineAPIType(enum.Enum):
    """DALI's kinds of pipeline API (kept for programs that name them; chute needs none)."""

    BASIC = 0
    ITERATOR = 1
    SCHEDULED = 2


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
