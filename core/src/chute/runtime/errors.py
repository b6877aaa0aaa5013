"""The error an operator raises through the engine: names the operator, the sample and the cause."""

from __future__ import annotations

from typing import Any

__all__ = ["OperatorError"]


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
