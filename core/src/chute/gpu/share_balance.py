"""The CPU share of a mixed decoder's batch, balanced from the decoders' measured speeds.

A :class:`~chute.gpu.jpeg.BatchDecoder` given ``cpu_share="auto"`` decodes part of each
batch with libjpeg-turbo on CPU threads (nvImageCodec's CPU backend, or chute's own with
``cpu_backend="turbo"``; into pinned memory) beside the hardware and CUDA decoders. The best share depends on the host (cores, their
speed), the GPU and the images, so a fixed one is wrong somewhere: here each group's
decode rate (samples per second of its own decode calls, queueing excluded) is smoothed
over batches, and the next batch gives the CPU the fraction of the combined rate that the
CPU contributes, so the groups finish together. Bounds keep the GPU decoding most of the
batch and keep probing the CPU with a few samples when it measured slow.
"""

from __future__ import annotations

import threading

__all__ = ["ShareBalancer"]


class ShareBalancer:
    """The CPU fraction of the next batch, from the rates the groups were measured at."""

    def __init__(
        self,
        initial: float = 0.1,
        low: float = 0.02,
        high: float = 0.6,
        smoothing: float = 0.25,
    ) -> None:
        if not 0.0 <= low <= initial <= high <= 1.0:
            raise ValueError(f"need 0 <= low <= initial <= high <= 1, got {low}, {initial}, {high}")
        if not 0.0 < smoothing <= 1.0:
            raise ValueError(f"smoothing must be in (0, 1], got {smoothing}")
        self.low, self.high, self.smoothing = low, high, smoothing
        self._share = initial
        self._rates: dict[str, float] = {}  # group -> smoothed samples per second
        self._lock = threading.Lock()

    def share(self) -> float:
        """The fraction of the next batch for the CPU group."""
        return self._share

    def record(self, group: str, samples: int, seconds: float) -> None:
        """One decode call of ``group`` ("cpu", "hw", "cuda") took ``seconds`` for ``samples``."""
        if samples <= 0 or seconds <= 0:
            return
        rate = samples / seconds
        with self._lock:
            old = self._rates.get(group)
            self._rates[group] = rate if old is None else old + self.smoothing * (rate - old)
            cpu = self._rates.get("cpu")
            gpu = sum(r for g, r in self._rates.items() if g != "cpu")
            if cpu is None or gpu <= 0:
                return
            target = cpu / (cpu + gpu)
            self._share = min(self.high, max(self.low, target))
