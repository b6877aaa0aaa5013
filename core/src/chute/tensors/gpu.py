"""TensorListGPU: a batch of samples in GPU memory (CuPy), handed out zero-copy."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import Any

import numpy as np

from chute.tensors.cpu import TensorListCPU
from chute.tensors.tensor import (
    SampleTensor,
    TensorCPU,
    check_layout,
    is_capsule,
    reinterpreted,
)


def device_array(data: Any, what: str) -> Any:
    """``data`` as a CuPy array, sharing its memory: a CuPy array, a DLPack capsule or an
    object with ``__dlpack__`` (a CUDA torch tensor) or ``__cuda_array_interface__``."""
    cp = cupy_module()
    if isinstance(data, cp.ndarray):
        return data
    if isinstance(data, TensorGPU):
        return data.as_array()
    try:
        if is_capsule(data) or hasattr(data, "__dlpack__"):
            return cp.from_dlpack(data)
        if hasattr(data, "__cuda_array_interface__"):
            return cp.asarray(data)
    except (BufferError, RuntimeError, TypeError, ValueError) as exc:
        raise TypeError(
            f"{what}: cannot read this tensor as GPU memory ({exc}); host data goes to "
            "TensorListCPU / TensorCPU"
        ) from None
    raise TypeError(
        f"{what}: expected GPU data (a CuPy array, a DLPack capsule or tensor, or an object "
        f"with __cuda_array_interface__), got {type(data).__name__}"
    )


class TensorGPU(SampleTensor):
    """One sample in device memory, as DALI's ``TensorListGPU[i]`` gives it (a CuPy view).

    Made from a CuPy array, a DLPack capsule, or an object with ``__dlpack__`` or
    ``__cuda_array_interface__`` (no copy); ``device_id`` is accepted for DALI's
    signature (the memory says where it lives).
    """

    __slots__ = ("_array", "_batch", "_layout")

    def __init__(
        self,
        array: Any,
        layout: str | None = "",
        device_id: int | None = None,
        *,
        batch: TensorListGPU | None = None,
    ):
        self._array = device_array(array, "TensorGPU")
        self._layout = check_layout(layout, self._array.ndim, "TensorGPU")
        self._batch = batch  # orders consumers after the work that produced the batch

    def as_array(self) -> Any:
        """The sample as a CuPy array (no copy)."""
        return self._array

    def as_cpu(self) -> TensorCPU:
        """A host copy (waits for the work that produced it)."""
        if self._batch is not None and self._batch._ready is not None:
            self._batch._ready.synchronize()
        return TensorCPU(cupy_module().asnumpy(self._array), self._layout)

    def data_ptr(self) -> int:
        return int(self._array.data.ptr)

    def copy_to_external(self, ptr: Any, cuda_stream: Any = None, **kwargs: Any) -> None:
        """Copy the sample to device memory at ``ptr`` (an address or a CuPy array)."""
        _device_copy(self._array, ptr, self._batch)

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, **kwargs: Any) -> Any:
        if self._batch is not None:
            self._batch._order_before(stream)
        if max_version is None:
            return self._array.__dlpack__(stream=-1)
        return self._array.__dlpack__(stream=-1, max_version=max_version)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._array.__dlpack_device__()

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if self._batch is not None and self._batch._ready is not None:
            self._batch._ready.synchronize()
        return self._array.__cuda_array_interface__

    def __repr__(self) -> str:
        return f"TensorGPU(shape={self.shape()}, dtype={self.dtype}, layout={self._layout!r})"


def _device_copy(array: Any, ptr: Any, batch: TensorListGPU | None) -> None:
    """Copy a CuPy array's bytes to device memory ``ptr`` (an int address or a CuPy array)."""
    cp = cupy_module()
    src = cp.ascontiguousarray(array)
    if batch is not None and batch._ready is not None:
        batch._ready.synchronize()
    if isinstance(ptr, cp.ndarray):
        if ptr.nbytes != src.nbytes:
            raise ValueError(
                f"copy_to_external: the destination holds {ptr.nbytes} bytes, the data {src.nbytes}"
            )
        address = ptr.data.ptr
    else:
        address = int(getattr(ptr, "value", ptr))
    cp.cuda.runtime.memcpy(address, src.data.ptr, src.nbytes, cp.cuda.runtime.memcpyDeviceToDevice)


