"""The executor's GPU side: device selection, the pipeline's CUDA streams, uploads.

Streams come from a process-wide pool and are never destroyed: GPU memory that
nvImageCodec decodes into is freed in the order of the stream it was decoded on,
and a decoded batch may outlive its pipeline (a user keeps an output), so the
stream must outlive every image. A closed pipeline hands its streams back for
the next one to reuse.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from chute.gpu.runtime import cupy_module, require_gpu

# (device, priority) -> streams handed back by closed pipelines
_free_streams: dict[tuple[int, int], list[Any]] = {}
_free_lock = threading.Lock()


def _take_stream(device_id: int, priority: int = 0) -> Any:
    """A non-blocking stream of ``priority`` (CUDA's: lower is more urgent) on ``device_id``."""
    with _free_lock:
        free = _free_streams.setdefault((device_id, priority), [])
        if free:
            return free.pop()
    cp = cupy_module()
    with cp.cuda.Device(device_id):
        if priority == 0:
            return cp.cuda.Stream(non_blocking=True)
        return cp.cuda.Stream(non_blocking=True, priority=priority)


def _give_back(device_id: int, streams: list[Any], priority: int = 0) -> None:
    with _free_lock:
        _free_streams.setdefault((device_id, priority), []).extend(streams)


class GPUContext:
    """One device and its non-blocking CUDA streams: one per compute lane, lane 0 first.

    The streams have the pipeline's ``default_cuda_stream_priority``.

    Lane k's batches run all their GPU work (decoding included) on ``lane_stream(k)``,
    so that two batches in flight overlap on the GPU while each stays in stream order.
    """

    def __init__(self, device_id: int, priority: int = 0):
        require_gpu("GPU operators", device_id=device_id)
        self.device_id = device_id
        self.priority = priority  # Pipeline(default_cuda_stream_priority=...)
        self.stream = _take_stream(device_id, priority)
        self._lanes = [self.stream]
        self._lock = threading.Lock()

    def lane_stream(self, lane: int) -> Any:
        """The stream of compute lane ``lane`` (created on first use)."""
        with self._lock:
            while len(self._lanes) <= lane:
                self._lanes.append(_take_stream(self.device_id, self.priority))
            return self._lanes[lane]

    @contextlib.contextmanager
    def activate(self, stream: Any = None) -> Iterator[None]:
        cp = cupy_module()
        with cp.cuda.Device(self.device_id), stream or self.stream:
            yield

    def close(self) -> None:
        """Hand the streams back to the pool (work queued on them still runs)."""
        with self._lock:
            streams, self._lanes = self._lanes, []
        _give_back(self.device_id, streams, self.priority)
