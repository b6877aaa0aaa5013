"""on_error skip / warn: replacing the samples that failed, and the error budget.

A failed sample's slot gets the next good sample of its batch, marked not real, and
real samples move to the front so that a batch's ``real`` count is a prefix.
"""

from __future__ import annotations

from typing import Any

from chute.runtime.errors import detached

__all__ = ["AllFailed", "replace_bad_samples"]


class AllFailed(Exception):
    """Every sample of the batch failed and nothing pads it: the batch is dropped, and
    later samples take its places (see executor/refill.py)."""


def replace_bad_samples(
    executor: Any, batch: Any, values: dict, bad: dict, filler: tuple[dict, dict] | None = None
) -> None:
    """on_error skip/warn: fill each failed slot with the next good sample, marked not real.

    Real samples are then moved to the front so that ``real`` counts a prefix. When every
    sample failed, ``filler`` (a good sample of an earlier batch) pads the whole batch, so
    the user gets a batch with no real samples; without one, :class:`AllFailed`.
    """
    n = batch.size
    good = [i for i in range(n) if i not in bad]
    for i, (operator, reason) in sorted(bad.items()):
        if isinstance(reason, BaseException):
            detached(reason)  # its frames (and the batch they hold) are not needed
        meta = batch.meta[i]
        if meta.get("real", True):
            entry = {
                "path": meta.get("source_info"),
                "index": meta.get("index", i),
                "operator": operator,
                "reason": f"{type(reason).__name__}: {reason}"
                if isinstance(reason, BaseException)
                else str(reason),
                "epoch": meta.get("epoch", batch.epoch),
                "iteration": batch.iteration,
            }
            batch.errors.append(entry)
            executor.errors_computed += 1
    lists = [(k, v) for k, v in values.items() if isinstance(v, list) and len(v) == n]
    # device batches (TensorListGPU) follow the same moves through gather()
    gathered = [k for k, v in values.items() if hasattr(v, "gather") and len(v) == n]
    if not good and filler is not None and not gathered and all(k in filler[0] for k, _ in lists):
        samples, meta = filler
        for i in range(n):
            for k, v in lists:
                v[i] = samples[k]
            batch.meta[i] = {
                **meta,
                "real": False,
                "replaces": batch.meta[i].get("source_info"),
            }
        _check_error_ratio(executor, batch)
        return
    if not good:
        _check_error_ratio(executor, batch)
        raise AllFailed
    source = list(range(n))  # output slot -> the sample it takes
    for i in sorted(bad):
        source[i] = next(k for k in [*range(i + 1, n), *range(i)] if k not in bad)
        batch.meta[i] = {
            **batch.meta[source[i]],
            "real": False,
            "replaces": batch.meta[i].get("source_info"),
        }
    order = sorted(range(n), key=lambda k: not batch.meta[k].get("real", True))
    source = [source[k] for k in order]
    batch.meta[:] = [batch.meta[k] for k in order]
    if source != list(range(n)):
        for _, v in lists:
            v[:] = [v[k] for k in source]
        for k in gathered:
            values[k] = values[k].gather(source)
    _check_error_ratio(executor, batch)


def _check_error_ratio(executor: Any, batch: Any) -> None:
    seen = max(executor.samples_seen, 1)
    if batch.errors and executor.errors_computed / seen > executor.max_error_ratio:
        last = batch.errors[-1]
        raise RuntimeError(
            f"{executor.errors_computed} of {seen} samples failed, more than max_error_ratio="
            f"{executor.max_error_ratio}; the last: {last['path']} in {last['operator']}: {last['reason']}"
        )
