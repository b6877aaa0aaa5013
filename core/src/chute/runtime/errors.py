"""The error an operator raises through the engine: names the operator, the sample and the cause."""

from __future__ import annotations

from typing import Any

__all__ = ["OperatorError", "SampleError"]


class OperatorError(RuntimeError):
    """An operator failed on a sample; names the operator, the sample and the cause."""

    def __init__(
        self,
        node: Any,
        sample: int | None,
        iteration: int,
        cause: BaseException,
        source_info: str | None = None,
    ):
        self.node = node
        self.sample = sample
        self.iteration = iteration
        self.source_info = source_info
        where = (
            f"sample {sample} of iteration {iteration}"
            if sample is not None
            else (f"iteration {iteration}")
        )
        if source_info:
            where += f" ({source_info})"
        super().__init__(f"{node.label} failed on {where}: {type(cause).__name__}: {cause}")
        self.__cause__ = cause


class SampleError(Exception):
    """Raised by a source (or operator) that knows which sample of the batch failed.

    The engine turns it into an :class:`OperatorError` naming that sample; ``cause`` is
    the exception the user's code raised.
    """

    def __init__(self, sample: int, cause: BaseException, source_info: str | None = None):
        super().__init__(f"sample {sample}: {type(cause).__name__}: {cause}")
        self.sample = sample
        self.cause = cause
        self.source_info = source_info
