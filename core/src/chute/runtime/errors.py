"""The error an operator raises through the engine: names the operator, the sample and the cause."""

from __future__ import annotations

from typing import Any

__all__ = ["OperatorError", "SampleError", "detached"]


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


def detached(exc: BaseException) -> BaseException:
    """``exc`` with the tracebacks of it and of its causes dropped: an error kept for a
    report (on_error skip/warn) must not keep alive the frames it was raised through.

    A traceback holds every frame's locals; the frame that caught the error usually
    holds the container the error is stored in, so error, traceback, frame and container
    form a reference cycle that only the cyclic collector frees, and with it the whole
    batch the frames refer to (decoded images, encoded files). Under on_error="skip"
    those cycles piled up between full collections: a soak of 40 epochs with 150 bad
    files per epoch grew by ~8% (bench/soak.py, tests/reliability/test_soak.py).
    """
    todo: list[BaseException] = [exc]
    seen: set[int] = set()
    while todo:
        e = todo.pop()
        if id(e) in seen:
            continue
        seen.add(id(e))
        e.__traceback__ = None
        for linked in (e.__cause__, e.__context__, getattr(e, "cause", None)):
            if isinstance(linked, BaseException):
                todo.append(linked)
    return exc
