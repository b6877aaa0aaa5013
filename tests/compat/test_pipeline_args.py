"""DALI 2.4's Pipeline / @pipeline_def arguments: each accepted, checked, and working where it means something."""

from __future__ import annotations

import os
import pickle
import threading

import numpy as np
import pytest

from chute import Pipeline, fn, pipeline_def, types
from chute.runtime.workers import WorkerPool

EVERY_ARGUMENT = dict(
    batch_size=2,
    num_threads=1,
    device_id=None,
    seed=7,
    exec_pipelined=True,
    prefetch_queue_depth={"cpu_size": 3, "gpu_size": 2},
    exec_async=True,
    bytes_per_sample=1024,
    set_affinity=False,
    max_streams=4,
    default_cuda_stream_priority=-1,
    enable_memory_stats=True,
    enable_checkpointing=True,
    checkpoint=None,
    py_num_workers=2,
    py_start_method="spawn",
    py_callback_pickler=pickle,
    output_dtype=types.INT32,
    output_ndim=1,
    exec_dynamic=True,
    experimental_exec_dynamic=False,
)


def _counter():
    return fn.external_source(
        source=lambda info: np.array([info.idx_in_epoch], np.int32), batch=False
    )


def test_every_dali_argument_is_accepted_by_the_constructor_and_the_decorator():
    pipe = Pipeline(**EVERY_ARGUMENT)
    with pipe:
        pipe.set_outputs(_counter())
    (out,) = pipe.run()
    assert [int(out.at(i)[0]) for i in range(2)] == [0, 1]
    assert pipe.prefetch_queue_depth == 3
    assert pipe.default_cuda_stream_priority == -1

    @pipeline_def(**EVERY_ARGUMENT)
    def decorated():
        return _counter()

    (out,) = decorated().run()
    assert out.as_array().tolist() == [[0], [1]]


def test_none_means_the_default():
    pipe = Pipeline(
        batch_size=2,
        num_threads=None,
        exec_pipelined=None,
        prefetch_queue_depth=None,
        exec_async=None,
        set_affinity=None,
        default_cuda_stream_priority=None,
        enable_memory_stats=None,
        py_start_method=None,
        output_ndim=None,
    )
    assert pipe.num_threads == (os.cpu_count() or 1)
    assert pipe.exec_pipelined is True and pipe.exec_async is True
    assert pipe.prefetch_queue_depth == 2
    assert pipe.set_affinity is False and pipe.default_cuda_stream_priority == 0
    assert pipe.enable_memory_stats is False and pipe.py_start_method == "fork"


@pytest.mark.parametrize(
    "kwargs, error, words",
    [
        ({"batch_size": 0}, ValueError, "batch_size"),
        ({"batch_size": 2.5}, TypeError, "batch_size must be an int"),
        ({"exec_async": "yes"}, TypeError, "exec_async must be True or False"),
        ({"prefetch_queue_depth": 0}, ValueError, "prefetch_queue_depth must be >= 1"),
        ({"prefetch_queue_depth": {"cpu_size": 2}}, ValueError, '"cpu_size" and "gpu_size"'),
        ({"bytes_per_sample": -1}, ValueError, "bytes_per_sample must be >= 0"),
        ({"max_streams": -2}, ValueError, "max_streams must be >= -1"),
        ({"default_cuda_stream_priority": 0.5}, TypeError, "default_cuda_stream_priority"),
        ({"py_num_workers": -1}, ValueError, "py_num_workers must be >= 0"),
        ({"py_start_method": "forkserver"}, ValueError, "'fork' or 'spawn'"),
        ({"py_callback_pickler": 3, "py_start_method": "spawn"}, TypeError, "dumps"),
        ({"py_callback_pickler": pickle}, ValueError, "'spawn' only"),
        ({"output_dtype": "float"}, TypeError, "output_dtype"),
        ({"output_ndim": -1}, ValueError, "output_ndim must be >= 0"),
        ({"checkpoint": 5}, TypeError, "checkpoint"),
        (
            {
                "prefetch_queue_depth": {"cpu_size": 2, "gpu_size": 2},
                "exec_async": False,
                "exec_pipelined": False,
            },
            ValueError,
            "needs exec_async or exec_pipelined",
        ),
    ],
)
def test_arguments_are_checked(kwargs, error, words):
    with pytest.raises(error, match=words):
        Pipeline(**{"batch_size": 2, **kwargs})


