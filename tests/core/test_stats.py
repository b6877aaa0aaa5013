"""pipe.executor_statistics() and pipe.memory_stats(): per-operator time, calls, samples, bytes."""

from __future__ import annotations

import sys
import time
import types as pytypes

import numpy as np
import pytest

from chute import fn, pipeline_def, types
from chute.executor.stats import ExecutorStats, batch_nbytes
from chute.tensors import TensorListCPU

BATCH = 4


def _sample(info):
    """Samples whose size grows with the batch: 5 + iteration rows of 4x3 uint8."""
    return np.zeros((5 + info.iteration, 4, 3), np.uint8)


@pipeline_def(
    batch_size=BATCH,
    num_threads=2,
    device_id=None,
    seed=3,
    exec_pipelined=False,
    enable_memory_stats=True,
)
def image_pipe(sleep_s: float = 0.0):
    x = fn.external_source(source=_sample, batch=False, layout="HWC", name="src")
    if sleep_s:
        x = fn.python_function(x, function=lambda a: (time.sleep(sleep_s), a)[1], name="slow")
    flipped = fn.flip(x, horizontal=fn.random.coin_flip(), name="flip")
    out = fn.cast(flipped, dtype=types.FLOAT, name="to_float")
    return out


def test_counts_times_and_bytes_per_operator():
    pipe = image_pipe()
    assert pipe.executor_statistics() == {}
    pipe.build()
    for _ in range(3):
        (out,) = pipe.run()
    stats = pipe.executor_statistics()
    assert set(stats) == {"src", "coin_flip", "flip", "to_float"}
    for name, s in stats.items():
        assert s["calls"] == 3, name
        assert s["samples"] == 3 * BATCH, name
        assert s["total_time_s"] > 0, name
        assert s["time_per_batch_s"] == pytest.approx(s["total_time_s"] / 3)
        assert s["time_per_sample_s"] == pytest.approx(s["total_time_s"] / (3 * BATCH))
    assert stats["flip"]["fn"] == "fn.flip" and stats["flip"]["device"] == "cpu"
    assert stats["coin_flip"]["fn"] == "fn.random.coin_flip"
    # the last batch (iteration 2) holds 7x4x3 uint8 samples; the largest batch is that one
    last_u8 = BATCH * 7 * 4 * 3
    assert stats["src"]["real_memory_size"] == [last_u8]
    assert stats["flip"]["real_memory_size"] == [last_u8]
    assert stats["to_float"]["real_memory_size"] == [4 * last_u8] == [out.as_array().nbytes]
    assert stats["to_float"]["max_real_memory_size"] == [4 * last_u8]
    assert stats["to_float"]["reserved_memory_size"] == stats["to_float"]["real_memory_size"]
    pipe.close()


def test_max_memory_keeps_the_largest_batch():
    @pipeline_def(
        batch_size=2, num_threads=1, seed=0, exec_pipelined=False, enable_memory_stats=True
    )
    def shrinking():
        return fn.external_source(
            source=lambda info: np.zeros(9 if info.iteration == 0 else 2, np.float64),
            batch=False,
            name="src",
        )

    pipe = shrinking()
    pipe.run()
    pipe.run()
    s = pipe.executor_statistics()["src"]
    assert s["real_memory_size"] == [2 * 2 * 8]
    assert s["max_real_memory_size"] == [2 * 9 * 8]
    pipe.close()


def test_worker_time_adds_up_over_threads():
    sleep_s = 0.01
    pipe = image_pipe(sleep_s=sleep_s)
    pipe.build()
    pipe.run()
    pipe.run()
    s = pipe.executor_statistics()["slow"]
    assert s["calls"] == 2 and s["samples"] == 2 * BATCH
    # each of the 8 samples slept: the per-sample times of both workers are summed
    assert s["total_time_s"] >= 2 * BATCH * sleep_s * 0.9
    assert s["time_per_sample_s"] >= sleep_s * 0.9
    pipe.close()