def cupy_module() -> ModuleType:
    """CuPy, imported on first use: GPU batches exist only where the GPU path loaded it."""
    import cupy

    return cupy


class TensorListGPU:
    """A batch in device memory: the TensorListCPU API plus ``as_cpu()``.

    Dense batches live in one contiguous CuPy array. Work that produced the
    batch was queued on the pipeline's ``stream``; ``__dlpack__(stream=s)``
    makes the consumer's stream ``s`` wait for it (no device-wide sync), and
    ``as_cpu()`` waits for it. Memory comes from CuPy's pool and returns there
    when the last consumer drops the batch.

    Samples given with ``shapes`` ((N, ndim) ints) and ``dtype`` are device images
    not yet viewed as CuPy arrays (a decoder's output, anything with
    ``__cuda_array_interface__``): they are kept as given and sample i becomes a
    CuPy view of ``shapes[i]`` when first asked for. A view per sample up front
    costs ~15 us a sample; GPU kernels read ``raw_samples()`` and ``shapes`` instead.
    """

    def __init__(
        self,
        data: Any,
        layout: str | None = "",
        stream: Any = None,
        device_id: int | None = None,
        *,
        shapes: Any = None,
        dtype: Any = None,
    ):
        cp = cupy_module()
        self._cp = cp
        if isinstance(data, TensorListGPU):  # DALI: the same memory, another layout
            layout = data.layout() if layout is None else layout
            stream = data.stream if stream is None else stream
            device_id = data.device_id if device_id is None else device_id
            if data._dense is None and data.shapes is not None and shapes is None:
                shapes, dtype = data.shapes, data.dtype  # still as given: no view per sample
            data = data._dense if data._dense is not None else list(data._samples or [])
        # the samples' shapes when they are kept as given (see the class docstring)
        self.shapes: np.ndarray | None = None
        self._dtype: np.dtype | None = None
        if shapes is not None:
            self._init_as_given(data, layout, stream, device_id, shapes, dtype)
            return
        if not isinstance(data, (list, tuple)):
            data = device_array(data, "TensorListGPU")
        if isinstance(data, cp.ndarray):
            if data.ndim == 0:
                raise ValueError("a batch needs a leading sample dimension; got a 0-d array")
            self._dense: Any = data
            self._samples: list[Any] | None = None
        else:
            self._dense = None
            # None: a sample that failed under on_error skip/warn, until the executor replaces it
            self._samples = [
                None if x is None else device_array(x, f"TensorListGPU sample {i}")
                for i, x in enumerate(data)
            ]
            present = [x for x in self._samples if x is not None]
            for i, x in enumerate(self._samples):
                first = present[0]
                if x is None:
                    continue
                if x.dtype != first.dtype or x.ndim != first.ndim:
                    raise TypeError(
                        f"sample {i} has dtype {x.dtype} and ndim {x.ndim}, but sample 0 has "
                        f"dtype {first.dtype} and ndim {first.ndim}: a batch has one dtype and ndim"
                    )
        present = [x for x in self._samples or () if x is not None]
        if device_id is None:
            first = self._dense if self._dense is not None else (present or [None])[0]
            device_id = first.device.id if first is not None else 0
        ndim = (
            (self._dense.ndim - 1)
            if self._dense is not None
            else (present[0].ndim if present else 0)
        )
        self._layout = (
            check_layout(layout, ndim, "TensorListGPU")
            if self._dense is not None or present
            else str(layout or "")
        )
        self._on_stream(stream, device_id)

    def _init_as_given(
        self,
        data: Any,
        layout: str | None,
        stream: Any,
        device_id: int | None,
        shapes: Any,
        dtype: Any,
    ) -> None:
        if dtype is None:
            raise TypeError("TensorListGPU: samples given with shapes= need their dtype= too")
        self._dense = None
        self._samples = list(data)
        self.shapes = np.asarray(shapes, np.int64)
        if self.shapes.ndim != 2 or len(self.shapes) != len(self._samples):
            raise ValueError(
                f"TensorListGPU: shapes= must be one row per sample, (N, ndim); got "
                f"{self.shapes.shape} for {len(self._samples)} samples"
            )
        self._dtype = np.dtype(dtype)
        ndim = self.shapes.shape[1]
        self._layout = (
            check_layout(layout, ndim, "TensorListGPU") if self._samples else str(layout or "")
        )
        self._on_stream(stream, 0 if device_id is None else device_id)

    def _on_stream(self, stream: Any, device_id: int) -> None:
        """Note the stream the batch's work was queued on, and an event after that work."""
        cp = self._cp
        self.stream = stream
        self.device_id = device_id
        self._ready = None
        if stream is not None:
            with cp.cuda.Device(device_id):
                self._ready = cp.cuda.Event(disable_timing=True)
                self._ready.record(stream)

    @classmethod
    def from_host(
        cls, batch: Any, node: Any = None, stream: Any = None, device_id: int = 0
    ) -> TensorListGPU:
        """Upload a host batch (a TensorListCPU or a list of arrays) on ``stream``."""
        cp = cupy_module()
        samples = (
            list(batch)
            if not isinstance(batch, TensorListCPU)
            else [batch.at(i) for i in range(len(batch))]
        )
        layout = batch.layout() if isinstance(batch, TensorListCPU) else ""
        with cp.cuda.Device(device_id), stream or cp.cuda.Stream.null:
            shapes = {s.shape for s in samples}
            if samples and len(shapes) == 1:
                host = np.ascontiguousarray(np.stack(samples))
                dense = cp.empty(host.shape, host.dtype)
                dense.set(host, stream=stream)
                return cls(dense, layout, stream, device_id)
            out = []
            for s in samples:
                d = cp.empty(s.shape, s.dtype)
                d.set(np.ascontiguousarray(s), stream=stream)
                out.append(d)
            return cls(out, layout, stream, device_id)

    # ---- TensorList API ----------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._dense) if self._dense is not None else len(self._samples)  # type: ignore[arg-type]

    def at(self, i: int) -> Any:
        """Sample ``i`` as a CuPy array (a view)."""
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"sample index {i} out of range for a batch of {n}")
        if self._dense is not None:
            return self._dense[i]
        x = self._samples[i]  # type: ignore[index]
        if self.shapes is not None and x is not None and not isinstance(x, self._cp.ndarray):
            x = self._view(i, x)
        return x

    def _view(self, i: int, x: Any) -> Any:
        """Sample ``i``, kept as given, as a CuPy view of its shape (made once)."""
        cp = self._cp
        with cp.cuda.Device(self.device_id), self.stream or cp.cuda.Stream.null:
            x = cp.asarray(x)
        if x.ndim < self.shapes.shape[1]:  # type: ignore[union-attr]
            x = x.reshape(tuple(self.shapes[i]))  # type: ignore[index]  # e.g. gray HW -> HWC
        self._samples[i] = x  # type: ignore[index]
        return x

    def raw_samples(self) -> list[Any]:
        """The samples as stored, for kernels: CuPy arrays, or device images kept as given."""
        return list(self._samples) if self._samples is not None else self.samples()

    def __getitem__(self, i: int) -> TensorGPU:
        """Sample ``i`` as a :class:`TensorGPU` (DALI's ``batch[i]``; ``at(i)`` gives CuPy)."""
        return TensorGPU(self.at(i), self._layout, batch=self)

    def __iter__(self) -> Iterator[TensorGPU]:
        return (self[i] for i in range(len(self)))

    def samples(self) -> list[Any]:
        return [self.at(i) for i in range(len(self))]

    @property
    def dtype(self) -> np.dtype:
        if self._dense is not None:
            return self._dense.dtype
        if self._dtype is not None:
            return self._dtype
        return self._samples[0].dtype if self._samples else np.dtype(np.float32)  # type: ignore[index]

    def layout(self) -> str:
        return self._layout

    def set_layout(self, layout: str | None) -> None:
        """Name the samples' dimensions anew (DALI's ``set_layout``); checked against them."""
        ndim = len(self.shape()[0]) if len(self) else 0
        self._layout = (
            check_layout(layout, ndim, "TensorListGPU.set_layout") if len(self) else (layout or "")
        )

    def reinterpret(self, new_type: Any) -> None:
        """View every sample's elements as ``new_type`` of the same size, in place (no copy)."""
        dtype = reinterpreted(self.dtype, new_type, "TensorListGPU")
        if self._dense is not None:
            self._dense = self._dense.view(dtype)
        else:
            self._samples = [x.view(dtype) for x in self.samples()]
            self._dtype = dtype if self._dtype is not None else None

    def data_ptr(self) -> int:
        """The device address of the first element (of the dense batch, or of sample 0)."""
        if not len(self):
            return 0
        first = self._dense if self._dense is not None else self.at(0)
        return int(first.data.ptr)

    def reset(self) -> None:
        """Make the batch empty (DALI's ``reset``)."""
        self._dense, self._samples, self.shapes = None, [], None

    @staticmethod
    def broadcast(sample: Any, n: int) -> TensorListGPU:
        """A batch of ``n`` copies of ``sample`` (a TensorGPU or GPU array), as views."""
        tensor = sample if isinstance(sample, TensorGPU) else TensorGPU(sample)
        array = tensor.as_array()
        cp = cupy_module()
        return TensorListGPU(cp.broadcast_to(array, (int(n), *array.shape)), tensor.layout())

    @classmethod
    def from_dlpack_list(
        cls, list_of_objects: Any, layout: str | None = None, contiguous: bool = False
    ) -> TensorListGPU:
        """A batch of DLPack objects (GPU tensors), one per sample; ``contiguous`` stacks
        them into one array when they share a shape."""
        batch = cls(list(list_of_objects), layout)
        if contiguous and len(batch) and batch.is_dense_tensor():
            batch.as_array()
        return batch

    def shape(self) -> list[tuple[int, ...]]:
        if self._dense is not None:
            return [tuple(self._dense.shape[1:])] * len(self._dense)
        if self.shapes is not None:
            return [tuple(s) for s in self.shapes.tolist()]
        return [tuple(s.shape) for s in self._samples]  # type: ignore[union-attr]

    @property
    def nbytes(self) -> int:
        """The bytes the samples hold (samples kept as given are not viewed for it)."""
        if self._dense is not None:
            return int(self._dense.nbytes)
        if self.shapes is not None:
            return int(self.shapes.prod(axis=1).sum()) * self.dtype.itemsize
        return sum(int(x.nbytes) for x in self._samples or () if x is not None)

    def is_dense_tensor(self) -> bool:
        shapes = self.shape()
        return self._dense is not None or all(s == shapes[0] for s in shapes)

    def as_array(self) -> Any:
        """The whole batch as one CuPy array; dense batches only."""
        if self._dense is None:
            if not self.is_dense_tensor() or not self._samples:
                raise ValueError(
                    f"the batch is ragged, samples have different shapes ({self.shape()[:6]}); "
                    "use at(i) per sample or pad them"
                )
            samples = self.samples()
            with self._cp.cuda.Device(self.device_id), self.stream or self._cp.cuda.Stream.null:
                self._dense = self._cp.stack(samples)
                self._samples = None
        return self._dense

    def as_tensor(self) -> TensorGPU:
        """The dense batch as one TensorGPU of shape (N, *sample_shape)."""
        return TensorGPU(self.as_array(), ("N" + self._layout) if self._layout else "", batch=self)

    def as_reshaped_tensor(self, shape: Any) -> TensorGPU:
        """The dense batch as one TensorGPU of ``shape`` (same element count; no copy)."""
        return TensorGPU(self.as_array().reshape(tuple(shape)), "", batch=self)

    def copy_to_external(self, ptr: Any, cuda_stream: Any = None, **kwargs: Any) -> None:
        """Copy the dense batch to device memory at ``ptr`` (an address or a CuPy array)."""
        _device_copy(self.as_array(), ptr, self)

    def as_cpu(self) -> TensorListCPU:
        """A host copy of the batch (waits for the work that produced it)."""
        if self._ready is not None:
            self._ready.synchronize()
        if self._dense is not None:
            return TensorListCPU(self._cp.asnumpy(self._dense), self._layout)
        return TensorListCPU([self._cp.asnumpy(s) for s in self.samples()], self._layout)

    def head(self, n: int) -> TensorListGPU:
        if self._dense is None and n == 0 and self._samples:
            first = self.at(0)
            data = self._cp.empty((0, *first.shape), first.dtype)
        else:
            data = self._dense[:n] if self._dense is not None else self.samples()[:n]
        return TensorListGPU(data, self._layout, self.stream, self.device_id)

    def gather(self, indices: list[int]) -> TensorListGPU:
        """The batch of samples ``indices`` (repeats allowed), e.g. after skipped samples."""
        if self._dense is not None:
            return TensorListGPU(self._dense[indices], self._layout, self.stream, self.device_id)
        samples = [self._samples[i] for i in indices]  # type: ignore[index]
        if self.shapes is None:
            return TensorListGPU(samples, self._layout, self.stream, self.device_id)
        # still as given, and of this batch's class (a decoder's batch keeps its own)
        return type(self)(
            samples,
            self._layout,
            self.stream,
            self.device_id,
            shapes=self.shapes[indices],
            dtype=self._dtype,
        )

    def repeat_last(self, n: int) -> TensorListGPU:
        samples = self.samples()
        samples += [samples[-1]] * (n - len(samples))
        return TensorListGPU(samples, self._layout, self.stream, self.device_id)

    # ---- interchange ---------------------------------------------------------------------
    def _order_before(self, consumer_stream: Any) -> None:
        """Make ``consumer_stream`` (a DLPack stream value) wait for this batch."""
        if self._ready is None or consumer_stream == -1:
            return
        cp = self._cp
        if consumer_stream is None or consumer_stream in (1, 2):
            # legacy or per-thread default stream: make it wait on our event
            target = cp.cuda.Stream.null if consumer_stream in (None, 1) else cp.cuda.Stream.ptds
        else:
            target = cp.cuda.ExternalStream(consumer_stream, self.device_id)
        with cp.cuda.Device(self.device_id):
            target.wait_event(self._ready)

    def __dlpack__(self, *, stream: Any = None, max_version: Any = None, **kwargs: Any) -> Any:
        self._order_before(stream)
        arr = self.as_array()
        return (
            arr.__dlpack__(stream=-1)
            if max_version is None
            else arr.__dlpack__(stream=-1, max_version=max_version)
        )

    def __dlpack_device__(self) -> tuple[int, int]:
        return (2, self.device_id)  # kDLCUDA

    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        if self._ready is not None:
            self._ready.synchronize()
        return self.as_array().__cuda_array_interface__

    def __repr__(self) -> str:
        return f"TensorListGPU(len={len(self)}, dtype={self.dtype}, layout={self._layout!r}, device={self.device_id})"
