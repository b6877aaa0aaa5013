"""chute.conditionals: if_else / switch split a batch by a per-sample predicate, run each
branch on its samples only and merge them back in batch order (graph-level API)."""

from __future__ import annotations

import numpy as np
import pytest
from conditional_inputs import per_sample as _per_sample
from conditional_inputs import run as _run
from conditional_inputs import samples as _samples

from chute import conditionals, fn, pipeline_def, types


def test_if_else_takes_each_samples_branch_in_batch_order():
    @pipeline_def
    def pipe():
        x = _per_sample([3, 8, 1, 10, 5])
        y = conditionals.if_else(x > 4, lambda: x * 10, lambda: x - 100)
        return y

    (y,) = _run(pipe, 5)
    assert _samples(y) == [-97, 80, -99, 100, 50]


def test_branch_operators_see_only_their_samples():
    seen = {"if": [], "else": []}

    def record(tag):
        def fn_(sample):
            seen[tag].append(int(sample))
            return sample

        return fn_

    @pipeline_def
    def pipe():
        x = _per_sample([0, 1, 2, 3, 4, 5])
        return conditionals.if_else(
            x % 3 == 0,
            lambda: fn.python_function(x, function=record("if")),
            lambda: fn.python_function(x, function=record("else")),
        )

    (y,) = _run(pipe, 6, exec_pipelined=False)  # one batch computed, none ahead
    assert _samples(y) == [0, 1, 2, 3, 4, 5]
    assert sorted(seen["if"]) == [0, 3]
    assert sorted(seen["else"]) == [1, 2, 4, 5]


@pytest.mark.parametrize("value", [True, False])
def test_every_sample_in_one_branch_leaves_the_other_empty(value):
    @pipeline_def
    def pipe():
        x = _per_sample([1, 2, 3, 4])
        flag = _per_sample([value] * 4, np.bool_)
        image = fn.external_source(
            source=lambda info: np.full((4, 6, 3), info.idx_in_batch, np.uint8),
            batch=False,
            layout="HWC",
        )

        def heavy():  # per-sample, batch-wise, random and argument-input operators
            small = fn.resize(image, size=(2, 3))
            noisy = fn.random.uniform(range=(0, 1), shape=(2,))
            return small, x * 2 + fn.cast(noisy[0] * 0, dtype=types.INT32)

        def light():
            return fn.crop(image, crop=(2, 3), crop_pos_x=0, crop_pos_y=0), x

        return conditionals.if_else(flag, heavy, light)

    images, y = _run(pipe, 4)
    assert _samples(y) == ([2, 4, 6, 8] if value else [1, 2, 3, 4])
    for i in range(4):
        assert images.at(i).shape == (2, 3, 3)
        assert (np.asarray(images.at(i)) == i).all()


def test_switch_sends_every_sample_down_a_different_path():
    @pipeline_def
    def pipe():
        which = _per_sample([2, 0, 3, 1])
        x = _per_sample([5, 6, 7, 8])
        return conditionals.switch(
            which, [lambda: x + 100, lambda: x * 2, lambda: x - 1, lambda: x * 0]
        )

    (y,) = _run(pipe, 4)
    assert _samples(y) == [4, 106, 0, 16]


def test_switch_index_out_of_range_takes_the_nearest_branch():
    @pipeline_def
    def pipe():
        which = _per_sample([-3, 9, 1])
        x = _per_sample([1, 1, 1])
        return conditionals.switch(which, [lambda: x + 10, lambda: x + 20, lambda: x + 30])

    (y,) = _run(pipe, 3)
    assert _samples(y) == [11, 31, 21]


def test_switch_float_index_takes_its_floor_and_nan_the_last_branch():
    # as the comparisons `index < k` would choose: -0.5 and 0.9 -> 0, 1.5 -> 1, NaN -> last
    @pipeline_def
    def pipe():
        which = _per_sample([-0.5, 0.9, 1.5, 2.0, float("nan"), 7.25], np.float32)
        x = _per_sample([1, 1, 1, 1, 1, 1])
        return conditionals.switch(which, [lambda: x + 10, lambda: x + 20, lambda: x + 30])

    (y,) = _run(pipe, 6)
    assert _samples(y) == [11, 11, 21, 31, 31, 31]


