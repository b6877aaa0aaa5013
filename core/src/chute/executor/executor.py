"""Running a plan: the reader stage, CPU segments on the worker pool, batch and GPU steps.

With ``exec_pipelined`` background threads keep work ahead of the user:
the reader thread produces source batches and the compute thread runs the
remaining steps; bounded queues of depth ``prefetch_queue_depth`` join them.
GPU pipelines get several compute threads ("lanes", see lanes.py), each with
its own CUDA stream, that work on consecutive batches at once and hand them
out in order. Results never depend on timing: random draws are keyed by
(seed, operator, epoch, iteration, sample).
"""

from __future__ import annotations

import logging
import queue
import threading
from collections import deque
from dataclasses import dataclass, field
from time import perf_counter_ns
from typing import Any

from chute.executor.compute import BatchCompute
from chute.executor.lanes import NoLock, Sequencer, lane_count, set_current_lane
from chute.executor.plan import Plan, fed_by_user
from chute.executor.refill import NothingLeft, Refill
from chute.executor.run_node import check_batch_size, read_source, with_layout
from chute.executor.stats import ExecutorStats
from chute.runtime.workers import WorkerPool

logger = logging.getLogger("chute")


class EndOfEpoch:
    """Marker: the sources ended this epoch."""


@dataclass
class SourceBatch:
    """What the reader stage produced for one iteration."""

    epoch: int
    iteration: int
    size: int
    values: dict[tuple[int, int], list[Any]]
    meta: list[dict]
    states: dict[int, Any] = field(default_factory=dict)
    # Samples skipped while computing this batch; reported when the user receives it.
    errors: list[dict] = field(default_factory=list)
    # Samples that failed inside a conditional's branch (on_error skip/warn), by their
    # index in the batch: replaced once the batch is computed (executor/branches.py).
    branch_failures: dict[int, Any] = field(default_factory=dict)
    # Samples the reader marked real (the rest pad a shard's end); -1: all of them.
    real_read: int = -1
    # The reader epoch of each sample as read (a skip's filler brings another's meta).
    epochs_read: list[int] = field(default_factory=list)


class ErrorCounts:
    """Counts of every skip report delivered (bounded: one number per operator), and the
    first report, which the capped list of the latest may have let go."""

    def __init__(self) -> None:
        self.total = 0
        self.by_operator: dict[str, int] = {}
        self.first: dict | None = None

    def add(self, entry: dict) -> None:
        self.total += 1
        operator = str(entry.get("operator"))
        self.by_operator[operator] = self.by_operator.get(operator, 0) + 1
        if self.first is None:
            self.first = entry


@dataclass
class Failure:
    error: BaseException


def _reader_depth(plan: Plan) -> int:
    """The largest ``prefetch_queue_depth`` argument of the plan's readers (1 without)."""
    depths = [
        int(n.args.get("prefetch_queue_depth") or 1)
        for n in plan.sources
        if "readers." in n.op.schema.name
    ]
    return max(depths, default=1)


