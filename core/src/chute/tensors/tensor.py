"""TensorCPU: one sample of a batch, as DALI's ``TensorListCPU[i]`` gives it.

A thin view over a NumPy array (no copy) with DALI's methods: ``shape()``,
``layout()``, ``dtype``, ``as_array()``, ``source_info()``, ``copy_to_external()``
and the array protocols (``np.asarray(t)``, ``__array_interface__``, ``__dlpack__``).
Made from a NumPy array (or anything ``np.asarray`` takes), a DLPack capsule or an
object with ``__dlpack__`` (a CPU torch tensor, a jax array): no copy where the
memory allows it.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

__all__ = [
    "SampleTensor",
    "TensorCPU",
    "check_layout",
    "copy_to_pointer",
    "host_array",
    "reinterpreted",
]


def is_capsule(obj: Any) -> bool:
    """True for a DLPack capsule (a ``PyCapsule``, what ``x.__dlpack__()`` returns)."""
    return type(obj).__name__ == "PyCapsule"


class _Capsule:
    """A DLPack capsule dressed as an exporter, for ``np.from_dlpack``."""

    def __init__(self, capsule: Any):
        self._capsule = capsule

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._capsule

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)  # kDLCPU: a capsule of device memory fails in NumPy, naming it


def host_array(data: Any, what: str) -> np.ndarray:
    """``data`` as a NumPy array: an array-like, a DLPack capsule or a ``__dlpack__`` object.

    No copy where NumPy can share the memory. ``what`` names the caller in errors.
    """
    if isinstance(data, np.ndarray):
        return data
    try:
        if is_capsule(data):
            return np.from_dlpack(_Capsule(data))
        if hasattr(data, "__dlpack__") and not hasattr(data, "__array_interface__"):
            return np.from_dlpack(data)
    except (BufferError, RuntimeError, TypeError) as exc:
        raise TypeError(
            f"{what}: cannot read this DLPack tensor into host memory ({exc}); a GPU tensor "
            "goes to TensorListGPU / TensorGPU"
        ) from None
    return np.asarray(data)


def reinterpreted(dtype: np.dtype, new_type: Any, what: str) -> np.dtype:
    """``new_type`` (a ``types.*`` data type or NumPy dtype) for data of ``dtype`` seen anew:
    the element size must stay (DALI's ``reinterpret``)."""
    new = np.dtype(new_type)
    if new.itemsize != dtype.itemsize:
        raise ValueError(
            f"{what}.reinterpret: {dtype} has {dtype.itemsize}-byte elements, {new} "
            f"{new.itemsize}-byte ones; the element size must not change"
        )
    return new


def check_layout(layout: Any, ndim: int, what: str) -> str:
    """``layout`` as a str, checked against ``ndim`` dimensions: "" or one letter per dimension."""
    layout = str(layout or "")
    if layout and len(layout) != ndim:
        raise ValueError(
            f"{what}: the layout {layout!r} has {len(layout)} dimensions but the data has {ndim} "
            "(a layout names every dimension of a sample, or is empty)"
        )
    return layout


def copy_to_pointer(array: np.ndarray, ptr: Any) -> None:
    """Copy ``array``'s bytes to ``ptr``: an int address, a ctypes pointer, or an array."""
    src = np.ascontiguousarray(array)
    if hasattr(ptr, "__array_interface__") or isinstance(ptr, np.ndarray):
        dst = np.asarray(ptr)
        if dst.nbytes != src.nbytes:
            raise ValueError(
                f"copy_to_external: the destination holds {dst.nbytes} bytes, the data {src.nbytes}"
            )
        np.copyto(dst, src.reshape(dst.shape).view(dst.dtype), casting="no")
        return
    if isinstance(ptr, ctypes.c_void_p):
        address = ptr.value
    elif isinstance(ptr, int):
        address = ptr
    else:
        address = ctypes.cast(ptr, ctypes.c_void_p).value
    if not address:
        raise ValueError("copy_to_external: the destination pointer is null")
    ctypes.memmove(address, src.ctypes.data, src.nbytes)


class SampleTensor:
    """What TensorCPU and TensorGPU share: one sample's array and its dimensions' names."""

    __slots__ = ()
    _array: Any
    _layout: str

    def shape(self) -> list[int]:
        """The sample's shape (a list, as in DALI)."""
        return list(self._array.shape)

    @property
    def dtype(self) -> np.dtype:
        """The element type (a NumPy dtype: ``t.dtype == types.UINT8``)."""
        return self._array.dtype

    def layout(self) -> str:
        return self._layout

    def set_layout(self, layout: str | None) -> None:
        """Name the dimensions anew (DALI's ``set_layout``); checked against the shape."""
        self._layout = check_layout(layout, self._array.ndim, f"{type(self).__name__}.set_layout")

    def reinterpret(self, new_type: Any) -> None:
        """View the elements as ``new_type`` of the same size, in place (no copy)."""
        dtype = reinterpreted(self._array.dtype, new_type, type(self).__name__)
        self._array = self._array.view(dtype)


class TensorCPU(SampleTensor):
    """One sample in host memory (a view of the batch's memory)."""

    __slots__ = ("_array", "_layout", "_meta")

    def __init__(self, array: Any, layout: str | None = "", meta: dict | None = None):
        self._array = host_array(array, "TensorCPU")
        self._layout = check_layout(layout, self._array.ndim, "TensorCPU")
        self._meta = meta

    @property
    def ndim(self) -> int:
        return self._array.ndim

    def get_property(self, key: str) -> Any:
        """A property of the sample, as DALI names them: "source_info" or "layout"."""
        if key == "source_info":
            return self.source_info()
        if key == "layout":
            return self._layout
        raise KeyError(f"TensorCPU.get_property: unknown property {key!r} (source_info, layout)")

    def source_info(self) -> str:
        """Where the sample came from (the reader's file path), or ""."""
        return str((self._meta or {}).get("source_info", ""))

    def as_array(self) -> np.ndarray:
        """The sample as a NumPy array (no copy)."""
        return self._array

    def as_cpu(self) -> TensorCPU:
        return self

    def squeeze(self, dim: int | None = None) -> TensorCPU:
        """The sample without its size-1 dimensions (or only ``dim``); the layout follows."""
        axes = (
            tuple(i for i, n in enumerate(self._array.shape) if n == 1) if dim is None else (dim,)
        )
        layout = "".join(c for i, c in enumerate(self._layout) if i not in axes)
        return TensorCPU(np.squeeze(self._array, axis=axes), layout, self._meta)

    def data_ptr(self) -> int:
        """The address of the first element."""
        return int(self._array.ctypes.data)

    def copy_to_external(self, ptr: Any, non_blocking: bool = False) -> None:
        """Copy the sample to memory at ``ptr`` (an address, a ctypes pointer or an array)."""
        copy_to_pointer(self._array, ptr)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return self._array if dtype is None else self._array.astype(dtype, copy=False)

    @property
    def __array_interface__(self) -> dict[str, Any]:
        return self._array.__array_interface__

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, **kwargs: Any) -> Any:
        if max_version is not None:
            return self._array.__dlpack__(max_version=max_version, **kwargs)
        return self._array.__dlpack__()

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)  # kDLCPU

    # Beyond DALI: NumPy's indexing and scalar conversions, so that code written for
    # ``at(i)`` (an ndarray) keeps working on ``batch[i]``.
    def __len__(self) -> int:
        return len(self._array)

    def __getitem__(self, index: Any) -> Any:
        return self._array[index]

    def __int__(self) -> int:
        return int(self._array)

    def __float__(self) -> float:
        return float(self._array)

    def __repr__(self) -> str:
        return f"TensorCPU(shape={self.shape()}, dtype={self.dtype}, layout={self._layout!r})"
