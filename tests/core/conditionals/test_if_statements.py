"""enable_conditionals=True: Python `if`/`elif`/`else`, conditional expressions and
`and`/`or`/`not` on per-sample DataNodes, with DALI's rules, against hand-written outputs."""

from __future__ import annotations

import numpy as np
import pytest
from conditional_inputs import per_sample, run, samples

from chute import fn, pipeline_def, types
from chute.pipeline import do_not_convert


def test_if_elif_elif_else_every_sample_its_own_path():
    @pipeline_def(enable_conditionals=True)
    def pipe():
        x = per_sample([1, 5, 12, 30])
        if x < 3:
            y = x + 1000
        elif x < 10:
            y = x + 100
        elif x < 20:
            y = x * 2
        else:
            y = -x
        return y

    (y,) = run(pipe, 4)
    assert samples(y) == [1001, 105, 24, -30]


def test_if_without_else_keeps_the_value_from_before():
    @pipeline_def(enable_conditionals=True)
    def pipe():
        x = per_sample([1, 2, 3, 4])
        y = x * 10
        if x % 2 == 0:
            y = y + 1
        return y

    (y,) = run(pipe, 4)
    assert samples(y) == [10, 21, 30, 41]


def test_predicates_from_coin_flip_and_bitwise_operators():
    @pipeline_def(enable_conditionals=True)
    def pipe():
        x = per_sample([0, 1, 2, 3, 4, 5])
        coin = fn.random.coin_flip(probability=0.5, dtype=types.BOOL)
        if coin:
            flipped = x + 100
        else:
            flipped = x
        if (x > 1) & (x < 4) | (x == 5):
            band = x * 0 + 1
        else:
            band = x * 0
        if ~(x > 2):
            low = x * 0 + 1
        else:
            low = x * 0
        return coin, flipped, band, low

    coin, flipped, band, low = run(pipe, 6)
    assert samples(flipped) == [i + 100 if c else i for i, c in enumerate(samples(coin))]
    assert 0 < sum(samples(coin)) < 6  # both branches were taken
    assert samples(band) == [0, 0, 1, 1, 0, 1]
    assert samples(low) == [1, 1, 1, 0, 0, 0]


def test_a_numeric_predicate_is_true_where_nonzero():
    @pipeline_def(enable_conditionals=True)
    def pipe():
        x = per_sample([0, 7, -2, 0])
        if x:
            y = x * 2
        else:
            y = x + 50
        return y

    (y,) = run(pipe, 4)
    assert samples(y) == [50, 14, -4, 50]


def test_and_or_not_are_per_sample_and_short_circuit():
    calls = []

    def watched(sample):
        calls.append(int(sample))
        return sample > 2

    @pipeline_def(enable_conditionals=True)
    def pipe():
        x = per_sample([1, 2, 3, 4])
        both = (x > 1) and fn.python_function(x, function=watched)
        either = (x < 2) or (x > 3)
        neither = not either
        chained = 1 < x <= 3
        return both, either, neither, chained

    both, either, neither, chained = run(pipe, 4, exec_pipelined=False)
    assert samples(both) == [False, False, True, True]
    assert sorted(calls) == [2, 3, 4]  # `and` evaluated its right side where x > 1 only
    assert samples(either) == [True, False, False, True]
    assert samples(neither) == [False, True, True, False]
    assert samples(chained) == [False, True, True, False]


def test_conditional_expression():
    @pipeline_def(enable_conditionals=True)
    def pipe():
        x = per_sample([3, -4, 5, -6])
        return x if x > 0 else -x * 10

    (y,) = run(pipe, 4)
    assert samples(y) == [3, 40, 5, 60]


def test_nested_ifs():
    @pipeline_def(enable_conditionals=True)
    def pipe():
        x = per_sample([1, 6, 12, 3, 20, 7])
        if x > 5:
            if x > 10:
                y = x * 100
            else:
                y = x * 10
            z = y + 1
        else:
            y = -x
            z = y - 1
        return y, z

    y, z = run(pipe, 6)
    assert samples(y) == [-1, 60, 1200, -3, 2000, 70]
    assert samples(z) == [-2, 61, 1201, -4, 2001, 71]


def test_all_samples_in_one_branch():
    @pipeline_def(enable_conditionals=True)
    def pipe():
        x = per_sample([1, 2, 3])
        if x > 100:  # no sample: this branch is empty
            y = fn.random.uniform(range=(0, 1)) + fn.cast(x, dtype=types.FLOAT)
        else:
            y = fn.cast(x, dtype=types.FLOAT) * 2
        return y

    (y,) = run(pipe, 3)
    assert samples(y) == [2.0, 4.0, 6.0]


