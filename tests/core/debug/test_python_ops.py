"""fn.python_function on threads / processes / GPU, and external_source(parallel=True)."""

from __future__ import annotations

import os

import numpy as np
import pyops_helpers as helpers
import pytest

from chute import OperatorError, fn, pipeline_def

RNG = np.random.default_rng(3)
IMAGES = [RNG.integers(0, 255, (5 + i, 4, 3), dtype=np.uint8) for i in range(6)]


def shm_segments() -> set[str]:
    """chute's shared-memory segments (named chute_<pid>_...); multiprocessing's own
    semaphores (sem.mp-*) are the resource tracker's to remove, at its own pace."""
    if not os.path.isdir("/dev/shm"):
        return set()
    return {name for name in os.listdir("/dev/shm") if name.startswith("chute")}


def run_python_function(parallel, method="fork", batch_processing=False, function=None):
    function = function or helpers.slow_python_sum

    @pipeline_def(batch_size=6, num_threads=2, seed=1, py_num_workers=2, py_start_method=method)
    def pipe():
        x = fn.external_source(source=lambda: IMAGES, layout="HWC", cycle="quiet")
        if batch_processing:
            return fn.python_function(
                x,
                function=lambda xs: [helpers.slow_python_sum(a) for a in xs],
                batch_processing=True,
                parallel=parallel,
            )
        return fn.python_function(x, function=function, parallel=parallel)

    p = pipe()
    p.build()
    try:
        return [[np.array(s) for s in p.run()[0]] for _ in range(2)]
    finally:
        p.close()


def expected():
    return [helpers.slow_python_sum(a) for a in IMAGES]


@pytest.mark.parametrize("parallel", [False, True])
def test_python_function_threads_and_processes_agree(parallel):
    before = shm_segments()
    for batch in run_python_function(parallel):
        np.testing.assert_array_equal(np.stack(batch), np.stack(expected()))
    assert shm_segments() - before == set(), "shared memory segments leaked"


def test_python_function_in_processes_with_a_lambda_and_batch_processing():
    # fork inherits the callable: lambdas need not be picklable
    out = run_python_function(True, function=lambda a: helpers.slow_python_sum(a) + 1)
    np.testing.assert_array_equal(np.stack(out[0]), np.stack(expected()) + 1)
    out = run_python_function(True, batch_processing=True)
    np.testing.assert_array_equal(np.stack(out[1]), np.stack(expected()))


def test_python_function_in_spawned_processes():
    out = run_python_function(True, method="spawn")
    np.testing.assert_array_equal(np.stack(out[0]), np.stack(expected()))


def test_python_function_runs_in_other_processes_with_several_outputs():
    @pipeline_def(batch_size=4, num_threads=1, seed=1, py_num_workers=2)
    def pipe():
        x = fn.external_source(source=lambda: IMAGES[:4])
        return fn.python_function(
            x, function=lambda a: (np.array(os.getpid()), a[:1]), num_outputs=2, parallel=True
        )

    p = pipe()
    pids, firsts = p.run()
    p.close()
    assert os.getpid() not in {int(x) for x in pids}
    for i in range(4):
        np.testing.assert_array_equal(firsts.at(i), IMAGES[i][:1])


def test_python_function_worker_error_names_the_sample():
    def bad(a):
        if a.shape[0] == 8:  # IMAGES[3]
            raise ValueError("bad pixels")
        return a

    @pipeline_def(batch_size=6, num_threads=1, seed=1, py_num_workers=2)
    def pipe():
        return fn.python_function(
            fn.external_source(source=lambda: IMAGES), function=bad, parallel=True
        )

    p = pipe()
    with pytest.raises(OperatorError, match=r"sample 3.*bad pixels"):
        p.run()
    p.close()


