"""Observe the random choices of the policies: which operation, bin and sign each sample drew.

DALI's policy functions return only the augmented batch. To check or log what each
sample went through, trace them inside :func:`record_choices` and return the recorded
DataNodes from the pipeline beside the images::

    with record_choices() as choices:
        images = rand_augment.rand_augment(images, n=2, m=9)
    return images, choices["op_idx"], choices["random_sign"]

The names: ``op_idx`` (RandAugment, TrivialAugment: the index into the suite, one per
level for ``n > 1``), ``magnitude_bin`` (TrivialAugment), ``random_sign`` (1 where a
magnitude is negated), ``sub_policy_id`` and ``should_run`` (AutoAugment: the uniform
[0, 1) draw per step, which runs the step where it is below the step's probability). A
name drawn again within one recording gets a suffix: ``op_idx_1``, ``op_idx_2``, ...
Recording adds no operator: the values are the very ones the policy uses.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from chute.graph import DataNode

_local = threading.local()


def _logs() -> list[dict[str, DataNode]]:
    if not hasattr(_local, "logs"):
        _local.logs = []
    return _local.logs


@contextmanager
def record_choices() -> Iterator[dict[str, DataNode]]:
    """Collect, by name, the DataNodes of the random choices policies draw in this block."""
    log: dict[str, DataNode] = {}
    _logs().append(log)
    try:
        yield log
    finally:
        _logs().remove(log)


def record(name: str, node: object) -> None:
    """Give ``node`` (if a DataNode) to every recording open in this thread."""
    if not isinstance(node, DataNode):
        return
    for log in _logs():
        key, k = name, 0
        while key in log:
            k += 1
            key = f"{name}_{k}"
        log[key] = node
