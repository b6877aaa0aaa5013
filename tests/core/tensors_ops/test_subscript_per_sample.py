"""``x[idx]`` with a per-sample integer DataNode ``idx``: each sample picks its own entry."""

from __future__ import annotations

import numpy as np
import pytest
from tensor_helpers import run

from chute import OperatorError, fn, pipeline_def, types

TABLE = np.arange(12, dtype=np.float32).reshape(3, 4)  # rows [0..3], [4..7], [8..11]


def _column(batch):
    return [batch.at(i) for i in range(len(batch))]


def test_a_per_sample_index_picks_each_samples_row_and_element():
    idx = [np.int32(2), np.int32(0), np.int32(1), np.int32(-1)]

    def expr(i):
        table = types.Constant(TABLE)
        return table[i], table[i, 1], table[1, i], table[i][i], table[:, i]

    rows, at_1, row_1, twice, column = run(expr, idx)
    assert [r.tolist() for r in _column(rows)] == [
        [8, 9, 10, 11],
        [0, 1, 2, 3],
        [4, 5, 6, 7],
        [8, 9, 10, 11],
    ]
    assert [float(v) for v in _column(at_1)] == [9.0, 1.0, 5.0, 9.0]
    assert [float(v) for v in _column(row_1)] == [6.0, 4.0, 5.0, 7.0]
    assert [float(v) for v in _column(twice)] == [10.0, 0.0, 5.0, 11.0]
    assert [c.tolist() for c in _column(column)] == [[2, 6, 10], [0, 4, 8], [1, 5, 9], [3, 7, 11]]


def test_an_index_out_of_range_names_the_sample_shape():
    with pytest.raises(OperatorError, match=r"sample shape \(3, 4\)"):
        run(lambda i: types.Constant(TABLE)[i], [np.int32(0), np.int32(3)])


def test_a_non_scalar_index_is_refused_naming_the_argument():
    with pytest.raises(OperatorError, match="at_0"):
        run(lambda i: types.Constant(TABLE)[i], [np.array([0, 1], np.int32)] * 2)


def test_an_index_from_a_random_operator_is_reproducible():
    @pipeline_def(batch_size=6, num_threads=2, device_id=None, seed=7)
    def pipe():
        i = fn.random.uniform(values=[0, 1, 2], dtype=types.INT32)
        return i, types.Constant(TABLE)[i, 0]

    outs = []
    for _ in range(2):
        p = pipe()
        p.build()
        idx, first = p.run()
        outs.append([float(v) for v in _column(first)])
        assert outs[-1] == [4.0 * int(k) for k in _column(idx)]
    assert outs[0] == outs[1]
