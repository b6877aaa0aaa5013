"""The Source protocol: what a reader or external_source hands the engine's reader stage.

An operator of kind ``"source"`` returns one from ``Operator.open(node, pipeline, hints)``. The
engine needs only these methods; a user's reader type implements them, it does not
subclass anything of chute's.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

__all__ = ["Source", "StatefulSource"]


@runtime_checkable
class Source(Protocol):
    """Yields batches; rewinds at ``reset()``. Readers never end by themselves (as in DALI)."""

    def next_batch(
        self, batch_size: int, epoch: int, iteration: int
    ) -> tuple[list[Any], list[dict] | None]:
        """One batch: a list of samples per output, and each sample's meta (or None).

        Meta keys the engine reads: ``real`` (False for padding), ``error`` (a sample
        the reader could not produce, as (operator label, reason)), ``sample_key``
        ((dataset index, epoch): keys the sample's random streams), ``source_info``.
        Raises StopIteration at the end of an epoch where the source has one.
        """
        ...

    def reset(self) -> None:
        """Start the next epoch."""
        ...


@runtime_checkable
class StatefulSource(Source, Protocol):
    """A source that can be checkpointed: ``restore(state())`` continues where it was."""

    def state(self) -> Any:
        """The position after the last batch handed out, as plain data."""
        ...

    def restore(self, state: Any) -> None:
        """Continue after the batch whose ``state()`` this was."""
        ...
