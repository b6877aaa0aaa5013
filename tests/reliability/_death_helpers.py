"""Module-level callables for the worker-death tests under "spawn" (pickled by name)."""

from __future__ import annotations

import os
import signal

import numpy as np


def kill_at_sample_6(info) -> np.ndarray:
    """An external_source that dies (as the OOM killer would kill it) at sample 6."""
    if info.idx_in_epoch == 6:
        os.kill(os.getpid(), signal.SIGKILL)
    return np.full((2,), info.idx_in_epoch, np.int32)


def kill_at_value_5(x: np.ndarray) -> np.ndarray:
    """A python_function that dies on the sample whose value is 5."""
    if int(x[0]) == 5:
        os.kill(os.getpid(), signal.SIGKILL)
    return x * 2
