"""Dense output batches: operators that produce a pipeline output write into one array.

An operator whose samples end up in a user's batch (``crop_mirror_normalize`` as the
last step of a training pipeline) would otherwise return one fresh array per sample,
which the batch stacks into contiguous memory when a framework imports it: a second
copy of every output byte. When the operator class sets ``writes_batch_slots = True``,
the executor gives its samples a :class:`BatchSlots`; the operator asks for sample i's
slot with :meth:`SlotContext.output_slot` and writes its result there. If every sample
took its slot (same shape and dtype, none masked, skipped or replaced) the batch is
that array; otherwise it falls back to the list of samples, with the same values.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from chute.runtime import output_pool
from chute.runtime.context import SampleContext

__all__ = ["BatchSlots", "SlotContext"]


class BatchSlots:
    """One ``(n, *shape)`` array per batch, allocated by the first sample that asks.

    The array comes from :mod:`output_pool`: a batch the user has dropped lends its
    memory to a later one (megabytes of fresh pages a batch otherwise cost page faults).
    """

    def __init__(self, n: int):
        self.n = n
        self.array: np.ndarray | None = None
        self.views: list[np.ndarray | None] = [None] * n
        self.ragged = False
        self._lock = threading.Lock()

    def slot(self, i: int, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray | None:
        """Sample ``i``'s slot, or None when its shape or dtype differs from the batch's."""
        array = self.array
        if array is None:
            with self._lock:
                if self.array is None:
                    self.array = output_pool.empty((self.n, *shape), dtype)
                array = self.array
        if array.shape[1:] != tuple(shape) or array.dtype != dtype:
            self.ragged = True
            return None
        view = array[i]
        self.views[i] = view
        return view

    def dense(self, samples: list[Any]) -> np.ndarray | None:
        """The batch array if every sample is its own slot, else None."""
        if self.array is None or self.ragged or len(samples) != self.n:
            return None
        for sample, view in zip(samples, self.views):
            if view is None or sample is not view:
                return None
        return self.array


class SlotContext(SampleContext):
    """A SampleContext that can hand out the sample's slot in its batch array."""

    __slots__ = ("_slots",)

    def __init__(self, *args: Any, slots: BatchSlots):
        super().__init__(*args)
        self._slots = slots

    def output_slot(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray | None:
        """Where to write this sample's output of ``shape`` and ``dtype``; None: allocate."""
        return self._slots.slot(self.idx_in_batch, shape, np.dtype(dtype))
