"""chute for jax: batches as jax tensors through DLPack."""

from __future__ import annotations

try:
    import jax  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "chute.jax needs jax; install it with: pip install jax"
    ) from exc

from chute.types import LastBatchPolicy

__all__ = ["LastBatchPolicy"]