class Executor(BatchCompute):
    """Runs one built plan; owns the sources, the worker pool and the stage threads."""

    def __init__(self, plan: Plan, pipeline: Any):
        self.plan = plan
        self.batch_size = pipeline.max_batch_size
        self.seed = pipeline.seed
        self.pool = WorkerPool(
            pipeline.num_threads, affinity=getattr(pipeline, "set_affinity", False)
        )
        # exec_async=False or exec_pipelined=False: run() computes in the caller's thread
        self.pipelined = pipeline.exec_pipelined and getattr(pipeline, "exec_async", True)
        self.on_error = pipeline.on_error
        self.max_error_ratio = pipeline.max_error_ratio
        # The skip reports of the batches delivered so far: the latest max_error_entries
        # of them (a bad file fails again every epoch: a list of them all grows without
        # end), with counts of them all in error_counts.
        self.errors: deque[dict] = deque(maxlen=pipeline.max_error_entries)
        self.error_counts = ErrorCounts()
        self.errors_computed = 0  # the same, counting batches computed ahead
        # One good sample per segment (values by key, meta), kept to fill a later batch in
        # which every sample fails under skip/warn.
        self._fillers: dict[int, tuple[dict, dict]] = {}
        self.samples_seen = 0
        self.depth = max(1, pipeline.prefetch_queue_depth)
        self.sources = {n.id: n.op.open(n, pipeline, plan.hints.of(n.id)) for n in plan.sources}
        self.node_state = {
            n.id: n.op.setup(n, plan.hints.of(n.id), pipeline) for s in plan.steps for n in s.nodes
        }
        self.stats = ExecutorStats(plan.nodes)  # per-operator time and bytes, see stats.py
        self.epoch = 0
        self.iteration = 0
        self.gpu = None
        if plan.uses_gpu:
            from chute.executor.gpu import GPUContext

            priority = getattr(pipeline, "default_cuda_stream_priority", 0)
            self.gpu = (
                GPUContext(pipeline.device_id, priority)
                if priority
                else GPUContext(pipeline.device_id)
            )
        self.lanes = lane_count(plan, pipeline)
        # CPU nodes whose only output is a pipeline output and that can write into a
        # dense batch array (see dense.py)
        output_nodes = {o.producer.id for o in plan.outputs}
        self._slot_nodes = {
            n.id
            for n in plan.nodes
            if n.id in output_nodes
            and n.device == "cpu"
            and len(n.outputs) == 1
            and getattr(n.op, "writes_batch_slots", False)
        }
        # counters and per-node statistics that lanes share
        self._lanes_lock = threading.Lock() if self.lanes > 1 else NoLock()
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._sequencer = Sequencer(self._stop)
        self._reader_depth = _reader_depth(plan)
        self._make_queues()
        self._ended = False
        self._failed: BaseException | None = None
        self.last_states: dict[int, Any] = {
            k: s.state() for k, s in self.sources.items() if hasattr(s, "state")
        }
        self.last_meta: list[dict] = []
        self.last_position = (0, 0)
        # on_error skip/warn: failed places are filled with later samples (refill.py);
        # last_carry is what a checkpoint needs besides the source states.
        self._refill = Refill(self.last_states, enabled=not fed_by_user(plan))
        self.last_carry: dict | None = None

    # ---- reader stage --------------------------------------------------------------------
    def read(self) -> SourceBatch:
        values: dict[tuple[int, int], list[Any]] = {}
        size = None
        meta: list[dict] | None = None
        states = {}
        for node in self.plan.sources:
            source = self.sources[node.id]
            start = perf_counter_ns()
            outputs, node_meta = read_source(
                node, source, self.batch_size, self.epoch, self.iteration, self.gpu
            )
            elapsed = perf_counter_ns() - start
            n = len(outputs[0]) if outputs else 0
            check_batch_size(node, n, size, self.iteration)
            size = n
            for i, out in enumerate(outputs):
                values[(node.id, i)] = with_layout(
                    out, getattr(self.plan.specs.get((node.id, i)), "layout", None)
                )
            self.stats.add_call(node, elapsed, n, outputs)
            if node_meta is not None:
                meta = node_meta
            states[node.id] = source.state() if hasattr(source, "state") else None
        if size is None:  # no sources: generators (random numbers) fill whole batches
            size = self.batch_size
        batch = SourceBatch(
            self.epoch, self.iteration, size, values, meta or [{} for _ in range(size)], states
        )
        batch.real_read = sum(1 for m in batch.meta[:size] if m.get("real", True))
        batch.epochs_read = [m.get("epoch", self.epoch) for m in batch.meta[:size]]
        self.iteration += 1
        return batch

    # ---- driving -----------------------------------------------------------------------------
    def run(self) -> list[Any]:
        """The next batch of every output; StopIteration at the end of an epoch."""
        if self._failed is not None:
            raise RuntimeError(
                f"the pipeline stopped after an error: {self._failed}"
            ) from self._failed
        refill = self._refill
        while True:
            if refill.held():
                try:
                    ready = refill.emit(self._ended)
                except NothingLeft as exc:
                    self._failed = exc
                    self._report(exc.reports)
                    raise
                if ready is not None:
                    return self._deliver(*ready)
            if self._ended:
                raise StopIteration
            computed = self._next_computed()
            if computed is None:
                self._ended = True
                try:
                    refill.check_epoch()
                except NothingLeft as exc:
                    self._failed = exc
                    self._report(exc.reports)
                    raise
                continue
            refill.feed(*computed)

    def _next_computed(self) -> tuple[list[Any] | None, SourceBatch] | None:
        """The next computed batch in reader order; None at the end of the epoch."""
        if not self.pipelined:
            try:
                batch = self.read()
            except StopIteration:
                return None
            try:
                return self.compute(batch), batch
            except BaseException as exc:
                self._failed = exc
                raise
        if not self._threads:
            self._start_threads()
        item = self._out_q.get()
        self._credits.release()  # a lane may start the batch after the ones in flight
        if isinstance(item, EndOfEpoch):
            return None
        if isinstance(item, Failure):
            self._failed = item.error
            self._stop_threads()
            raise item.error
        return item

    def _deliver(self, outputs: list[Any], meta: list[dict], reports: list[dict]) -> list[Any]:
        """Hand a batch to the user: remember its meta, position and skip reports."""
        self.last_meta = meta
        # Errors count once the user has the batch: prefetched batches that a reset or
        # restore drops are computed again and must not report their skips twice.
        self._report(reports)
        self.last_states, self.last_position, self.last_carry = self._refill.position()
        return outputs

    def _report(self, reports: list[dict]) -> None:
        for entry in reports:
            self.errors.append(entry)
            self.error_counts.add(entry)
            if self.on_error == "warn":
                logger.warning(
                    "skipped %s in %s: %s",
                    entry["path"] or f"sample {entry['index']}",
                    entry["operator"],
                    entry["reason"],
                )

    def _put(self, q: queue.Queue, item: Any) -> bool:
        while not self._stop.is_set():
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _reader_loop(self) -> None:
        while not self._stop.is_set():
            try:
                item: Any = self.read()
            except StopIteration:
                self._put(self._src_q, EndOfEpoch())
                return
            except BaseException as exc:
                self._put(self._src_q, Failure(exc))
                return
            if not self._put(self._src_q, item):
                return

    def _compute_loop(self, lane: int) -> None:
        """One compute lane: take the next source batch, compute it, deliver it in turn."""
        set_current_lane(lane)
        sequencer = self._sequencer
        credits = self._credits
        while not self._stop.is_set():
            if not credits.acquire(timeout=0.05):
                continue
            try:
                seq, item = sequencer.take(lambda: self._src_q.get(timeout=0.05))
            except queue.Empty:
                credits.release()
                continue
            last = isinstance(item, (EndOfEpoch, Failure))
            if not last:
                try:
                    item = (self.compute(item), item)
                except BaseException as exc:
                    item, last = Failure(exc), True
            if not sequencer.wait_turn(seq):
                return
            delivered = self._put(self._out_q, item)
            sequencer.done(seq)
            if last or not delivered:
                return

    def _start_threads(self) -> None:
        self._stop.clear()
        self._sequencer = Sequencer(self._stop)
        self._threads = [
            threading.Thread(target=self._reader_loop, name="chute-reader", daemon=True),
            *(
                threading.Thread(
                    target=self._compute_loop, args=(k,), name=f"chute-compute-{k}", daemon=True
                )
                for k in range(self.lanes)
            ),
        ]
        for t in self._threads:
            t.start()

    def _stop_threads(self) -> None:
        self._stop.set()
        for source in self.sources.values():
            if hasattr(source, "interrupt"):
                source.interrupt(True)
        for q in (self._src_q, self._out_q):
            while True:
                try:
                    q.get_nowait()
                except queue.Empty:
                    break
        for t in self._threads:
            t.join()
        for source in self.sources.values():
            if hasattr(source, "interrupt"):
                source.interrupt(False)
        self._threads = []
        self._make_queues()

    def _make_queues(self) -> None:
        # every lane can hold a source batch while the reader reads the next ones; a
        # reader's own prefetch_queue_depth (DALI's loader queue) can let it run further
        self._src_q: queue.Queue = queue.Queue(max(self.depth, self.lanes, self._reader_depth))
        self._out_q: queue.Queue = queue.Queue(self.depth)
        # Credits for computed batches the user has not taken yet (computing, waiting for
        # their turn, queued): a lane takes one before it starts a batch, the user's next
        # batch gives it back. Without them two lanes each held a finished batch while
        # blocked on a full queue: depth + lanes + the user's batch alive at once (on the
        # GPU, each a full output and decode buffer). Never fewer than the lanes, so a
        # pipeline the user keeps up with computes on all of them.
        self._credits = threading.Semaphore(max(self.depth, self.lanes))

    def reset(self) -> None:
        """Start the next epoch: drop work in flight and rewind the sources."""
        self._stop_threads()
        for node_id, source in self.sources.items():
            # readers stream across epochs: put back what was read ahead and not delivered
            state = self.last_states.get(node_id)
            if getattr(source, "streams_across_epochs", False) and state is not None:
                source.restore(state)
            source.reset()
        self.epoch += 1
        self.iteration = 0
        self._ended = False
        self._refill.restart(self.last_states)

    def restore(
        self,
        epoch: int,
        iteration: int,
        states: dict[int, Any],
        carry: dict | None = None,
        elastic: bool = False,
    ) -> None:
        """Continue from a checkpoint: the next batch is the one after ``states``;
        ``carry`` (state_dict's, see refill.py) says which of its samples were delivered.
        ``elastic``: the states were saved with another batch size or number of shards;
        the readers share out what is left of the epoch (ShardedSource.restore_elastic)."""
        self._stop_threads()
        for node_id, state in states.items():
            source = self.sources[node_id]
            if elastic and hasattr(source, "restore_elastic"):
                iteration = source.restore_elastic(state)
            else:
                source.restore(state)
        self.epoch, self.iteration = epoch, iteration
        self._ended = False
        self._failed = None
        self.last_states = {**self.last_states, **states}
        self.last_position, self.last_carry = (epoch, iteration), carry
        self._refill.restart(self.last_states, carry, fresh=iteration == 0)

    def close(self) -> None:
        self._stop_threads()
        for source in self.sources.values():
            close = getattr(source, "close", None)
            if close is not None:
                close()
        self.pool.close()
        if self.gpu is not None:
            self.gpu.close()