def test_a_misspelled_argument_names_the_closest_valid_one():
    with pytest.raises(TypeError, match="'exec_asnyc'; did you mean 'exec_async'"):
        Pipeline(batch_size=2, exec_asnyc=False)
    with pytest.raises(TypeError, match="'num_thread'; did you mean 'num_threads'"):
        pipeline_def(batch_size=2, num_thread=2)

    @pipeline_def(batch_size=2)
    def pipe(scale=1):
        return _counter() * scale

    with pytest.raises(
        TypeError, match="'prefetch_queue_dpeth'; did you mean 'prefetch_queue_depth'"
    ):
        pipe(prefetch_queue_dpeth=3)
    with pytest.raises(TypeError, match="'enable_memory_stat'; did you mean 'enable_memory_stats'"):
        pipe(enable_memory_stat=True)
    (out,) = pipe(scale=3).run()  # the function's own arguments still go to it
    assert out.as_array().tolist() == [[0], [3]]


@pytest.mark.parametrize("pipelined, run_async", [(True, False), (False, True), (False, False)])
def test_without_exec_async_or_exec_pipelined_run_computes_in_the_callers_thread(
    pipelined, run_async
):
    threads = []

    @pipeline_def(batch_size=2, num_threads=1, exec_pipelined=pipelined, exec_async=run_async)
    def pipe():
        def sample(info):
            threads.append(threading.current_thread())
            return np.array([info.idx_in_epoch], np.int32)

        return fn.external_source(source=sample, batch=False)

    p = pipe()
    before = threading.active_count()
    for _ in range(3):
        p.run()
    assert threading.active_count() == before  # no reader or compute thread was started
    assert threads == [threading.main_thread()] * 6
    p.close()


def test_the_default_runs_ahead_in_background_threads():
    threads = []

    @pipeline_def(batch_size=2, num_threads=1)
    def pipe():
        def sample(info):
            threads.append(threading.current_thread().name)
            return np.array([info.idx_in_epoch], np.int32)

        return fn.external_source(source=sample, batch=False)

    p = pipe()
    p.run()
    p.close()
    assert "chute-reader" in set(threads)


needs_affinity = pytest.mark.skipif(
    not hasattr(os, "sched_setaffinity"), reason="thread affinity is Linux's"
)


@needs_affinity
def test_set_affinity_pins_each_worker_thread_to_one_cpu_round_robin():
    allowed = sorted(os.sched_getaffinity(0))
    pool = WorkerPool(3, affinity=True)
    seen: dict[str, set[int]] = {}
    lock = threading.Lock()

    def work(i):
        with lock:
            seen[threading.current_thread().name] = os.sched_getaffinity(0)

    pool.run(work, 30)
    pool.close()
    expected = {allowed[k % len(allowed)] for k in range(3)}
    assert all(len(cpus) == 1 for cpus in seen.values())
    assert set().union(*seen.values()) <= expected
    assert sorted(os.sched_getaffinity(0)) == allowed  # the caller is never pinned


@needs_affinity
def test_set_affinity_reads_dali_affinity_mask(monkeypatch):
    last = sorted(os.sched_getaffinity(0))[-1]
    monkeypatch.setenv("DALI_AFFINITY_MASK", str(last))
    pool = WorkerPool(1, affinity=True)  # even one thread is a pinned worker
    seen = []
    pool.run(lambda i: seen.append(os.sched_getaffinity(0)), 1)
    pool.close()
    assert seen == [{last}]


@needs_affinity
def test_pipeline_set_affinity_reaches_the_workers():
    pipe = Pipeline(batch_size=2, num_threads=2, set_affinity=True)
    with pipe:
        pipe.set_outputs(_counter())
    pipe.run()
    assert pipe._executor.pool.cpus == sorted(os.sched_getaffinity(0))
    pipe.close()
    plain = Pipeline(batch_size=2, num_threads=2)
    with plain:
        plain.set_outputs(_counter())
    plain.build()
    assert plain._executor.pool.cpus == []
    plain.close()


