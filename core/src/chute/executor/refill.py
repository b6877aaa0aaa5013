"""on_error skip / warn: later samples of the reader take the places of those that failed.

The compute stage replaces a failed sample inside its batch (skips.py) so that every
step sees a full batch; here, before the user gets it, such a batch is held back and
its places are filled, in reader order, with the good samples of the batches after it.
Each delivered batch still stands for one reader batch, so an epoch has as many batches
as without failures (an iterator's ``len()`` holds) and every good sample comes once;
the places given up show at the epoch's end, whose batches hold fewer real samples (the
last-batch policy trims or pads them). An epoch in which no sample is good is an error.

Checkpoints: the position after a delivered batch is the reader state before the first
batch that still has samples to give, plus how many of its good samples were delivered
(``drop``) and the batches already emptied but not yet delivered (``pending``).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from chute.tensors.cpu import TensorListCPU

__all__ = ["NothingLeft", "Refill", "carry_problem"]


class NothingLeft(RuntimeError):
    """on_error skip: no sample of the epoch (or of its rest, after a restore) was good."""

    def __init__(self, message: str, reports: list[dict]):
        super().__init__(message)
        self.reports = reports  # skip reports not delivered with a batch


@dataclass
class _Entry:
    """One computed reader batch: a batch to deliver, and good samples to give."""

    slots: int  # samples of the delivered batch
    capacity: int  # real samples the reader put into it
    outputs: list | None = None  # None once every good sample was given
    batch: Any = None
    good: list[int] = field(default_factory=list)  # indices of its good samples
    taken: int = 0  # good samples already given to earlier batches
    entered: bool = False  # its skip reports went out
    before: dict | None = None  # source states before this batch
    epoch: int = 0  # the reader epoch of its first sample: that of the batch delivered
    epochs: list[int] = field(default_factory=list)  # the reader epoch of each good sample
    last_epoch: int = 0  # the latest reader epoch among its samples


class Refill:
    """Turns computed batches, in order, into delivered batches with failed places filled."""

    def __init__(self, states: dict, enabled: bool = True) -> None:
        # False where a source is fed by the user (feed_input): no later sample to draw
        self.enabled = enabled
        self.entries: deque[_Entry] = deque()
        self.prev_states = dict(states)
        self.pad: tuple[list, int, dict] | None = None  # a good sample delivered earlier
        self.drop = 0  # after a restore: good samples of the next batch already delivered
        self.good_in_epoch = 0
        self.skipped_in_epoch = 0
        self.first_error: dict | None = None
        self.fresh_epoch = True  # the epoch started at its first batch (no restore)
        self.with_good = set()
        self.partial = None
        self.next_position = (0, 0)  # (epoch, iteration) after the last fed batch

    def restart(self, states: dict, carry: dict | None = None, fresh: bool = True) -> None:
        """Drop what is held; after a restore, ``carry`` says what was delivered already."""
        self.entries.clear()
        self.prev_states = dict(states)
        carry = carry or {}
        self.drop = int(carry.get("drop", 0))
        for slots, capacity, epoch in carry.get("pending", []):
            self.entries.append(
                _Entry(slots, capacity, entered=True, epoch=epoch, last_epoch=epoch)
            )
        self.good_in_epoch = 0
        self.skipped_in_epoch = 0
        self.first_error = None
        self.fresh_epoch = fresh and not carry
        self.with_good: set[int] = set()  # reader epochs that delivered a good sample
        # a restore mid-epoch: the first reader epoch seen may have delivered good samples
        self.partial: int | None = None if self.fresh_epoch else -1
        if self.entries:
            self.partial = self.entries[0].epoch

    def feed(self, outputs: list | None, batch: Any) -> None:
        """A computed batch, in reader order (outputs None: every sample failed)."""
        meta = batch.meta if outputs is not None else []
        outputs = outputs if outputs is not None else []
        slots = len(outputs[0]) if outputs else batch.size
        epochs = getattr(batch, "epochs_read", None) or [batch.epoch]
        if (
            slots == len(meta) == batch.real_read == len(epochs)
            and not batch.errors
            and not getattr(batch, "branch_failures", None)
        ):  # every sample real and as read (nothing skipped): the reader's per-sample passes hold
            good = list(range(slots))
            sample_epochs = list(epochs)
        else:
            good = [i for i in range(slots) if i < len(meta) and meta[i].get("real", True)]
            sample_epochs = [meta[i].get("epoch", batch.epoch) for i in good]
        capacity = batch.real_read if batch.real_read >= 0 else slots
        entry = _Entry(slots, capacity, outputs, batch, good, before=self.prev_states)
        entry.epoch, entry.last_epoch = epochs[0], max(epochs)
        entry.epochs = sample_epochs
        if self.partial == -1:
            self.partial = entry.epoch
        if self.drop:
            entry.taken, entry.entered = min(self.drop, len(good)), True
            self.drop = 0
        self.prev_states = dict(batch.states)
        self.next_position = (batch.epoch, batch.iteration + 1)
        self.entries.append(entry)

    def check_epoch(self) -> None:
        """At the epoch's end: an error if no sample of it was good (and some failed)."""
        if self.good_in_epoch or any(e.good for e in self.entries if e.outputs is not None):
            return
        reports = [
            r
            for e in self.entries
            if e.outputs is not None and not e.entered
            for r in e.batch.errors
        ]
        for e in self.entries:
            e.entered = True
        self._count(reports)
        if self.skipped_in_epoch:
            self.entries.clear()
            raise self.nothing_left(reports)

    def held(self) -> bool:
        return bool(self.entries)

    def emit(self, ended: bool) -> tuple[list, list[dict], list[dict]] | None:
        """The next batch to deliver (outputs, meta, skip reports), or None: more needed."""
        if not self.entries:
            return None
        first = self.entries[0]
        if not self.enabled:  # fed sources: nothing more to draw, delivered as computed
            self.entries.popleft()
            if not first.outputs and first.slots:
                self._count(first.batch.errors)
                raise self.nothing_left(first.batch.errors, "batch")
            return first.outputs, first.batch.meta, first.batch.errors
        if (
            first.outputs is not None
            and not first.taken
            and not first.batch.errors
            and len(first.good) >= first.capacity
        ):  # nothing failed: delivered as computed
            self.entries.popleft()
            self.good_in_epoch += len(first.good)
            self._remember_pad(first.outputs, first.good, first.batch.meta)
            return first.outputs, first.batch.meta, []
        # only samples of the batch's own reader epoch fill it: epochs keep their batches
        epoch = first.epoch
        live = [e for e in self.entries if e.outputs is not None]
        available = sum(e.epochs[e.taken :].count(epoch) for e in live)
        complete = ended or any(e.last_epoch > epoch for e in self.entries)
        if available < first.capacity and not complete:
            return None
        picks: list[tuple[Any, int, dict]] = []
        reports: list[dict] = []
        for entry in live:
            if len(picks) >= first.capacity or entry.epoch > epoch:
                break
            if not entry.entered:
                entry.entered = True
                reports += entry.batch.errors
            while (
                entry.taken < len(entry.good)
                and len(picks) < first.capacity
                and entry.epochs[entry.taken] == epoch
            ):
                k = entry.good[entry.taken]
                picks.append((entry.outputs, k, entry.batch.meta[k]))
                entry.taken += 1
        if ended:  # the skip reports of batches no delivered batch reached
            for entry in self.entries:
                if entry.outputs is not None and not entry.entered:
                    entry.entered = True
                    reports += entry.batch.errors
        self._count(reports)
        if picks:
            self.with_good.add(epoch)
        elif complete and epoch not in self.with_good and epoch != self.partial and first.slots:
            self.entries.popleft()
            raise self.nothing_left(reports)
        result = self._compose(first, picks)
        self.entries.popleft()
        for entry in self.entries:  # emptied batches free their samples
            if entry.outputs is not None and entry.entered and entry.taken >= len(entry.good):
                entry.outputs = entry.batch = None
        return (*result, reports)

    def _count(self, reports: list[dict]) -> None:
        self.skipped_in_epoch += len(reports)
        if reports and self.first_error is None:
            self.first_error = reports[0]

    def _compose(self, first: _Entry, picks: list) -> tuple[list, list[dict]]:
        """The delivered batch: ``picks`` then copies of a good sample marked not real."""
        self.good_in_epoch += len(picks)
        n = first.slots
        if picks:
            pad_at = [(outs, k) for outs, k, _ in picks[:1]] * (n - len(picks))
            pad_meta = picks[0][2]
        elif first.outputs and n:  # the reader's own padding (a shard's end)
            pad_at = [(first.outputs, k) for k in range(n)]
            pad_meta = None
        elif self.pad is not None and n:
            outs, k, pad_meta = self.pad
            pad_at = [(outs, k)] * n
        elif n and any(e.outputs for e in self.entries):  # after a restore: a later batch's
            donor = next(e for e in self.entries if e.outputs)
            pad_at = [(donor.outputs, 0)] * n
            pad_meta = _meta_of(donor, 0)
        elif n:
            raise self.nothing_left([])
        else:
            pad_at, pad_meta = [], None
        parts = [(outs, k) for outs, k, _ in picks] + pad_at
        meta = [{**m, "real": True} for _, _, m in picks]  # iterators count "real"
        for _, k in pad_at:
            base = pad_meta if pad_meta is not None else _meta_of(first, k)
            meta.append({**base, "real": False})
        template = first.outputs or (picks[0][0] if picks else None) or parts[0][0]
        outputs = [
            _gather(template[o], [(p[o], k) for p, k in parts], meta) for o in range(len(template))
        ]
        if picks:
            self._remember_pad(outputs, [0], meta)
        return outputs, meta

    def _remember_pad(self, outputs: list, good: list[int], meta: list[dict]) -> None:
        if good:
            self.pad = (outputs, good[0], meta[good[0]])

    def nothing_left(self, reports: list[dict], of: str = "epoch") -> NothingLeft:
        """The error of an epoch whose samples all failed (or, after a restore, the rest)."""
        which = "every sample" if self.fresh_epoch or of != "epoch" else "every remaining sample"
        first = self.first_error
        detail = (
            f"; the first: {first.get('path') or 'sample ' + str(first.get('index'))} in "
            f"{first.get('operator')}: {first.get('reason')}"
            if first
            else ""
        )
        return NothingLeft(
            f"on_error skip: {which} of the {of} failed ({self.skipped_in_epoch} skipped), "
            f"nothing is left to deliver{detail}",
            reports,
        )

    def position(self) -> tuple[dict, tuple[int, int], dict | None]:
        """Where a checkpoint resumes: source states, (epoch, iteration) of the batch to
        read next and the carry (None when nothing is held back)."""
        pending = []
        for entry in self.entries:
            if entry.outputs is None:
                pending.append([int(entry.slots), int(entry.capacity), int(entry.epoch)])
                continue
            carry = (
                {"drop": int(entry.taken), "pending": pending} if entry.taken or pending else None
            )
            where = (entry.batch.epoch, entry.batch.iteration)
            return dict(entry.before or {}), where, carry
        carry = {"drop": 0, "pending": pending} if pending else None
        return dict(self.prev_states), self.next_position, carry