def parallel_source_epochs(parallel, method="fork", epochs=2):
    @pipeline_def(
        batch_size=4,
        num_threads=1,
        seed=1,
        py_num_workers=3,
        py_start_method=method,
        exec_pipelined=False,
    )
    def pipe():
        return fn.external_source(source=helpers.sample_source, batch=False, parallel=parallel)

    p = pipe()
    out = []
    for _ in range(epochs):
        epoch = []
        while True:
            try:
                (b,) = p.run()
            except StopIteration:
                break
            epoch.append([int(s[0, 0]) for s in b])
        out.append(epoch)
        p.reset()
    p.close()
    return out


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_parallel_external_source_matches_serial_over_epochs(method):
    before = shm_segments()
    serial = parallel_source_epochs(False)
    assert serial[0] == [[0, 100, 200, 300], [400, 500, 600, 700], [800, 900]]
    assert serial[1][0] == [1, 101, 201, 301]
    assert parallel_source_epochs(True, method) == serial
    assert shm_segments() - before == set()


def test_parallel_external_source_error_names_the_sample():
    @pipeline_def(batch_size=4, num_threads=1, seed=1, py_num_workers=2, exec_pipelined=False)
    def pipe():
        return fn.external_source(source=helpers.failing_source, batch=False, parallel=True)

    p = pipe()
    p.run()
    with pytest.raises(OperatorError, match=r"sample 5.*KeyError.*no such sample"):
        p.run()
    p.close()


def test_parallel_external_source_batch_callable_and_outputs():
    @pipeline_def(batch_size=3, num_threads=1, seed=1, py_num_workers=2, exec_pipelined=False)
    def pipe():
        def batch(i):
            if i == 2:
                raise StopIteration
            return [np.full(2, i * 10 + k) for k in range(3)], [np.array(k) for k in range(3)]

        return fn.external_source(source=batch, num_outputs=2, parallel=True)

    p = pipe()
    a, b = p.run()
    c, _ = p.run()
    assert a.as_array()[:, 0].tolist() == [0, 1, 2] and b.as_array().tolist() == [0, 1, 2]
    assert c.as_array()[:, 0].tolist() == [10, 11, 12]
    with pytest.raises(StopIteration):
        p.run()
    p.close()


def test_parallel_external_source_refuses_iterables():
    @pipeline_def(batch_size=3, num_threads=1, py_num_workers=2)
    def pipe():
        return fn.external_source(source=[[np.zeros(1)] * 3], parallel=True)

    with pytest.raises(TypeError, match="parallel=True needs a callable"):
        pipe().build()


def test_debug_mode_runs_parallel_python_function():
    def body():
        x = fn.external_source(source=lambda: IMAGES, cycle="quiet")
        return fn.python_function(x, function=helpers.slow_python_sum, parallel=True)

    outs = []
    for debug in (False, True):
        p = pipeline_def(batch_size=6, num_threads=2, seed=1, py_num_workers=2, debug=debug)(body)()
        outs.append(np.stack(list(p.run()[0])))
        p.close()
    np.testing.assert_array_equal(outs[0], outs[1])


@pytest.mark.gpu
def test_python_function_on_the_gpu_gets_cupy_arrays():
    cp = pytest.importorskip("cupy")

    @pipeline_def(batch_size=6, num_threads=1, seed=1, device_id=0)
    def pipe():
        x = fn.external_source(source=lambda: IMAGES, layout="HWC").gpu()
        y = fn.python_function(x, function=lambda a: cp.flip(a, axis=0) * 2, device="gpu")
        z = fn.python_function(
            x,
            function=lambda xs: [a.sum(dtype=cp.int64) for a in xs],
            batch_processing=True,
            device="gpu",
        )
        return y, z

    p = pipe()
    y, z = p.run()
    for i in range(6):
        assert isinstance(y.at(i), cp.ndarray)
        np.testing.assert_array_equal(cp.asnumpy(y.at(i)), np.flip(IMAGES[i], 0) * 2)
        assert int(z.at(i)) == int(IMAGES[i].sum())
    p.close()
