"""chute for torch: batches as torch tensors through DLPack."""

from __future__ import annotations

try:
    import torch  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "chute.torch needs torch; install it with: pip install torch"
    ) from exc

from chute.types import LastBatchPolicy

__all__ = ["LastBatchPolicy"]