def test_variable_assigned_in_one_branch_only_is_an_error_where_used():
    @pipeline_def(enable_conditionals=True)
    def pipe():
        x = per_sample([1, 2])
        if x > 1:
            only_here = x * 2
        return only_here

    with pytest.raises(NameError, match="'only_here' is assigned only in the if branch of the if"):
        run(pipe, 2)


def test_variable_assigned_in_one_branch_and_not_used_is_fine():
    @pipeline_def(enable_conditionals=True)
    def pipe():
        x = per_sample([1, 2])
        if x > 1:
            scratch = x * 2
            y = scratch + 1
        else:
            y = x
        return y

    (y,) = run(pipe, 2)
    assert samples(y) == [1, 5]


def test_variable_of_one_branch_used_by_an_operator_names_it():
    @pipeline_def(enable_conditionals=True)
    def pipe():
        x = per_sample([1, 2])
        if x > 1:
            pass
        else:
            late = x
        return fn.cast(late, dtype=types.FLOAT)

    with pytest.raises(NameError, match=r"'late' is assigned only in the else branch .*line \d+"):
        run(pipe, 2)


def _double_big(v):
    if v > 10:
        out = v * 2
    else:
        out = v
    return out


class _Shift:
    def __init__(self, by):
        self.by = by

    def apply(self, v):
        if v < 0:
            v = v - self.by
        return v


def test_helper_functions_and_methods_called_in_branches_are_converted():
    @pipeline_def(enable_conditionals=True)
    def pipe():
        x = per_sample([-5, 3, 12, 40])
        if x > 0:
            y = _double_big(x)
        else:
            y = _Shift(100).apply(x)
        return y

    (y,) = run(pipe, 4)
    assert samples(y) == [-105, 3, 24, 80]


def test_a_function_defined_inside_the_pipeline_is_converted():
    @pipeline_def(enable_conditionals=True)
    def pipe():
        def sign(v):
            if v >= 0:
                s = v * 0 + 1
            else:
                s = v * 0 - 1
            return s

        return sign(per_sample([4, -2, 0]))

    (y,) = run(pipe, 3)
    assert samples(y) == [1, -1, 1]


@do_not_convert
def _plain_if(v):
    if v > 0:  # a Python `if` on a DataNode: no truth value
        return v
    return -v


@do_not_convert
def _python_only(n):
    if n > 2:
        return "big"
    return "small"


def test_do_not_convert_keeps_a_function_as_written():
    @pipeline_def(enable_conditionals=True)
    def pipe():
        return _plain_if(per_sample([1]))

    with pytest.raises(TypeError, match="no truth value"):
        run(pipe, 1)

    @pipeline_def(enable_conditionals=True)
    def fine():
        assert _python_only(3) == "big"
        return per_sample([1])

    assert samples(run(fine, 1)[0]) == [1]


def test_do_not_convert_on_a_pipeline_definition_is_refused():
    @pipeline_def(enable_conditionals=True)
    def pipe():
        return per_sample([1])

    with pytest.raises(ValueError, match="cannot be marked with @do_not_convert"):
        do_not_convert(pipe)


def test_do_not_convert_is_exported_where_dali_has_it():
    import chute.pipeline

    assert chute.pipeline.do_not_convert is do_not_convert


def test_python_conditions_stay_python():
    @pipeline_def(enable_conditionals=True)
    def pipe(scale):
        x = per_sample([1, 2])
        if scale > 1:
            x = x * scale
        for _ in range(2):
            x = x + 1
        k = 0
        while k < 3:
            k += 1
        if scale == 0:
            return x * 0  # return in a Python-valued branch
        return x + k

    (y,) = run(pipe, 2, scale=10)
    assert samples(y) == [15, 25]
    (y,) = run(pipe, 2, scale=0)
    assert samples(y) == [0, 0]


def test_enable_conditionals_at_call_time():
    @pipeline_def
    def pipe():
        x = per_sample([1, 2])
        if x > 1:
            y = x * 5
        else:
            y = x
        return y

    (y,) = run(pipe, 2, enable_conditionals=True)
    assert samples(y) == [1, 10]
    with pytest.raises(TypeError, match="enable_conditionals=True"):
        run(pipe, 2)


def test_same_python_value_in_both_branches_stays_and_different_ones_fail_on_use():
    @pipeline_def(enable_conditionals=True)
    def pipe(use_factor):
        x = per_sample([1, 2])
        if x > 1:
            label = "same"
            factor = 2
        else:
            label = "same"
            factor = 3
        assert label == "same"
        return x * factor if use_factor else x

    assert samples(run(pipe, 2, use_factor=False)[0]) == [1, 2]
    with pytest.raises(NameError, match="'factor' holds different Python values"):
        run(pipe, 2, use_factor=True)


