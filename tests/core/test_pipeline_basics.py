"""The engine end to end: the README snippets, tracing, outputs, TensorListCPU."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from chute import Pipeline, fn, ops, pipeline_def, types


@pipeline_def(batch_size=8, num_threads=2, device_id=None, seed=1234)
def snippet_pipe():
    x = fn.external_source(
        source=lambda info: np.full((2, 3), info.idx_in_epoch, np.float32), batch=False
    )
    angle = fn.random.uniform(range=(-10.0, 10.0))
    y = x * 2 + angle
    return y, angle


def test_issue_snippet_runs_and_computes():
    p = snippet_pipe()
    p.build()
    y, angle = p.run()
    a = angle.as_array()
    assert y.as_array().shape == (8, 2, 3)
    assert y.is_dense_tensor()
    assert y.dtype == np.float32 and angle.dtype == types.FLOAT
    assert np.all((a >= -10) & (a < 10)) and len(set(a.tolist())) == 8
    for i in range(8):
        np.testing.assert_allclose(y.at(i), np.full((2, 3), 2 * i + a[i], np.float32), rtol=1e-6)
    y2, _ = p.run()  # the next iteration continues idx_in_epoch
    assert y2.at(0)[0, 0] == pytest.approx(16 + float(_.at(0)), rel=1e-6)
    p.close()


class LegacyPipe(Pipeline):
    def __init__(self, data, **kw):
        super().__init__(batch_size=4, num_threads=2, device_id=None, seed=7, **kw)
        self.data = data
        self.source = ops.ExternalSource()
        self.uniform = ops.Uniform(range=(0.0, 1.0))
        self.coin = ops.CoinFlip(probability=0.5)

    def define_graph(self):
        self.x = self.source()
        return self.x * self.uniform(), self.coin()

    def iter_setup(self):
        self.feed_input(self.x, self.data)


def test_legacy_pipeline_subclass():
    data = [np.full((3,), i, np.float32) for i in range(4)]
    p = LegacyPipe(data)
    p.build()
    outs = [p.run() for _ in range(3)]
    for scaled, coin in outs:
        assert scaled.as_array().shape == (4, 3)
        assert set(coin.as_array().tolist()) <= {0, 1}
        assert coin.dtype == np.int32
        u = scaled.as_array()[1, 0]  # sample 1 is ones * u
        assert 0.0 <= u < 1.0
    # different iterations draw different numbers
    assert outs[0][0].at(1)[0] != outs[1][0].at(1)[0]
    p.close()


def test_with_block_and_set_outputs():
    pipe = Pipeline(batch_size=3, num_threads=1, seed=3)
    with pipe:
        x = fn.external_source(source=lambda: [np.arange(4, dtype=np.int32)] * 3)
        pipe.set_outputs(x + 1, fn.shapes(x))
    out, shape = pipe.run()
    np.testing.assert_array_equal(out.at(2), np.arange(1, 5))
    np.testing.assert_array_equal(shape.as_array(), [[4]] * 3)


def test_call_time_overrides_decorator_arguments():
    p = snippet_pipe(batch_size=3, seed=5)
    y, _ = p.run()
    assert len(y) == 3 and p.batch_size == 3 and p.seed == 5


def test_multiple_outputs_and_num_outputs():
    @pipeline_def(batch_size=2, num_threads=1, seed=0)
    def pipe():
        a, b = fn.external_source(
            source=lambda info: (np.int32(info.idx_in_epoch), np.float32(-1)),
            batch=False,
            num_outputs=2,
        )
        return a, b

    a, b = pipe().run()
    assert a.as_array().tolist() == [0, 1] and b.as_array().tolist() == [-1.0, -1.0]


def test_ragged_batch_and_dense_error_names_shapes():
    shapes = [(2, 3), (4, 3), (1, 3)]

    @pipeline_def(batch_size=3, num_threads=2, seed=0)
    def pipe():
        return fn.external_source(source=lambda: [np.zeros(s, np.uint8) for s in shapes])

    (x,) = pipe().run()
    assert not x.is_dense_tensor()
    assert x.shape() == shapes
    with pytest.raises(ValueError, match=r"\(2, 3\), \(4, 3\), \(1, 3\)"):
        x.as_array()
    padded = x.as_padded()
    assert padded.shape == (3, 4, 3)


@pytest.mark.parametrize(
    "samples",
    [
        [np.array([k], np.int32) for k in range(5)],  # a reader's labels
        [np.arange(12, dtype=np.float16).reshape(3, 4)[:, ::2] + k for k in range(3)],  # strided
        [np.float32(k) for k in range(4)],  # 0-d samples
        [np.array(["a"]), np.array(["abc"])],  # strings of two widths: one dtype
    ],
)
def test_a_list_of_samples_becomes_the_stacked_array(samples):
    from chute.tensors.cpu import TensorListCPU

    batch = TensorListCPU(samples)
    assert batch.is_dense_tensor()
    dense = batch.as_array()
    expected = np.stack([np.asarray(s) for s in samples])
    assert dense.dtype == expected.dtype and dense.flags.c_contiguous
    np.testing.assert_array_equal(dense, expected)


def test_a_sample_of_another_dtype_or_rank_is_named():
    from chute.tensors.cpu import TensorListCPU

    with pytest.raises(TypeError, match="sample 2 has dtype float32"):
        TensorListCPU([np.zeros(2, np.uint8), np.zeros(2, np.uint8), np.zeros(2, np.float32)])
    with pytest.raises(TypeError, match="sample 1 has dtype uint8 and ndim 2"):
        TensorListCPU([np.zeros(2, np.uint8), np.zeros((1, 2), np.uint8)])
    assert not TensorListCPU([np.zeros(2), np.zeros(3)]).is_dense_tensor()
    assert TensorListCPU([]).is_dense_tensor() and len(TensorListCPU([])) == 0


def test_dlpack_round_trip_is_zero_copy():
    @pipeline_def(batch_size=4, num_threads=2, seed=0)
    def pipe():
        return fn.external_source(source=lambda: np.arange(24, dtype=np.float32).reshape(4, 6))

    (x,) = pipe().run()
    assert x.__dlpack_device__() == (1, 0)
    y = np.from_dlpack(x)
    np.testing.assert_array_equal(y, np.arange(24, dtype=np.float32).reshape(4, 6))
    assert np.shares_memory(y, x.as_array())


def test_dlpack_of_ragged_batch_raises():
    @pipeline_def(batch_size=2, num_threads=1, seed=0)
    def pipe():
        return fn.external_source(source=lambda: [np.zeros(2), np.zeros(3)])

    (x,) = pipe().run()
    with pytest.raises(ValueError, match="ragged"):
        np.from_dlpack(x)


def test_layout_flows_from_external_source():
    @pipeline_def(batch_size=2, num_threads=1, seed=0)
    def pipe():
        x = fn.external_source(source=lambda: [np.zeros((2, 3, 3), np.uint8)] * 2, layout="HWC")
        return x, fn.transpose(x, perm=[2, 0, 1]), x[:, 1:2]

    x, t, s = pipe().run()
    assert x.layout() == "HWC" and t.layout() == "CHW" and s.layout() == "HWC"
    assert t.at(0).shape == (3, 2, 3)


def test_import_chute_pulls_no_framework():
    code = (
        "import sys, chute; "
        "bad = [m for m in ('torch', 'tensorflow', 'paddle', 'jax', 'cupy') if m in sys.modules]; "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_fn_has_real_signature_and_docs():
    import inspect

    sig = inspect.signature(fn.random.uniform)
    assert "range" in sig.parameters and sig.parameters["range"].default == (-1.0, 1.0)
    assert "Uniformly distributed" in fn.random.uniform.__doc__
    assert "range" in fn.random.uniform.__doc__
