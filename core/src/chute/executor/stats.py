"""Per-operator statistics measured by the executor: wall time, calls, samples, output bytes.

Timing uses ``time.perf_counter_ns``. The hot path takes no lock: every thread
(CPU workers, the reader thread, the compute thread) adds to its own
accumulator, registered once per thread; ``snapshot()`` sums them on read.
Reads may see a worker's counters a few samples behind, never torn ones.
"""

from __future__ import annotations

import operator
import sys
import threading
from typing import Any

from chute.graph.node import OpNode

__all__ = ["ExecutorStats", "batch_nbytes", "gpu_pool_bytes", "memory_stats"]

_NBYTES = operator.attrgetter("nbytes")


def batch_nbytes(value: Any) -> int:
    """Bytes held by a batch: a list of samples, a TensorListCPU/GPU or one array."""
    if isinstance(value, list):
        try:
            return sum(map(_NBYTES, value))  # arrays: one C-level pass (the reader's 256 files)
        except AttributeError:
            return sum(getattr(s, "nbytes", 0) for s in value)
    dense = getattr(value, "_dense", None)  # TensorList's contiguous storage, when it has one
    if dense is not None:
        return int(dense.nbytes)
    nbytes = getattr(value, "nbytes", None)
    if nbytes is not None:
        return int(nbytes)
    if hasattr(value, "at") and hasattr(value, "__len__"):
        return sum(int(getattr(value.at(i), "nbytes", 0)) for i in range(len(value)))
    return 0


def gpu_pool_bytes() -> dict[str, int] | None:
    """CuPy's device and pinned memory pools, when CuPy is already imported; else None."""
    cp = sys.modules.get("cupy")
    if cp is None:  # never import CuPy just to report on it
        return None
    pool = cp.get_default_memory_pool()
    pinned = cp.get_default_pinned_memory_pool()
    return {
        "gpu_pool_used_bytes": int(pool.used_bytes()),
        "gpu_pool_total_bytes": int(pool.total_bytes()),
        "pinned_pool_free_blocks": int(pinned.n_free_blocks()),
    }


class ExecutorStats:
    """Counters for every node of a plan; cheap to update from any thread.

    Per thread and node: ``[time_ns, samples]``. Per node, written only by the
    stage that owns the node (so no lock either): calls, and for each output
    the bytes of the latest batch and the largest batch seen.
    """

    def __init__(self, nodes: list[OpNode]):
        self.nodes = list(nodes)
        self._ids = [n.id for n in self.nodes]
        self._local = threading.local()
        self._per_thread: list[dict[int, list[int]]] = []
        self._register_lock = threading.Lock()  # taken once per thread, never per sample
        self.calls = {n.id: 0 for n in self.nodes}
        self.last_bytes = {n.id: [0] * len(n.outputs) for n in self.nodes}
        self.max_bytes = {n.id: [0] * len(n.outputs) for n in self.nodes}

    def local(self) -> dict[int, list[int]]:
        """This thread's accumulator: node id -> [time_ns, samples]."""
        try:
            return self._local.acc
        except AttributeError:
            # Every node's entry exists from the start, so readers never see the dict grow.
            acc = {k: [0, 0] for k in self._ids}
            with self._register_lock:
                self._per_thread.append(acc)
            self._local.acc = acc
            return acc

    def add_call(self, node: OpNode, elapsed_ns: int, samples: int, outputs: Any) -> None:
        """Record one batch-level call (a source, a batch or GPU step) and its outputs."""
        rec = self.local()[node.id]
        rec[0] += elapsed_ns
        rec[1] += samples
        self.end_batch(node, outputs)

    def end_batch(self, node: OpNode, outputs: Any) -> None:
        """Count one batch of ``node`` and record its outputs' bytes (one value per output)."""
        self.calls[node.id] += 1
        last = self.last_bytes[node.id]
        peak = self.max_bytes[node.id]
        for i, out in enumerate(outputs[: len(last)]):
            nbytes = batch_nbytes(out)
            last[i] = nbytes
            if nbytes > peak[i]:
                peak[i] = nbytes

    def snapshot(self) -> dict[str, dict[str, Any]]:
        """The statistics keyed by operator (node) name; see Pipeline.executor_statistics."""
        with self._register_lock:
            accs = list(self._per_thread)
        result: dict[str, dict[str, Any]] = {}
        for node in self.nodes:
            time_ns = sum(acc[node.id][0] for acc in accs)
            samples = sum(acc[node.id][1] for acc in accs)
            calls = self.calls[node.id]
            last = list(self.last_bytes[node.id])
            peak = list(self.max_bytes[node.id])
            result[node.name] = {
                "fn": node.schema.display_name,
                "device": node.device,
                "calls": calls,
                "samples": samples,
                "total_time_s": time_ns / 1e9,
                "time_per_batch_s": time_ns / 1e9 / calls if calls else 0.0,
                "time_per_sample_s": time_ns / 1e9 / samples if samples else 0.0,
                # DALI's keys, one entry per output; chute allocates exactly what a batch
                # holds, so "reserved" equals "real".
                "real_memory_size": last,
                "max_real_memory_size": peak,
                "reserved_memory_size": list(last),
                "max_reserved_memory_size": list(peak),
            }
        return result

    def output_bytes(self, node: OpNode, index: int) -> int:
        """Bytes of output ``index`` of ``node`` in the latest batch computed."""
        return self.last_bytes[node.id][index]


def memory_stats(plan: Any, stats: ExecutorStats) -> dict[str, Any]:
    """Bytes of the latest batch computed: per pipeline output, on the host and the GPU."""
    outputs = []
    for k, out in enumerate(plan.outputs):
        nbytes = stats.output_bytes(out.producer, out.index)
        outputs.append({"output": k, "name": out.name, "device": out.device, "bytes": nbytes})
    host = sum(o["bytes"] for o in outputs if o["device"] == "cpu")
    in_flight = sum(
        sum(stats.last_bytes[n.id]) for n in plan.nodes if n.device == "cpu"
    )  # every CPU operator's latest outputs: the host memory one batch passes through
    result: dict[str, Any] = {
        "host_output_bytes": host,
        "gpu_output_bytes": sum(o["bytes"] for o in outputs if o["device"] != "cpu"),
        "host_operator_bytes": in_flight,
        "outputs": outputs,
    }
    pools = gpu_pool_bytes()
    if pools is not None:
        result.update(pools)
    return result
