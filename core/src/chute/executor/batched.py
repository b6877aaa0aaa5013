"""Whole-batch evaluation of simple random operators inside CPU segments.

``fn.random.coin_flip()`` with constant arguments costs one generator per sample
when run sample by sample; drawn here for the batch at once (philox.py), it gives
the same values (each sample's first word of its own stream) in a fraction of the
time. Any other operator, or any argument given per sample, goes the usual way.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.runtime.philox import coin_flips, sample_counters, stream_words

__all__ = ["batched_values", "supports_batched"]


def supports_batched(node: OpNode) -> bool:
    """True when ``node`` can be computed for the whole batch by :func:`batched_values`."""
    if node.schema.name != "random.coin_flip" or node.inputs or node.arg_inputs:
        return False
    if node.schema.maskable or node.arg("shape"):
        return False
    p = node.arg("probability")
    return isinstance(p, (int, float)) and 0.0 <= p <= 1.0


def batched_values(node: OpNode, seed: int, epoch: int, iteration: int, meta: list) -> list[Any]:
    """The node's output for every sample: 0-d arrays, as its run_sample returns them."""
    n = len(meta)
    key, ctr = sample_counters(seed, node.id, epoch, iteration, meta)
    flips = coin_flips(stream_words(key, ctr, 1), float(node.arg("probability")))
    values = flips.astype(node.arg("dtype") or np.int32).reshape(n, 1)
    return [v.reshape(()) for v in values]
