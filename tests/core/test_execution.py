"""Executor behaviour: argument inputs, determinism, epochs of external sources, errors, closing."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from chute import OperatorError, fn, pipeline_def


def test_argument_inputs_are_per_sample():
    @pipeline_def(batch_size=6, num_threads=2, seed=11)
    def pipe():
        lo = fn.random.uniform(range=(0.0, 1.0))
        draws = fn.random.uniform(range=fn.stack(lo, lo + 0.001), shape=(3,))
        coin = fn.random.coin_flip(probability=lo)
        return lo, draws, coin

    lo, draws, coin = pipe().run()
    for i in range(6):
        assert np.all(draws.at(i) >= lo.at(i)) and np.all(draws.at(i) < lo.at(i) + 0.001)
    assert coin.dtype == np.int32 and draws.at(0).shape == (3,)


def _random_pipe(**kw):
    @pipeline_def(**{"batch_size": 8, "seed": 99, **kw})
    def pipe():
        x = fn.external_source(source=lambda info: np.float32(info.idx_in_epoch), batch=False)
        a = fn.random.uniform(range=(-1, 1), shape=(2,))
        b = fn.random.normal(mean=x, stddev=0.1)
        c = fn.random.coin_flip(probability=0.3)
        d = fn.random.choice([3, 5, 7], p=[0.2, 0.3, 0.5])
        e = fn.python_function(a, function=lambda v: v * 2)
        return a, b, c, d, e

    return pipe()


def _collect(p, n=4):
    out = [[t.as_array().copy() for t in p.run()] for _ in range(n)]
    p.close()
    return out


@pytest.mark.parametrize(
    "config",
    [
        {"num_threads": 4, "exec_pipelined": True},
        {"num_threads": 1, "exec_pipelined": False},
        {"num_threads": 3, "exec_pipelined": True, "prefetch_queue_depth": 1},
    ],
)
def test_results_do_not_depend_on_threads_or_pipelining(config):
    reference = _collect(_random_pipe(num_threads=1, exec_pipelined=True))
    other = _collect(_random_pipe(**config))
    for ref_batch, batch in zip(reference, other):
        for r, o in zip(ref_batch, batch):
            np.testing.assert_array_equal(r, o)


def test_seed_changes_draws_and_iterations_differ():
    a = _collect(_random_pipe(num_threads=2), 2)
    b = _random_pipe(num_threads=2, seed=100)
    b = _collect(b, 2)
    assert not np.array_equal(a[0][0], b[0][0])
    assert not np.array_equal(a[0][0], a[1][0])


def test_choice_distribution_and_values():
    @pipeline_def(batch_size=256, num_threads=2, seed=1)
    def pipe():
        return fn.random.choice([3, 5, 7], p=[0.1, 0.1, 0.8]), fn.random.choice(4)

    d, r = pipe().run()
    vals = d.as_array()
    assert set(vals.tolist()) <= {3, 5, 7} and (vals == 7).mean() > 0.65
    assert set(r.as_array().tolist()) <= {0, 1, 2, 3}


def test_external_source_iterable_epochs_and_reset():
    data = [[np.array([i, j], np.int32) for j in range(2)] for i in range(3)]

    @pipeline_def(batch_size=2, num_threads=1, seed=0)
    def pipe():
        return fn.external_source(source=data)

    p = pipe()
    for epoch in range(2):
        got = [p.run()[0].at(0)[0] for _ in range(3)]
        assert got == [0, 1, 2]
        with pytest.raises(StopIteration):
            p.run()
        with pytest.raises(StopIteration):  # stays ended until reset
            p.run()
        p.reset()
    p.close()


def test_external_source_generator_function_and_cycle_quiet():
    def gen():
        for i in range(2):
            yield [np.int32(i)]

    @pipeline_def(batch_size=1, num_threads=1, seed=0)
    def pipe():
        return fn.external_source(source=gen, cycle="quiet"), fn.external_source(source=gen)

    p = pipe()
    assert [int(p.run()[0].at(0)) for _ in range(2)] == [0, 1]
    with pytest.raises(StopIteration):  # the second source ends the epoch
        p.run()
    p.reset()
    assert int(p.run()[1].at(0)) == 0


def test_per_sample_source_stopiteration_ends_epoch_with_partial_batch():
    def sample(info):
        if info.idx_in_epoch >= 5:
            raise StopIteration
        return np.array([info.idx_in_epoch, info.epoch_idx, info.iteration, info.idx_in_batch])

    @pipeline_def(batch_size=3, num_threads=2, seed=0)
    def pipe():
        return fn.external_source(source=sample, batch=False)

    p = pipe()
    first, second = p.run()[0], p.run()[0]
    assert len(first) == 3 and len(second) == 2
    np.testing.assert_array_equal(second.at(1), [4, 0, 1, 1])
    with pytest.raises(StopIteration):
        p.run()
    p.reset()
    np.testing.assert_array_equal(p.run()[0].at(0), [0, 1, 0, 0])


def test_batch_callable_gets_iteration_or_batch_info():
    seen = []

    @pipeline_def(batch_size=2, num_threads=1, seed=0, exec_pipelined=False)
    def pipe():
        a = fn.external_source(source=lambda it: seen.append(it) or [np.int32(it)] * 2)
        b = fn.external_source(source=lambda info: [np.int32(info.iteration)] * 2, batch_info=True)
        return a, b

    p = pipe()
    p.run()
    a, b = p.run()
    assert seen == [0, 1] and int(b.at(0)) == 1


def test_python_function_batch_and_multiple_outputs():
    @pipeline_def(batch_size=3, num_threads=2, seed=0)
    def pipe():
        x = fn.external_source(source=lambda info: np.float32(info.idx_in_batch), batch=False)
        total = fn.python_function(
            x, function=lambda xs: [np.float32(sum(xs))] * len(xs), batch_processing=True
        )
        lo, hi = fn.python_function(x, function=lambda v: (v - 1, v + 1), num_outputs=2)
        return total, lo, hi

    total, lo, hi = pipe().run()
    assert total.as_array().tolist() == [3.0, 3.0, 3.0]
    assert lo.as_array().tolist() == [-1, 0, 1] and hi.as_array().tolist() == [1, 2, 3]


def test_tensor_ops():
    @pipeline_def(batch_size=2, num_threads=2, seed=0)
    def pipe():
        x = fn.external_source(
            source=lambda: [np.arange(6, dtype=np.float32).reshape(2, 3)] * 2, layout="HW"
        )
        return (
            fn.cast(x * 100, dtype=np.uint8),
            fn.reshape(x, shape=[3, -1]),
            fn.stack(x, x, axis=0),
            fn.cat(x, x, axis_name="W"),
            fn.copy(x),
            fn.transpose(x, perm=[1, 0]),
        )

    cast, reshaped, stacked, cat, copy, tr = pipe().run()
    assert cast.dtype == np.uint8 and cast.at(0)[1, 2] == 255  # saturates
    assert reshaped.at(0).shape == (3, 2)
    assert stacked.at(0).shape == (2, 2, 3)
    assert cat.at(0).shape == (2, 6)
    assert tr.layout() == "WH"
    np.testing.assert_array_equal(copy.at(1), np.arange(6).reshape(2, 3))


def test_unknown_argument_lists_the_valid_ones():
    @pipeline_def(batch_size=1, num_threads=1, seed=0)
    def pipe():
        return fn.random.uniform(rnge=(0, 1))

    with pytest.raises(
        TypeError,
        match=r"fn.random.uniform got unexpected argument\(s\) 'rnge'.*valid arguments:.*range",
    ):
        pipe()


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: fn.random.uniform(range=(1.0, 0.0)), "lo <= hi"),
        (lambda: fn.random.uniform(range="ab"), "argument 'range'"),
        (lambda: fn.random.uniform(range=(0, float("nan"))), "must be finite"),
        (lambda: fn.random.coin_flip(probability=1.5), "probability"),
        (lambda: fn.random.choice([1, 2], p=[0.5]), "argument 'p'"),
        (lambda: fn.cast(fn.random.uniform(), dtype="nope"), "argument 'dtype'"),
        (lambda: fn.external_source(source=5), "argument 'source'"),
        (lambda: fn.external_source(cycle="sometimes"), "argument 'cycle'"),
        (lambda: fn.python_function(function=3), "callable"),
        (lambda: fn.transpose(fn.random.uniform(), perm=[0, 0]), "permutation"),
        (lambda: fn.cast("three", dtype=np.float32), "input 0 must be a DataNode"),
        (lambda: fn.cast(dtype=np.float32), "takes 1 input"),
    ],
)
def test_argument_errors_name_operator_and_argument(call, message):
    @pipeline_def(batch_size=1, num_threads=1, seed=0)
    def pipe():
        return call()

    with pytest.raises((TypeError, ValueError), match=message):
        pipe().build()


def test_external_source_type_checks():
    @pipeline_def(batch_size=2, num_threads=1, seed=0)
    def wrong_dtype():
        return fn.external_source(source=lambda: [np.zeros(2, np.float64)] * 2, dtype=np.float32)

    with pytest.raises(OperatorError, match="sample 0 has dtype float64, expected float32"):
        wrong_dtype().run()

    @pipeline_def(batch_size=2, num_threads=1, seed=0)
    def wrong_ndim():
        return fn.external_source(source=lambda: [np.zeros((2, 2))] * 2, ndim=1)

    with pytest.raises(OperatorError, match="2 dimensions.*expected 1"):
        wrong_ndim().run()

    @pipeline_def(batch_size=2, num_threads=1, seed=0)
    def too_big():
        return fn.external_source(source=lambda: [np.zeros(1)] * 3)

    with pytest.raises(OperatorError, match="more than batch_size=2"):
        too_big().run()


def test_worker_exception_names_operator_and_sample_and_closes_cleanly():
    def boom(x):
        if int(x) == 5:
            raise ValueError("bad value 5")
        return x

    @pipeline_def(batch_size=4, num_threads=3, seed=0)
    def pipe():
        x = fn.external_source(source=lambda info: np.int32(info.idx_in_epoch), batch=False)
        return fn.python_function(x, function=boom)

    before = threading.active_count()
    p = pipe()
    p.run()
    with pytest.raises(OperatorError) as info:
        p.run()
    assert "fn.python_function" in str(info.value) and "sample 1 of iteration 1" in str(info.value)
    assert "bad value 5" in str(info.value) and isinstance(info.value.__cause__, ValueError)
    with pytest.raises(RuntimeError, match="stopped after an error"):
        p.run()
    p.close()
    assert threading.active_count() <= before


def test_close_stops_threads_while_waiting_for_feed_input():
    @pipeline_def(batch_size=1, num_threads=2, seed=0)
    def pipe():
        return fn.external_source(name="feed")

    before = threading.active_count()
    p = pipe()
    p.feed_input("feed", [np.zeros(1)])
    p.run()  # the reader thread now waits for the next feed
    p.close()
    assert threading.active_count() <= before
    with pytest.raises(RuntimeError, match="closed"):
        p.run()


def test_pipeline_garbage_collected_stops_threads():
    import gc

    before = threading.active_count()
    p = _random_pipe(num_threads=3)
    p.run()
    del p
    gc.collect()
    assert threading.active_count() <= before


def test_with_block_on_built_pipeline_closes_it():
    before = threading.active_count()
    p = _random_pipe(num_threads=3)
    p.build()
    with p:
        p.run()
    assert threading.active_count() <= before
    with pytest.raises(RuntimeError, match="closed"):
        p.run()


def test_keyboard_interrupt_in_source_surfaces_and_closes():
    def source():
        raise KeyboardInterrupt

    @pipeline_def(batch_size=2, num_threads=2, seed=0)
    def pipe():
        return fn.external_source(source=source)

    before = threading.active_count()
    p = pipe()
    with pytest.raises(KeyboardInterrupt):
        p.run()
    p.close()
    assert threading.active_count() <= before
