"""TensorListCPU: a batch of samples in host memory."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from chute.tensors.tensor import (
    TensorCPU,
    check_layout,
    copy_to_pointer,
    host_array,
    is_capsule,
    reinterpreted,
)


class TensorListCPU:
    """A batch of ``len(self)`` samples of one dtype and ndim; shapes may differ.

    Made, as in DALI, from one array whose first dimension is the batch (a NumPy
    array, a DLPack capsule, an object with ``__dlpack__``), from a list of samples
    (arrays, ``TensorCPU``s, DLPack objects), or from another TensorListCPU (sharing
    its memory, with a new ``layout``). ``layout`` names the dimensions of a sample.

    Dense batches (all shapes equal) are stored, or stacked once on first use,
    as one contiguous array, so that ``as_array()``, ``__array__`` and
    ``__dlpack__`` hand out that memory without another copy. The pipeline
    never writes to a batch after handing it out.
    """

    def __init__(self, data: Any, layout: str | None = "", meta: Sequence[dict] | None = None):
        if isinstance(data, TensorListCPU):
            layout = data.layout() if layout is None else layout
            meta = data.meta if meta is None else meta
            data = data._dense if data._dense is not None else list(data._samples or [])
        one_array = hasattr(data, "__dlpack__") and not isinstance(data, (list, tuple))
        if one_array or is_capsule(data) or isinstance(data, (np.generic, int, float)):
            data = host_array(data, "TensorListCPU")
        if isinstance(data, np.ndarray):
            if data.ndim == 0:
                raise ValueError("a batch needs a leading sample dimension; got a 0-d array")
            self._dense: np.ndarray | None = data
            self._samples: list[np.ndarray] | None = None
        else:
            self._dense = None
            samples = list(data)
            if not all(type(s) is np.ndarray for s in samples):  # (NumPy samples: as they are)
                samples = [
                    host_array(s, f"TensorListCPU sample {i}") for i, s in enumerate(samples)
                ]
            self._samples = samples
            kinds = (
                {s.dtype.kind for s in samples}
                if samples and samples[0].dtype.kind in "US"
                else set()
            )
            if kinds == {"U"} or kinds == {"S"}:
                # Strings (file paths) differ in length, hence in numpy itemsize: one dtype.
                widest = max((s.dtype for s in self._samples), key=lambda d: d.itemsize)
                self._samples = [s.astype(widest, copy=False) for s in self._samples]
            first = self._samples[0] if self._samples else None
            if first is not None and not all(
                s.dtype == first.dtype and s.ndim == first.ndim for s in self._samples
            ):
                for i, s in enumerate(self._samples):
                    if s.dtype != first.dtype or s.ndim != first.ndim:
                        raise TypeError(
                            f"sample {i} has dtype {s.dtype} and ndim {s.ndim}, but sample 0 has "
                            f"dtype {first.dtype} and ndim {first.ndim}: a batch has one dtype and ndim"
                        )
        self._layout = (
            check_layout(layout, self.ndim, "TensorListCPU") if len(self) else str(layout or "")
        )
        self.meta = list(meta) if meta is not None else None

    # ---- DALI's TensorList API ----------------------------------------------------------
    def __len__(self) -> int:
        return len(self._dense) if self._dense is not None else len(self._samples)  # type: ignore[arg-type]

    def at(self, i: int) -> np.ndarray:
        """Sample ``i`` as a NumPy array (a view, no copy)."""
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"sample index {i} out of range for a batch of {n}")
        return self._dense[i] if self._dense is not None else self._samples[i]  # type: ignore[index]

    def __getitem__(self, i: int) -> TensorCPU:
        """Sample ``i`` as a :class:`TensorCPU` (DALI's ``batch[i]``; ``at(i)`` gives NumPy)."""
        meta = self.meta[i] if self.meta is not None and -len(self) <= i < len(self) else None
        return TensorCPU(self.at(i), self._layout, meta)

    def __iter__(self) -> Iterator[TensorCPU]:
        """The samples as TensorCPU, in order."""
        return (self[i] for i in range(len(self)))

    def source_info(self) -> list[str]:
        """Each sample's origin (the reader's file path), "" where there is none."""
        meta = self.meta or [{}] * len(self)
        return [str(m.get("source_info", "")) for m in meta]

    @property
    def dtype(self) -> np.dtype:
        if self._dense is not None:
            return self._dense.dtype
        return self._samples[0].dtype if self._samples else np.dtype(np.float32)  # type: ignore[index]

    @property
    def ndim(self) -> int:
        """Dimensions of each sample (not counting the batch)."""
        if self._dense is not None:
            return self._dense.ndim - 1
        return self._samples[0].ndim if self._samples else 0  # type: ignore[index]

    @property
    def nbytes(self) -> int:
        """The bytes the samples hold (as TensorListGPU.nbytes; the executor's statistics)."""
        if self._dense is not None:
            return int(self._dense.nbytes)
        return sum(s.nbytes for s in self._samples or ())

    def layout(self) -> str:
        """The samples' layout ("HWC", ...); "" when unknown."""
        return self._layout

    def set_layout(self, layout: str | None) -> None:
        """Name the samples' dimensions anew (DALI's ``set_layout``); checked against them."""
        self._layout = (
            check_layout(layout, self.ndim, "TensorListCPU.set_layout")
            if len(self)
            else (layout or "")
        )

    def reinterpret(self, new_type: Any) -> None:
        """View every sample's elements as ``new_type`` of the same size, in place (no copy)."""
        dtype = reinterpreted(self.dtype, new_type, "TensorListCPU")
        if self._dense is not None:
            self._dense = self._dense.view(dtype)
        else:
            self._samples = [s.view(dtype) for s in self._samples or []]

    def data_ptr(self) -> int:
        """The address of the first element (of the dense batch, or of sample 0); 0 if empty."""
        if not len(self):
            return 0
        first = self._dense if self._dense is not None else self._samples[0]  # type: ignore[index]
        return int(first.ctypes.data)

    def reset(self) -> None:
        """Make the batch empty (DALI's ``reset``)."""
        self._dense, self._samples, self.meta = None, [], None

    @staticmethod
    def broadcast(sample: Any, n: int) -> TensorListCPU:
        """A batch of ``n`` copies of ``sample`` (a TensorCPU or an array), as views."""
        tensor = sample if isinstance(sample, TensorCPU) else TensorCPU(sample)
        array = tensor.as_array()
        return TensorListCPU(np.broadcast_to(array, (int(n), *array.shape)), tensor.layout())

    @classmethod
    def from_dlpack_list(
        cls, list_of_objects: Sequence[Any], layout: str | None = None, contiguous: bool = False
    ) -> TensorListCPU:
        """A batch of DLPack objects (CPU tensors), one per sample; ``contiguous`` copies
        them into one array when they share a shape."""
        batch = cls(list(list_of_objects), layout)
        if contiguous and len(batch) and batch.is_dense_tensor():
            batch.as_array()
        return batch

    def shape(self) -> list[tuple[int, ...]]:
        """The shape of every sample."""
        if self._dense is not None:
            return [tuple(self._dense.shape[1:])] * len(self._dense)
        return [tuple(s.shape) for s in self._samples]  # type: ignore[union-attr]

    def is_dense_tensor(self) -> bool:
        if self._dense is not None:
            return True
        samples = self._samples or []
        first = samples[0].shape if samples else None
        return all(s.shape == first for s in samples)

    def as_array(self) -> np.ndarray:
        """The whole batch as one array of shape (N, *sample_shape); dense batches only."""
        if self._dense is None:
            if not self.is_dense_tensor():
                shapes = self.shape()
                raise ValueError(
                    "the batch is ragged, samples have different shapes "
                    f"({', '.join(map(str, shapes[:6]))}{', ...' if len(shapes) > 6 else ''}); "
                    "use at(i) per sample or pad them (fn.pad)"
                )
            if not self._samples:
                raise ValueError("an empty batch has no dense shape")
            self._dense = _stack(self._samples)
            self._samples = None
        return self._dense

    def as_tensor(self) -> TensorCPU:
        """The dense batch as one TensorCPU of shape (N, *sample_shape), layout "N" + layout."""
        return TensorCPU(self.as_array(), ("N" + self._layout) if self._layout else "")

    def as_reshaped_tensor(self, shape: Sequence[int]) -> TensorCPU:
        """The dense batch as one TensorCPU of ``shape`` (same element count; no copy)."""
        arr = self.as_array()
        try:
            return TensorCPU(arr.reshape(tuple(shape)))
        except ValueError:
            raise ValueError(
                f"as_reshaped_tensor: cannot view {arr.size} elements as shape {tuple(shape)}"
            ) from None

    def copy_to_external(
        self, ptr: Any, cuda_stream: Any = None, non_blocking: bool = False, **kwargs: Any
    ) -> None:
        """Copy the dense batch to ``ptr`` (an address, a ctypes pointer or an array)."""
        copy_to_pointer(self.as_array(), ptr)

    def as_cpu(self) -> TensorListCPU:
        return self

    def head(self, n: int) -> TensorListCPU:
        """The first ``n`` samples (views, no copy)."""
        meta = self.meta[:n] if self.meta is not None else None
        if self._dense is not None:
            return TensorListCPU(self._dense[:n], self._layout, meta)
        if n == 0 and self._samples:  # keep dtype and sample shape in an empty batch
            first = self._samples[0]
            return TensorListCPU(np.empty((0, *first.shape), first.dtype), self._layout, meta)
        return TensorListCPU(self._samples[:n], self._layout, meta)  # type: ignore[index]

    def repeat_last(self, n: int) -> TensorListCPU:
        """The batch extended to ``n`` samples by repeating its last sample."""
        samples = [self.at(i) for i in range(len(self))]
        samples += [samples[-1]] * (n - len(samples))
        return TensorListCPU(samples, self._layout)

    def as_padded(self, fill: float = 0) -> np.ndarray:
        """The batch as one array, each sample padded at the end of every axis to the largest shape."""
        if self.is_dense_tensor() and len(self):
            return self.as_array()
        shapes = np.array(self.shape())
        out = np.full((len(self), *shapes.max(axis=0)), fill, dtype=self.dtype)
        for i in range(len(self)):
            s = self.at(i)
            out[(i, *(slice(0, d) for d in s.shape))] = s
        return out

    # ---- interchange -----------------------------------------------------------------------
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        arr = self.as_array()
        return arr if dtype is None else arr.astype(dtype, copy=False)

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, **kwargs: Any) -> Any:
        arr = self.as_array()
        if max_version is not None:
            return arr.__dlpack__(max_version=max_version, **kwargs)
        return arr.__dlpack__()

    def __dlpack_device__(self) -> tuple[int, int]:
        return (1, 0)  # kDLCPU

    def __repr__(self) -> str:
        return (
            f"TensorListCPU(len={len(self)}, dtype={self.dtype}, layout={self._layout!r}, "
            f"shapes={self.shape()[:4]}{'...' if len(self) > 4 else ''})"
        )


def _stack(samples: list[np.ndarray]) -> np.ndarray:
    """``np.stack`` of same-shaped samples, made as one concatenation: a quarter of the
    time for a batch of small samples (256 labels: 33 against 126 us on the VM), which the
    framework iterators densify on the training loop's thread."""
    first = samples[0]
    if first.ndim == 0:
        return np.stack(samples)
    return np.concatenate(samples).reshape(len(samples), *first.shape)
