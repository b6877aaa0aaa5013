"""Module-level callables for worker-process tests (spawn pickles them by name)."""

from __future__ import annotations

import numpy as np

N_SAMPLES = 10


def slow_python_sum(a: np.ndarray) -> np.ndarray:
    """A GIL-holding per-pixel loop in pure Python."""
    total = 0
    for v in a.ravel().tolist():
        total += v * v
    return np.array([total, a.shape[0]], dtype=np.int64)


def sample_source(info) -> np.ndarray:
    """Sample ``idx_in_epoch`` of a dataset of N_SAMPLES; ends the epoch after it."""
    if info.idx_in_epoch >= N_SAMPLES:
        raise StopIteration
    return np.full((2, 3), info.idx_in_epoch * 100 + info.epoch_idx, dtype=np.int32)


def failing_source(info) -> np.ndarray:
    if info.idx_in_epoch == 5:
        raise KeyError("no such sample")
    return np.zeros(2, np.float32)
