"""chute for paddle: batches as paddle tensors through DLPack."""

from __future__ import annotations

try:
    import paddle  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "chute.paddle needs paddle; install it with: pip install paddlepaddle"
    ) from exc

from chute.types import LastBatchPolicy

__all__ = ["LastBatchPolicy"]
