"""chute for tensorflow: batches as tensorflow tensors through DLPack."""

from __future__ import annotations

try:
    import tensorflow  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "chute.tf needs tensorflow; install it with: pip install tensorflow-cpu"
    ) from exc

from chute.types import LastBatchPolicy

__all__ = ["LastBatchPolicy"]
