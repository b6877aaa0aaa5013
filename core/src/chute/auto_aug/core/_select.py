"""``select``: each sample goes through the one augmentation its index picks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from chute.conditionals import switch
from chute.graph import DataNode


def select(
    ops: Sequence[Callable[..., DataNode]],
    selected_op_idx: DataNode,
    *op_args: Any,
    **op_kwargs: Any,
) -> DataNode:
    """Apply ``ops[selected_op_idx]`` to each sample, as if by ``ops[i](*op_args, **op_kwargs)``.

    ``selected_op_idx`` is a batch of ints from ``[0, len(ops) - 1]``. The batch is split
    by the index once into one sub-batch per op (an n-way switch), each op runs only on
    the samples that chose it, and the results are merged back in batch order. DataNodes among the arguments are split with
    the batch. A plain int index applies that one op to the whole batch.
    """
    if not ops:
        raise ValueError("`select` needs at least one op to select from.")
    if isinstance(selected_op_idx, int) and not 0 <= selected_op_idx < len(ops):
        raise IndexError(
            f"`select` got the index {selected_op_idx} for {len(ops)} ops "
            f"(valid: 0 to {len(ops) - 1})."
        )
    branches = [_bind(op, op_args, op_kwargs) for op in ops]
    return switch(selected_op_idx, branches, where="auto_aug select")


def _bind(op: Callable[..., DataNode], args: tuple, kwargs: dict) -> Callable[[], DataNode]:
    def call() -> DataNode:
        return op(*args, **kwargs)

    return call