def test_pipelined_executor_counts_work_done_ahead():
    pipe = image_pipe(exec_pipelined=True, prefetch_queue_depth=2)
    pipe.build()
    for _ in range(4):
        pipe.run()
    stats = pipe.executor_statistics()
    for name, s in stats.items():
        # batches read and computed ahead count too: up to two queues and two threads' worth
        assert 4 <= s["calls"] <= 4 + 2 * 2 + 2, name
        assert s["samples"] >= 4 * BATCH, name
    pipe.close()


def test_memory_stats_outputs_and_no_cupy():
    pipe = image_pipe()
    assert pipe.memory_stats()["host_output_bytes"] == 0
    (out,) = pipe.run()
    mem = pipe.memory_stats()
    assert mem["host_output_bytes"] == out.as_array().nbytes
    assert mem["gpu_output_bytes"] == 0
    assert mem["outputs"] == [
        {"output": 0, "name": "to_float[0]", "device": "cpu", "bytes": out.as_array().nbytes}
    ]
    # every CPU operator's latest outputs: src + flip (uint8), to_float (float32), coin_flips
    u8 = BATCH * 5 * 4 * 3
    coins = pipe.executor_statistics()["coin_flip"]["real_memory_size"][0]
    assert 0 < coins <= BATCH * 8
    assert mem["host_operator_bytes"] == u8 + u8 + 4 * u8 + coins
    if "cupy" not in sys.modules:
        assert "gpu_pool_used_bytes" not in mem
    pipe.close()


def test_memory_stats_reads_cupys_pools_when_imported(monkeypatch):
    class Pool:
        def used_bytes(self):
            return 1024

        def total_bytes(self):
            return 4096

        def n_free_blocks(self):
            return 3

    fake = pytypes.SimpleNamespace(
        get_default_memory_pool=Pool, get_default_pinned_memory_pool=Pool
    )
    monkeypatch.setitem(sys.modules, "cupy", fake)
    pipe = image_pipe()
    pipe.run()
    mem = pipe.memory_stats()
    assert mem["gpu_pool_used_bytes"] == 1024
    assert mem["gpu_pool_total_bytes"] == 4096
    assert mem["pinned_pool_free_blocks"] == 3
    pipe.close()


def test_batch_nbytes_of_every_batch_kind():
    a = np.zeros((3, 5), np.float32)
    assert batch_nbytes([a, a[:1]]) == 60 + 20
    assert batch_nbytes(TensorListCPU(np.zeros((2, 3, 4), np.uint8))) == 24
    assert batch_nbytes(TensorListCPU([a, a[:2]])) == 60 + 40
    assert batch_nbytes(a) == 60
    assert batch_nbytes(None) == 0
    # a batch of samples tells its bytes without a view per sample
    ragged = TensorListCPU([a, a[:2]])
    ragged.at = None  # (what the executor's statistics must not need)
    assert ragged.nbytes == batch_nbytes(ragged) == 100
    assert TensorListCPU([]).nbytes == 0


def test_snapshot_merges_accumulators_of_many_threads():
    import threading

    pipe = image_pipe()
    pipe.build()
    node = pipe._plan.nodes[0]
    stats = ExecutorStats(pipe._plan.nodes)

    def add():
        for _ in range(1000):
            rec = stats.local()[node.id]
            rec[0] += 2
            rec[1] += 1

    threads = [threading.Thread(target=add) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    s = stats.snapshot()[node.name]
    assert s["samples"] == 4000 and s["total_time_s"] == pytest.approx(8000 / 1e9)
    pipe.close()


def test_batch_nbytes_of_a_list_with_samples_without_nbytes():
    a = np.zeros((3, 5), np.float32)
    assert batch_nbytes([a, b"xyz", a[:1]]) == 60 + 0 + 20  # bytes objects count as 0
    assert batch_nbytes([]) == 0