def test_switch_splits_once_and_runs_each_case_on_its_samples_only():
    seen: dict[int, list[int]] = {0: [], 1: [], 2: [], 3: []}

    def record(case):
        def fn_(sample):
            seen[case].append(int(sample))
            return sample

        return fn_

    @pipeline_def
    def pipe():
        which = _per_sample([3, 0, 3, 1, 0])
        x = _per_sample([10, 11, 12, 13, 14])
        branches = [
            (lambda k: lambda: (fn.python_function(x, function=record(k)), x * k))(k)
            for k in range(4)
        ]
        return conditionals.switch(which, branches)

    p = pipe(batch_size=5, num_threads=1, device_id=None, exec_pipelined=False)
    p.build()
    y, z = p.run()
    assert _samples(y) == [10, 11, 12, 13, 14]
    assert _samples(z) == [30, 0, 36, 13, 0]
    assert seen == {0: [11, 14], 1: [13], 2: [], 3: [10, 12]}  # case 2: no sample, no call
    names = [node.schema.name for node in p._graph.nodes]
    assert names.count("_conditional.merge") == 2  # one per value of the result
    assert names.count("math") == 4  # x * k in each case: no comparisons of the index


def test_nested_if_else():
    @pipeline_def
    def pipe():
        x = _per_sample([1, 6, 12, 3, 20, 7])

        def big():
            return conditionals.if_else(x > 10, lambda: x * 100, lambda: x * 10)

        return conditionals.if_else(x > 5, big, lambda: -x)

    (y,) = _run(pipe, 6)
    assert _samples(y) == [-1, 60, 1200, -3, 2000, 70]


def test_branches_may_give_different_shapes():
    @pipeline_def
    def pipe():
        x = _per_sample([1, 0, 1])
        image = fn.external_source(
            source=lambda info: np.zeros((4, 4), np.float32), batch=False, layout="HW"
        )
        return conditionals.if_else(
            x == 1,
            lambda: fn.crop(image, crop=(2, 2), crop_pos_x=0, crop_pos_y=0),
            lambda: image + 1,
        )

    (y,) = _run(pipe, 3)
    assert [y.at(i).shape for i in range(3)] == [(2, 2), (4, 4), (2, 2)]
    assert float(np.asarray(y.at(1)).sum()) == 16.0


@pytest.mark.parametrize("declared", [True, False])
def test_branches_of_different_types_are_an_error_naming_the_value(declared):
    """At build where the dtypes are known then, else when the batch merges."""

    @pipeline_def
    def pipe():
        x = _per_sample([1, 0], declared=declared)
        return conditionals.if_else(x == 1, lambda: x, lambda: fn.cast(x, dtype=types.FLOAT))

    error = TypeError if declared else RuntimeError
    with pytest.raises(error, match="'result' is int32 in the if branch and float32"):
        _run(pipe, 2)


def test_non_scalar_condition_is_an_error():
    @pipeline_def
    def pipe():
        x = fn.external_source(source=lambda info: np.ones(2, np.int32), batch=False)
        return conditionals.if_else(x > 0, lambda: x, lambda: x * 2)

    with pytest.raises(ValueError, match="scalar per sample"):
        _run(pipe, 2)


def _branch_draws(mask, batch_size):
    """Per sample: a uniform draw and a gaussian-noised zero image, taken only where
    ``mask`` holds; -1 elsewhere."""

    @pipeline_def
    def pipe():
        flag = _per_sample(mask, np.bool_)
        zero = fn.external_source(source=lambda info: np.zeros((3,), np.float32), batch=False)

        def draw():
            return fn.random.uniform(range=(0, 1)), fn.noise.gaussian(zero, stddev=1.0)

        def skip():
            return fn.cast(fn.cast(flag, dtype=types.INT32) - 1, dtype=types.FLOAT), zero - 1

        return conditionals.if_else(flag, draw, skip)

    u, noise = _run(pipe, batch_size)
    return _samples(u), _samples(noise)


def test_random_draws_in_a_branch_follow_the_sample_not_the_split():
    every = _branch_draws([True] * 8, 8)
    half = _branch_draws([True, False, False, True, True, False, True, False], 8)
    for i, took in enumerate([True, False, False, True, True, False, True, False]):
        if took:
            assert half[0][i] == every[0][i] and half[1][i] == every[1][i]
        else:
            assert half[0][i] == -1.0 and half[1][i] == [-1.0, -1.0, -1.0]
    # the draws differ between samples (the streams are per sample)
    assert len(set(every[0])) == 8


def test_same_seed_same_branch_draws_for_batch_sizes_4_and_8():
    mask = [True, False, True, True, False, True, False, True]
    four = _branch_draws(mask[:4], 4)
    eight = _branch_draws(mask, 8)
    assert four[0] == eight[0][:4]
    assert four[1] == eight[1][:4]
