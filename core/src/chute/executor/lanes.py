"""Compute lanes: several batches in the compute stage at once, handed out in order.

A GPU pipeline's compute stage mostly waits: on the JPEG decoders (the hardware
engines, nvJPEG's CUDA and CPU threads, all outside the GIL) and on host work
that prepares kernels. With one compute thread a batch costs the sum of these;
with ``n`` lanes, batch i+1 parses headers and draws crop windows while batch i
decodes, and each lane's decoder and CUDA stream keep the engines busy.

A CPU pipeline's batch ends with a tail: the last chunks of images decode while most
worker threads have nothing left of this batch. With two lanes the next batch's chunks
fill those threads (H100 host, 16 threads, random-crop decode: ~4,700 img/s with one
lane, ~5,500 with two; bench/results/h100host_cpu_lanes_*).

Results stay deterministic: random draws are keyed by (seed, operator, epoch,
iteration, sample), not by which lane computes a batch, and :class:`Sequencer`
delivers batches (and the end of an epoch, and errors) in iteration order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from chute.executor.plan import fed_by_user, runs_batch_wise
from chute.runtime.tuning import current as current_tuning

__all__ = [
    "NoLock",
    "Sequencer",
    "current_lane",
    "lane_count",
    "set_current_lane",
]

_lane = threading.local()


def current_lane() -> int:
    """The compute lane of the calling thread (0 outside the executor's lanes)."""
    return getattr(_lane, "index", 0)


def set_current_lane(index: int) -> None:
    """Mark the calling thread as compute lane ``index``."""
    _lane.index = index


def lane_count(plan: Any, pipeline: Any) -> int:
    """How many batches the compute stage may hold at once for this plan.

    One, unless the pipeline runs pipelined, reads only host sources, stops on errors or
    skips them with a reader behind (skip/warn pad a failed place with another batch's
    sample, which lanes would pick by timing; the padding reaches the user only where
    the user feeds the source, since refill.py otherwise fills every place, in reader
    order, with later good samples) and every batch-level step is safe to run for two
    batches at once:
    its operator is ``lane_safe``, or it is a per-sample CPU operator run batch-wise
    (``cpu_batch_wise``; a user's python_function may keep state between calls and must
    see batches one at a time, in order). Then GPU plans that decode on the GPU (a
    ``decodes`` operator on "mixed") get the Tuning's ``gpu_lanes``, and CPU plans with more
    than one worker thread its ``cpu_lanes`` (the pipeline's Tuning, chute.runtime.tuning,
    where the measurements are).
    """
    if not pipeline.exec_pipelined or not getattr(pipeline, "exec_async", True):
        return 1
    if any(n.device != "cpu" for n in plan.sources):
        return 1
    skipping = pipeline.on_error != "raise" or any(
        n.args.get("on_error") not in (None, "raise") for n in plan.nodes
    )
    if skipping and fed_by_user(plan):
        return 1
    batch_nodes = [s.nodes[0] for s in plan.steps if s.kind != "segment"]
    if not all(n.op.lane_safe or runs_batch_wise(n) for n in batch_nodes):
        return 1
    if not plan.uses_gpu:
        return current_tuning().cpu_lanes if pipeline.num_threads > 1 else 1
    if not any(n.device == "mixed" and n.op.decodes for n in batch_nodes):
        return 1
    return current_tuning().gpu_lanes


class Sequencer:
    """Numbers items as lanes take them and lets them out strictly in that order."""

    def __init__(self, stop: threading.Event):
        self._stop = stop
        self._take = threading.Lock()
        self._turn = threading.Condition()
        self._next_in = 0
        self._next_out = 0

    def take(self, get: Callable[[], Any]) -> tuple[int, Any]:
        """Call ``get()`` (which may raise queue.Empty) and number what it returns."""
        with self._take:
            item = get()
            seq = self._next_in
            self._next_in += 1
            return seq, item

    def wait_turn(self, seq: int) -> bool:
        """Block until every item before ``seq`` is out; False when stopping."""
        with self._turn:
            while self._next_out != seq:
                if self._stop.is_set():
                    return False
                self._turn.wait(0.05)
        return not self._stop.is_set()

    def done(self, seq: int) -> None:
        """Item ``seq`` is out: let the next one go."""
        with self._turn:
            self._next_out = seq + 1
            self._turn.notify_all()


class NoLock:
    """A lock that is not needed: with one compute lane only one thread writes."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None
