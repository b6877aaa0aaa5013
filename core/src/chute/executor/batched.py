"""Whole-batch evaluation of simple random operators inside CPU segments.

``fn.random.coin_flip()`` with constant arguments costs one generator per sample
when run sample by sample; drawn for the batch at once (its ``draw_batch``), it gives
the same values in a fraction of the time. The operator says which of its nodes it can
draw so (``Operator.draws_batch``); the rest go the usual way.
"""

from __future__ import annotations

from typing import Any

from chute.graph.node import OpNode

__all__ = ["batched_values", "supports_batched"]


def supports_batched(node: OpNode) -> bool:
    """True when ``node`` can be computed for the whole batch by :func:`batched_values`."""
    return node.op.draws_batch(node)


def batched_values(node: OpNode, seed: int, epoch: int, iteration: int, meta: list) -> list[Any]:
    """The node's output for every sample, as its run_sample returns them."""
    return node.op.draw_batch(node, seed, epoch, iteration, meta)
