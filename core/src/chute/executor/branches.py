"""Per-sample conditionals at run time: the samples of each branch, split and merge.

A branch's nodes (chute.graph.scope) run on a :class:`SubBatch`: the samples of the batch
whose predicates chose that branch, in batch order. The compute steps treat it as a
batch of its own (contexts, worker pool, GPU stream), except that each sample's meta
carries its position in the whole batch (``batch_index``), so its random streams are
the ones it would have without the conditional (chute.runtime.context.sample_position).
A step whose branch has no samples is skipped: its outputs are empty lists.

Split selects the branch's samples of a value of the enclosing scope; merge puts the
samples of the branches (two, or the n cases of a switch) back in the enclosing scope's
order. On the GPU both keep
the samples on the device (views into the batches, or one gather on the stream).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chute.executor.run_node import as_list, with_layout
from chute.graph.node import OpNode
from chute.graph.scope import Scope
from chute.runtime.errors import OperatorError

__all__ = ["BranchRuns", "SubBatch", "batch_index", "defer_failures"]


@dataclass
class SubBatch:
    """The samples of one branch: ``positions`` in the enclosing scope's batch,
    ``indices`` in the whole batch (``root``, the SourceBatch)."""

    root: Any
    scope: Scope
    positions: list[int]
    indices: list[int]
    meta: list[dict]
    errors: list[dict] = field(default_factory=list)

    @property
    def size(self) -> int:
        return len(self.positions)

    @property
    def epoch(self) -> int:
        return self.root.epoch

    @property
    def iteration(self) -> int:
        return self.root.iteration


def batch_index(batch: Any, i: int) -> int:
    """Sample ``i`` of ``batch`` (a SourceBatch or a SubBatch) in the whole batch."""
    return batch.indices[i] if isinstance(batch, SubBatch) else i


class BranchRuns:
    """The sub-batches of one batch, computed when a step of their branch first runs."""

    def __init__(self, root: Any):
        self.root = root
        self._runs: dict[int, SubBatch] = {}
        # predicate -> {branch: positions}: the cases of a switch share one predicate,
        # grouped once for all of them
        self._groups: dict[tuple, dict[Any, list[int]]] = {}

    def batch_of(self, scope: Scope | None, values: dict) -> Any:
        """The batch that the nodes of ``scope`` run on (the root batch for None)."""
        if scope is None:
            return self.root
        run = self._runs.get(id(scope))
        if run is None:
            parent = self.batch_of(scope.parent, values)
            pred = scope.predicate
            key = (id(pred.producer), pred.index, id(parent))
            groups = self._groups.get(key)
            if groups is None:
                truth = predicate_truth(values[(pred.producer.id, pred.index)], scope, parent)
                groups = {}
                for k, t in enumerate(truth):
                    groups.setdefault(t, []).append(k)
                self._groups[key] = groups
            positions = list(groups.get(scope.branch, ()))
            indices = [batch_index(parent, k) for k in positions]
            meta = [
                {**parent.meta[k], "batch_index": i}
                for k, i in zip(positions, indices, strict=True)
            ]
            run = SubBatch(self.root, scope, positions, indices, meta)
            self._runs[id(scope)] = run
        return run

    def split(self, node: OpNode, values: dict, gpu: Any, stream: Any) -> Any:
        """Output of a split node: the samples of its branch (its scope)."""
        sub = self.batch_of(node.scope, values)
        x = node.inputs[0]
        value = values[(x.producer.id, x.index)]
        if not sub.size:
            return []
        if isinstance(value, list) or not hasattr(value, "gather"):
            samples = as_list(value)
            return [samples[k] for k in sub.positions]
        with gpu.activate(stream):
            return value.gather(sub.positions)

    def merge(self, node: OpNode, values: dict, layout: str | None) -> Any:
        """Output of a merge node: both branches' samples in the enclosing scope's order."""
        outer = self.batch_of(node.scope, values)
        out: list[Any] = [None] * outer.size
        device = None
        dtypes = []
        for side in node.inputs[:-1]:  # the branches' values; the last is the predicate
            sub = self.batch_of(side.producer.scope, values)
            value = values[(side.producer.id, side.index)]
            if not sub.size:
                continue
            if not isinstance(value, list) and hasattr(value, "gather"):
                device = value
            samples = as_list(value)
            dtypes.append(getattr(samples[0], "dtype", None))
            for k, sample in zip(sub.positions, samples, strict=True):
                out[k] = sample
        if any(d != dtypes[0] for d in dtypes):
            other = next(d for d in dtypes if d != dtypes[0])
            sides = ("the if branch", "the else branch") if len(node.inputs) == 3 else None
            first, second = sides or ("one case", "another")
            raise OperatorError(
                node,
                None,
                self.root.iteration,
                TypeError(
                    f"{node.arg('where')}: variable {node.arg('name')!r} is {dtypes[0]} in "
                    f"{first} and {other} in {second}; every branch must "
                    "give it the same type (cast one with fn.cast)"
                ),
            )
        if device is None:
            return out
        from chute.tensors.gpu import TensorListGPU  # a plain batch: a subclass (decoded
        # images) takes other constructor arguments

        batch = TensorListGPU(out, layout or "", device.stream, device.device_id)
        return with_layout(batch, layout)


def predicate_truth(value: Any, scope: Scope, batch: Any) -> list[bool]:
    """Each sample's condition as a bool (nonzero is true); a sample that is not a scalar
    raises naming the conditional and the sample."""
    samples = as_list(value)
    truth: list = []
    for k, sample in enumerate(samples):
        array = np.asarray(sample)
        if array.ndim != 0:
            raise ValueError(
                f"the condition of {scope.where} must be a scalar per sample (0-d); sample "
                f"{batch_index(batch, k)} has shape {array.shape}"
            )
        if scope.cases:  # a switch's index, clamped to its cases
            value = array.item()  # NaN is below no bound: the last case, as `index < k` says
            case = scope.cases - 1 if value != value else int(np.floor(value))
            truth.append(min(max(case, 0), scope.cases - 1))
        else:
            truth.append(bool(array))
    return truth


def defer_failures(
    executor: Any, sub: SubBatch, values: dict, bad: dict, nodes: list[OpNode], filler: Any
) -> None:
    """on_error skip/warn inside a branch: the failed samples are replaced in the whole
    batch once it is computed (chute.executor.skips); until then their slots in the
    branch hold another sample of the branch, so that the branch's next steps run."""
    for k, reason in bad.items():
        sub.root.branch_failures[sub.indices[k]] = reason
    keys = [(node.id, i) for node in nodes for i in range(len(node.outputs))]
    good = [k for k in range(sub.size) if k not in bad]
    if good:
        source = [k if k not in bad else good[0] for k in range(sub.size)]
        for key in keys:
            value = values[key]
            if isinstance(value, list):
                value[:] = [value[k] for k in source]
            elif hasattr(value, "gather"):
                values[key] = value.gather(source)
        return
    if filler is not None and all(isinstance(values[key], list) for key in keys):
        samples = filler[0]
        if all(key in samples for key in keys):
            for key in keys:
                values[key][:] = [samples[key]] * sub.size
            return
    label, reason = bad[min(bad)]
    raise OperatorError(
        nodes[0],
        None,
        sub.iteration,
        RuntimeError(f"every sample of {sub.scope.label} failed; the first: {label}: {reason}"),
    )