@pytest.mark.parametrize(
    ("construct", "message"),
    [
        ("while", r"the while at line \d+ of .*: a `while` loop cannot depend on a per-sample"),
        ("return", r"the if at line \d+ of .*an `if` that has `return`"),
        ("for", r"the for at line \d+ of .*cannot iterate over a DataNode"),
    ],
)
def test_unsupported_constructs_on_data_nodes_name_the_line(construct, message):
    @pipeline_def(enable_conditionals=True)
    def pipe():
        x = per_sample([1, 2])
        if construct == "while":
            while x > 1:
                x = x - 1
        elif construct == "return":
            if x > 1:
                return x
        else:
            for v in x:
                x = v
        return x

    with pytest.raises(TypeError, match=message):
        run(pipe, 2)


def test_branches_give_different_shapes_and_the_types_must_agree():
    @pipeline_def(enable_conditionals=True)
    def pipe():
        x = per_sample([1, 0, 1])
        image = fn.external_source(
            source=lambda info: np.arange(16, dtype=np.float32).reshape(4, 4),
            batch=False,
            layout="HW",
            dtype=np.float32,
        )
        if x == 1:
            out = fn.crop(image, crop=(2, 2), crop_pos_x=0, crop_pos_y=0)
        else:
            out = image
        return out

    (out,) = run(pipe, 3)
    assert [out.at(i).shape for i in range(3)] == [(2, 2), (4, 4), (2, 2)]
    assert samples(out)[0] == [[0.0, 1.0], [4.0, 5.0]]

    @pipeline_def(enable_conditionals=True)
    def mixed():
        x = per_sample([1, 0])
        if x == 1:
            out = fn.cast(x, dtype=types.FLOAT)
        else:
            out = x
        return out

    with pytest.raises(TypeError, match="'out' is float32 in the if branch and int32"):
        run(mixed, 2)


def test_assert_on_a_data_node_names_the_line():
    @pipeline_def(enable_conditionals=True)
    def pipe():
        x = per_sample([1, 2])
        assert x > 0
        return x

    with pytest.raises(TypeError, match=r"the assert at line \d+ .*an `assert` cannot depend"):
        run(pipe, 2)


def test_a_branch_value_leaking_out_in_place_is_an_error_where_used():
    @pipeline_def(enable_conditionals=True)
    def pipe():
        x = per_sample([1, 2])
        kept = []
        if x > 1:
            kept.append(x * 2)
            y = x
        else:
            y = x
        return kept[0] + y

    with pytest.raises(ValueError, match="computed in the if branch of the if at line"):
        run(pipe, 2)


def test_debug_mode_with_conditionals_is_refused():
    @pipeline_def(enable_conditionals=True, debug=True)
    def pipe():
        return per_sample([1])

    with pytest.raises(ValueError, match="debug=True and enable_conditionals=True"):
        run(pipe, 1)


def test_statistics_count_only_the_samples_of_each_branch():
    @pipeline_def(enable_conditionals=True)
    def pipe():
        x = per_sample([1, 5, 7, 2, 9])
        if x > 4:
            y = fn.cast(x, dtype=types.FLOAT, name="big")
        else:
            y = fn.cast(x * 2, dtype=types.FLOAT, name="small")
        return y

    p = pipe(batch_size=5, num_threads=1, device_id=None, seed=1, exec_pipelined=False)
    (y,) = p.run()
    assert samples(y) == [2.0, 5.0, 7.0, 4.0, 9.0]
    stats = p.executor_statistics()
    assert stats["big"]["samples"] == 3 and stats["small"]["samples"] == 2


class _Halve:
    def __call__(self, v):
        if v > 10:
            v = v // 2
        return v


def _scaled(v, by):
    if v > 0:
        v = v * by
    return v


def test_callable_objects_and_partials_are_converted():
    import functools

    @pipeline_def(enable_conditionals=True)
    def pipe():
        x = per_sample([4, 30, -3])
        return _Halve()(x), functools.partial(_scaled, by=3)(x)

    halved, scaled = run(pipe, 3)
    assert samples(halved) == [4, 15, -3]
    assert samples(scaled) == [12, 90, -3]


def test_condition_on_the_shape_of_a_sample():
    @pipeline_def(enable_conditionals=True)
    def pipe():
        image = fn.external_source(
            source=lambda info: np.ones(([2, 6, 3, 8][info.idx_in_batch], 4), np.float32),
            batch=False,
            layout="HW",
            dtype=np.float32,
        )
        if image.shape()[0] > 4:
            out = fn.crop(image, crop=(4, 4), crop_pos_x=0, crop_pos_y=0)
        else:
            out = image * 2
        return out

    (out,) = run(pipe, 4)
    assert [out.at(i).shape for i in range(4)] == [(2, 4), (4, 4), (3, 4), (4, 4)]
    assert [float(np.asarray(out.at(i)).max()) for i in range(4)] == [2.0, 1.0, 2.0, 1.0]
