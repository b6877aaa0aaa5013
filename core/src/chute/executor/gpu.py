"""The executor's GPU side: device selection, the pipeline's CUDA stream, uploads."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from chute.gpu.runtime import cupy_module, require_gpu


class GPUContext:
    """One device and one non-blocking CUDA stream per pipeline; GPU steps run on it."""

    def __init__(self, device_id: int):
        require_gpu("GPU operators", device_id=device_id)
        cp = cupy_module()
        self.device_id = device_id
        with cp.cuda.Device(device_id):
            self.stream = cp.cuda.Stream(non_blocking=True)

    @contextlib.contextmanager
    def activate(self) -> Iterator[None]:
        cp = cupy_module()
        with cp.cuda.Device(self.device_id), self.stream:
            yield


def to_device_samples(batch: Any) -> list[Any]:
    """A batch from an external source given as CuPy/CUDA arrays, as a list of CuPy samples."""
    cp = cupy_module()
    if isinstance(batch, (list, tuple)):
        return [cp.asarray(s) for s in batch]
    arr = cp.asarray(batch)
    return [arr[i] for i in range(arr.shape[0])]
