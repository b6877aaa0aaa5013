"""Type constants in DALI's vocabulary: data types, image types, interpolation, policies.

Data types are plain :class:`numpy.dtype` objects, so ``types.FLOAT == np.float32``
holds and any NumPy dtype is accepted wherever a ``types.*`` constant is.
"""

from __future__ import annotations

import enum

import numpy as np

__all__ = [
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
    "to_dtype",
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
