"""The compute stage of a batch: CPU segments on the worker pool, batch and GPU steps.

:class:`BatchCompute` is the part of :class:`chute.executor.executor.Executor` that
turns a source batch into the pipeline's outputs; it uses the executor's plan, worker
pool, statistics, GPU context and error policy (see Executor.__init__).
"""

from __future__ import annotations

from time import perf_counter_ns
from typing import TYPE_CHECKING, Any

import numpy as np

from chute.executor.batched import supports_batched
from chute.executor.branches import BranchRuns, SubBatch, batch_index, defer_failures
from chute.executor.lanes import current_lane
from chute.executor.plan import Step
from chute.executor.run_node import BatchWhere, run_node, run_sample, with_layout
from chute.executor.skips import AllFailed, replace_bad_samples
from chute.graph.node import DataNode, OpNode
from chute.runtime.dense import BatchSlots
from chute.runtime.errors import OperatorError, detached
from chute.tensors.cpu import TensorListCPU

if TYPE_CHECKING:
    from chute.executor.executor import SourceBatch

__all__ = ["BatchCompute"]


class BatchCompute:
    """Runs the steps of the plan over one source batch (a mixin of Executor)."""

    def compute(self, batch: SourceBatch) -> list[Any] | None:
        """The batch's outputs; None when every sample failed under on_error skip/warn."""
        try:
            return self._compute(batch)
        except AllFailed:
            batch.values = {}
            return None

    def _compute(self, batch: SourceBatch) -> list[Any]:
        values = dict(batch.values)
        dense: dict[int, np.ndarray] = {}  # node id -> its output as one batch array
        with self._lanes_lock:
            self.samples_seen += sum(1 for m in batch.meta if m.get("real", True))
        branches = BranchRuns(batch)  # the samples of each conditional branch
        for step in self.plan.steps:
            where = branches.batch_of(step.scope, values)
            if step.scope is not None and not where.size:
                for node in step.nodes:  # a branch no sample takes: nothing runs
                    for i in range(len(node.outputs)):
                        values[(node.id, i)] = []
            elif step.kind == "segment":
                self._run_segment(step, values, where, dense if step.scope is None else None)
            elif step.kind in ("split", "merge"):
                self._run_crossing(step.nodes[0], values, branches)
            else:
                self._run_batch_step(step.nodes[0], values, where, step.kind)
        if batch.branch_failures:  # samples that failed inside a branch (on_error skip/warn)
            replace_bad_samples(self, batch, values, batch.branch_failures)
        self._skip_unread_source_failures(values, batch)
        outputs = [self._output(o, values, batch, dense) for o in self.plan.outputs]
        batch.values = {}  # the encoded inputs are not needed any more
        return outputs

    def _run_crossing(self, node: OpNode, values: dict, branches: BranchRuns) -> None:
        """A split or merge node (see chute.executor.branches)."""
        start = perf_counter_ns()
        if node.op.kind == "split":
            stream = self.gpu.lane_stream(current_lane()) if self.gpu else None
            result = branches.split(node, values, self.gpu, stream)
        else:
            layout = getattr(self.plan.specs.get((node.id, 0)), "layout", None)
            result = branches.merge(node, values, layout)
        values[(node.id, 0)] = result
        with self._lanes_lock:
            self.stats.add_call(node, perf_counter_ns() - start, len(result), [result])

    def _on_failures(self, key: int, batch: Any, values: dict, bad: dict, nodes: list) -> None:
        """Failed samples under on_error skip/warn: replaced in the batch, or, inside a
        branch, when the whole batch is done (see branches.defer_failures)."""
        if isinstance(batch, SubBatch):
            defer_failures(self, batch, values, bad, nodes, self._fillers.get(key))
        else:
            replace_bad_samples(self, batch, values, bad, self._fillers.get(key))

    def _skip_unread_source_failures(self, values: dict, batch: SourceBatch) -> None:
        """Samples a source could not produce that no step read (its outputs go straight to
        the user): under skip/warn they are replaced and reported like any other failure."""
        failed = {
            i: m["error"]
            for i, m in enumerate(batch.meta[: batch.size])
            if m.get("error") and m.get("real", True)
        }
        if failed:
            replace_bad_samples(self, batch, values, failed, self._fillers.get("sources"))
        if batch.size:
            self._remember_filler("sources", values, batch)

    def _output(self, out: DataNode, values: dict, batch: SourceBatch, dense: dict) -> Any:
        value = values[(out.producer.id, out.index)]
        if isinstance(value, list):
            layout = self.plan.spec(out).layout or ""
            array = dense.get(out.producer.id)
            return TensorListCPU(value if array is None else array, layout, meta=batch.meta)
        return value

    def _run_segment(self, step: Step, values: dict, batch: Any, dense: dict | None = None) -> None:
        n = batch.size
        nodes = step.nodes
        for node in nodes:
            for i in range(len(node.outputs)):
                values[(node.id, i)] = [None] * n
        slots = {node.id: BatchSlots(n) for node in nodes if node.id in self._slot_nodes and n}
        # random sources with constant arguments: drawn for the whole batch at once
        batched = [node for node in nodes if supports_batched(node)] if n else []
        where = self._where(batch) if batched else None
        for node in batched:
            start = perf_counter_ns()
            values[(node.id, 0)][:] = run_node(node, [], {}, n, None, where, "segment")[0]
            rec = self.stats.local()[node.id]
            rec[0] += perf_counter_ns() - start
            rec[1] += n
        if batched:
            nodes = [node for node in nodes if node not in batched]
        plans = [
            (
                node,
                [values[(d.producer.id, d.index)] for d in node.inputs],
                {k: values[(d.producer.id, d.index)] for k, d in node.arg_inputs.items()},
                [values[(node.id, i)] for i in range(len(node.outputs))],
                node.args.get("seed", self.seed),
                self.node_state.get(node.id),
                node.schema.maskable,
                slots.get(node.id),
            )
            for node in nodes
        ]
        current = [None] * n
        bad: dict[int, tuple[str, BaseException | str]] = {}
        thread_stats = self.stats.local

        def work(i: int) -> None:
            if batch.meta[i].get("error"):
                bad[i] = batch.meta[i]["error"]
                return
            acc = thread_stats()  # this worker's own counters: no lock per sample
            start = perf_counter_ns()  # one clock read per node: each node's end starts the next
            for node, ins, arg_ins, outs, seed, state, maskable, node_slots in plans:
                current[i] = node
                try:
                    run_sample(
                        node,
                        ins,
                        arg_ins,
                        outs,
                        seed,
                        state,
                        maskable,
                        batch.epoch,
                        batch.iteration,
                        i,
                        batch.meta[i],
                        node_slots,
                    )
                except Exception as exc:
                    if (node.args.get("on_error") or self.on_error) == "raise":
                        raise
                    bad[i] = (node.label, detached(exc))
                    return
                end = perf_counter_ns()
                rec = acc[node.id]
                rec[0] += end - start
                rec[1] += 1
                start = end

        if plans:
            failures = self.pool.run(work, n)
        else:  # every node was drawn for the batch: only the reader's failures remain
            failures = []
            bad.update({i: m["error"] for i, m in enumerate(batch.meta[:n]) if m.get("error")})
        if failures:
            i, exc = failures[0]
            if isinstance(exc, OperatorError):
                raise exc
            info = batch.meta[i].get("source_info") if i < len(batch.meta) else None
            raise OperatorError(
                current[i], batch_index(batch, i), batch.iteration, exc, info
            ) from exc
        if bad:
            self._on_failures(id(step), batch, values, bad, step.nodes)
        for node_id, node_slots in slots.items():
            array = node_slots.dense(values[(node_id, 0)])
            if array is not None and dense is not None:
                dense[node_id] = array
        with self._lanes_lock:
            for node in step.nodes:
                self.stats.end_batch(node, [values[(node.id, k)] for k in range(len(node.outputs))])
        self._remember_filler(id(step), values, batch, slots, step.nodes)

    def _remember_filler(
        self, key: int, values: dict, batch: Any, slots=(), nodes: list | None = None
    ) -> None:
        """Keep the batch's first sample: it pads a later batch whose samples all fail
        (inside a branch, only the step's own outputs: see branches.defer_failures)."""
        n = batch.size
        if n:
            keys = None
            if isinstance(batch, SubBatch) and nodes is not None:
                keys = {(node.id, i) for node in nodes for i in range(len(node.outputs))}
            # a branch's step looks at its own outputs only, not at every value so far
            items = values.items() if keys is None else ((k, values[k]) for k in keys)
            # copies of samples in a batch array: a view would keep the whole batch alive
            self._fillers[key] = (
                {
                    k: v[0].copy() if k[0] in slots else v[0]
                    for k, v in items
                    if isinstance(v, list) and len(v) == n
                },
                batch.meta[0],
            )

    def _run_batch_step(self, node: OpNode, values: dict, batch: Any, kind: str) -> None:
        inputs = [values[(d.producer.id, d.index)] for d in node.inputs]
        arg_inputs = {k: values[(d.producer.id, d.index)] for k, d in node.arg_inputs.items()}
        where = self._where(batch)
        start = perf_counter_ns()
        state = self.node_state.get(node.id)
        result = run_node(node, inputs, arg_inputs, batch.size, state, where, kind)
        # GPU steps: host time to queue the work (kernels run asynchronously on the stream).
        with self._lanes_lock:
            self.stats.add_call(node, perf_counter_ns() - start, batch.size, result)
        for i, r in enumerate(result):
            if kind == "gpu":  # device batches carry the plan's layout, as CPU outputs do
                r = with_layout(r, getattr(self.plan.specs.get((node.id, i)), "layout", None))
            values[(node.id, i)] = r
        # on_error skip/warn: samples a batch operator could not process (see BatchContext)
        failed = getattr(result[0], "failed", None)
        if failed:
            # a reason of (operator, error) names another operator (the reader's failures)
            bad = {
                i: reason if isinstance(reason, tuple) else (node.label, reason)
                for i, reason in failed.items()
            }
            self._on_failures(id(node), batch, values, bad, [node])
        if node.device == "cpu":
            self._remember_filler(id(node), values, batch, (), [node])

    def _where(self, batch: Any) -> BatchWhere:
        """The batch's place in the stream and the executor's pool, GPU and error policy."""
        return BatchWhere(
            self.seed,
            batch.epoch,
            batch.iteration,
            batch.meta,
            self.pool,
            self.gpu,
            self.gpu.lane_stream(current_lane()) if self.gpu else None,
            self.on_error,
        )