def _meta_of(entry: _Entry, k: int) -> dict:
    meta = entry.batch.meta if entry.batch is not None else []
    return dict(meta[k]) if k < len(meta) else {}


def _gather(template: Any, parts: list[tuple[Any, int]], meta: list[dict]) -> Any:
    """One output of the delivered batch from samples of (possibly) several batches."""
    if isinstance(template, TensorListCPU):
        return TensorListCPU([v.at(k) for v, k in parts], template.layout(), meta=meta)
    from chute.tensors.gpu import TensorListGPU

    if isinstance(template, TensorListGPU):
        for v in {id(v): v for v, _ in parts}.values():
            if v.stream is not None and v._ready is not None:
                v._ready.synchronize()  # samples of other batches' streams are ready
        return TensorListGPU(
            [v.at(k) for v, k in parts], template.layout(), None, template.device_id
        )
    raise TypeError(f"on_error skip: cannot refill an output of type {type(template).__name__}")


def carry_problem(carry: Any) -> str | None:
    """Why ``carry`` (a state's field) is not one that :meth:`Refill.position` gives."""
    if carry is None:
        return None
    if not isinstance(carry, dict) or set(carry) - {"drop", "pending"}:
        return "must be a dict with 'drop' and 'pending'"
    drop = carry.get("drop", 0)
    if not isinstance(drop, int) or isinstance(drop, bool) or drop < 0:
        return f"'drop' must be a non-negative integer, got {drop!r}"
    pending = carry.get("pending", [])
    ok = isinstance(pending, list) and all(
        isinstance(p, (list, tuple))
        and len(p) == 3
        and all(isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in p)
        for p in pending
    )
    return None if ok else f"'pending' must be a list of [slots, capacity, epoch], got {pending!r}"