@pytest.mark.parametrize("enabled", [False, True])
def test_memory_keys_of_executor_statistics_only_with_enable_memory_stats(enabled):
    pipe = Pipeline(batch_size=2, num_threads=1, enable_memory_stats=enabled, exec_async=False)
    with pipe:
        pipe.set_outputs(_counter())
    pipe.run()
    stats = pipe.executor_statistics()["external_source"]
    memory = {
        "real_memory_size",
        "max_real_memory_size",
        "reserved_memory_size",
        "max_reserved_memory_size",
    }
    assert (memory <= set(stats)) is enabled
    assert not enabled or stats["real_memory_size"] == [2 * 4]  # two int32 samples of 1
    assert stats["calls"] == 1


def test_output_dtype_and_ndim_are_checked_at_build_naming_the_output():
    def make(**kwargs):
        pipe = Pipeline(batch_size=2, num_threads=1, **kwargs)
        with pipe:
            x = fn.external_source(
                source=lambda info: np.zeros((2, 2), np.uint8),
                batch=False,
                dtype=types.UINT8,
                ndim=2,
            )
            pipe.set_outputs(x, fn.cast(x, dtype=types.FLOAT))
        return pipe

    make(output_dtype=[types.UINT8, types.FLOAT], output_ndim=2).build()
    make(output_dtype=[None, types.FLOAT]).build()
    with pytest.raises(TypeError, match=r"output 1 \('cast\[0\]'\) has dtype float32 at build"):
        make(output_dtype=types.UINT8).build()
    with pytest.raises(ValueError, match=r"output 0 \('external_source\[0\]'\) has 2 dim"):
        make(output_ndim=[3, None]).build()
    with pytest.raises(ValueError, match="lists 3 values for 2 outputs"):
        make(output_ndim=[2, 2, 2]).build()


def test_output_dtype_unknown_at_build_is_checked_after_run():
    pipe = Pipeline(batch_size=2, num_threads=1, output_dtype=types.INT16, exec_async=False)
    with pipe:
        pipe.set_outputs(fn.external_source(source=lambda info: np.zeros(3, np.int64), batch=False))
    pipe.build()  # the source's type is known only when it runs
    with pytest.raises(
        TypeError, match=r"output 0 \('external_source\[0\]'\) has dtype int64 after"
    ):
        pipe.run()


class FakeStream:
    def __init__(self, non_blocking=False, priority=None):
        self.non_blocking, self.priority = non_blocking, priority


class FakeCuda:
    Stream = FakeStream

    class Device:
        def __init__(self, device_id):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False


class FakeCupy:
    cuda = FakeCuda


def test_streams_are_created_with_the_priority_and_pooled_by_it(monkeypatch):
    import chute.executor.gpu as gpu

    monkeypatch.setattr(gpu, "cupy_module", lambda: FakeCupy)
    monkeypatch.setattr(gpu, "require_gpu", lambda *a, **k: FakeCupy)
    monkeypatch.setattr(gpu, "_free_streams", {})
    ctx = gpu.GPUContext(0, priority=-2)
    lane1 = ctx.lane_stream(1)
    assert (ctx.stream.priority, lane1.priority, lane1.non_blocking) == (-2, -2, True)
    ctx.close()
    default = gpu.GPUContext(0)
    assert default.stream.priority is None  # CuPy's default priority
    assert default.stream not in (ctx.stream, lane1)  # another priority's pool
    again = gpu.GPUContext(0, priority=-2)
    assert again.stream in (ctx.stream, lane1)  # reused from the pool of -2


@pytest.mark.gpu
def test_pipeline_streams_have_default_cuda_stream_priority():
    # -1: a higher priority than the default 0 on every CUDA GPU (the range is [-5, 0]
    # on Hopper; CuPy 14 has no call that reports the range)
    high = -1
    pipe = Pipeline(batch_size=2, num_threads=1, device_id=0, default_cuda_stream_priority=high)
    with pipe:
        pipe.set_outputs(_counter().gpu())
    (out,) = pipe.run()
    assert out.as_cpu().as_array().tolist() == [[0], [1]]
    assert pipe._executor.gpu.stream.priority == high
    pipe.close()
