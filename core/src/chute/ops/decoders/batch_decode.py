"""The CPU image decoders over a whole batch: few GIL hand-offs per sample.

Decoding sample by sample, each worker thread takes the GIL back after every image for
~50 us of Python; with 16 threads the GIL is the bottleneck (H100 host, 16 threads:
raw JPEG decoding 7,125 img/s, the per-sample pipeline 3,305; bench/results/
h100host_cpu_threads_diag_2026-11-21.txt). Here the batch is cut into chunks that the
worker pool takes in turn; for a chunk a worker prepares every sample (header, window,
plan: image_codec.prepare), decodes all its JPEG regions in one call that holds no GIL
(image_codec.decode_jobs) and finishes them (image_codec.finish). The pixels, windows,
random numbers and errors are those of the per-sample path, which stays the path of
debug mode and of single samples.
"""

from __future__ import annotations

from typing import Any

from chute.ops.decoders import image_codec
from chute.ops.decoders.image_headers import DecodeError
from chute.runtime.errors import OperatorError, detached

__all__ = ["SampleList", "run_batch"]


def chunk_sizes(n: int, threads: int, max_chunk: int) -> list[int]:
    """How many samples each chunk of a batch of ``n`` takes, in order.

    Each thread's share of the batch, at most ``max_chunk`` (Tuning.max_chunk: large
    enough to amortise the GIL hand-offs, small enough that the threads finish a batch
    together; chute.runtime.tuning has the measurements).
    """
    size = max(1, min(max_chunk, -(-n // max(1, threads))))
    return [min(size, n - start) for start in range(0, n, size)]


class SampleList(list):
    """A batch step's output samples; ``failed`` maps sample -> reason (on_error skip/warn)."""

    failed: dict[int, Any]


def run_batch(op: Any, inputs: list, args: Any, ctx: Any, max_chunk: int) -> SampleList:
    """``op``'s output for every sample of the batch (op: a CPU image decoder)."""
    encoded = inputs[0]
    n = len(encoded)
    out = SampleList([None] * n)
    out.failed = {}
    threads = ctx.pool.num_threads
    meta = [(ctx.meta[i] if i < len(ctx.meta) else None) or {} for i in range(n)]
    # largest files first: the threads then finish the batch together (simulated on
    # make_dataset.py crops, 16 threads: 92% of the ideal instead of 83% in batch order)
    order = sorted(range(n), key=lambda i: -len(encoded[i]))
    chunks, start = [], 0
    for size in chunk_sizes(n, threads, max_chunk):
        chunks.append(order[start : start + size])
        start += size

    def fail(i: int, exc: BaseException) -> None:
        if ctx.on_error == "raise":
            path = meta[i].get("source_info")
            raise OperatorError(ctx.node, i, ctx.iteration, exc, path) from exc
        out.failed[i] = detached(exc)  # kept for the report: not its frames (this batch)

    def work(c: int) -> None:
        jobs = []
        for i in chunks[c]:
            if meta[i].get("error"):  # the reader could not read it: its error stands
                out.failed[i] = meta[i]["error"]
                continue
            sample_inputs = tuple(v[i] for v in inputs)
            try:
                jobs.append((i, op.prepare(sample_inputs, args.sample(i), ctx, i, meta[i])))
            except Exception as exc:
                fail(i, exc)
        refused = op.refuse_corrupt([job for _, job in jobs], ctx, [meta[i] for i, _ in jobs])
        for k, reason in refused.items():
            fail(jobs[k][0], DecodeError(reason))
        jobs = [(i, job) for i, job in jobs if i not in out.failed]
        errors = image_codec.decode_jobs([job for _, job in jobs])
        for (i, job), error in zip(jobs, errors):
            try:
                if error is not None:
                    raise error
                out[i] = op.finish(job, ctx)
            except Exception as exc:
                fail(i, exc)

    failures = ctx.pool.run(work, len(chunks))
    if failures:
        raise failures[0][1]
    return out
