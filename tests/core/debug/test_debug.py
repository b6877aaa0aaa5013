"""Debug mode: eager pipelines give the traced pipeline's batches, iteration for iteration."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from chute import OperatorError, fn, pipeline_def, types
from chute.debug import DebugDataNode, DebugPipeline

RNG = np.random.default_rng(7)
BATCHES = [[RNG.integers(0, 255, (6, 5, 3), dtype=np.uint8) for _ in range(4)] for _ in range(3)]


def cycling_source():
    """A fresh per-batch callable over BATCHES (each pipeline gets its own position)."""
    it = iter(BATCHES)
    return lambda: next(it)


def run_both(body, iterations, *args, **pipe_kwargs):
    """(traced, debug) outputs: a list per iteration of arrays per output."""
    results = []
    for debug in (False, True):
        kw = {"batch_size": 4, "num_threads": 2, "seed": 11, **pipe_kwargs}
        pipe = pipeline_def(**kw, debug=debug)(body)(*args)
        pipe.build()
        outs = []
        for _ in range(iterations):
            outs.append([[np.array(s) for s in o.as_cpu()] for o in pipe.run()])
        results.append(outs)
        pipe.close()
    return results


def assert_same(traced, debug):
    assert len(traced) == len(debug)
    for it, (a, b) in enumerate(zip(traced, debug)):
        assert len(a) == len(b), f"iteration {it}: number of outputs"
        for k, (x, y) in enumerate(zip(a, b)):
            assert len(x) == len(y)
            for i, (s, t) in enumerate(zip(x, y)):
                assert s.dtype == t.dtype, f"iteration {it}, output {k}, sample {i}"
                np.testing.assert_array_equal(s, t, err_msg=f"iteration {it} output {k} sample {i}")


def test_external_source_random_and_arithmetic_agree():
    def body():
        x = fn.external_source(source=cycling_source(), layout="HWC")
        gain = fn.random.uniform(range=(0.5, 1.5))
        flip = fn.random.coin_flip()
        y = fn.flip(x, horizontal=flip) * gain + 3
        return y, flip, fn.random.normal(shape=(2,)), x > 100

    traced, debug = run_both(body, 3)
    assert_same(traced, debug)
    # the random draws really vary, so agreement is not trivial
    assert not np.array_equal(traced[0][1], traced[1][1]) or not np.array_equal(
        traced[0][2], traced[1][2]
    )


def test_python_function_per_sample_and_batch_agree():
    def body():
        x = fn.external_source(source=cycling_source(), layout="HWC")
        s = fn.python_function(x, function=lambda a: a.astype(np.int32).sum(axis=-1))
        b = fn.python_function(
            x, function=lambda xs: [np.flipud(a) for a in xs], batch_processing=True
        )
        m, n = fn.python_function(x, function=lambda a: (a.max(), a.min()), num_outputs=2)
        return s, b, m, n

    assert_same(*run_both(body, 3))


def test_debug_nodes_are_batches_inside_the_function():
    seen = {}

    @pipeline_def(batch_size=4, num_threads=1, seed=3, debug=True)
    def pipe():
        x = fn.external_source(source=cycling_source(), layout="HWC")
        y = x // 2
        seen["type"] = type(y)
        seen["len"] = len(y)
        seen["sample"] = y.at(1)
        seen["array"] = np.asarray(y)
        seen["layout"] = y.layout()
        seen["repr"] = repr(y)
        seen["shape_op"] = y.shape().as_array()
        return fn.cast(y, dtype=types.FLOAT)

    p = pipe()
    assert isinstance(p, DebugPipeline)
    (out,) = p.run()
    assert seen["type"] is DebugDataNode and seen["len"] == 4
    np.testing.assert_array_equal(seen["sample"], BATCHES[0][1] // 2)
    assert seen["array"].shape == (4, 6, 5, 3) and seen["layout"] == "HWC"
    assert "TensorListCPU" in seen["repr"]
    np.testing.assert_array_equal(seen["shape_op"], [[6, 5, 3]] * 4)
    assert out.dtype == np.float32


def test_epochs_end_and_reset_like_the_traced_pipeline():
    def body():
        return fn.external_source(source=cycling_source(), layout="HWC") + 1

    p = pipeline_def(batch_size=4, num_threads=1, seed=1, debug=True)(body)()
    for _ in range(3):
        p.run()
    with pytest.raises(StopIteration):
        p.run()
    with pytest.raises(StopIteration):  # stays ended until reset, as the executor does
        p.run()


def test_feed_input_before_and_during_runs():
    @pipeline_def(batch_size=2, num_threads=1, seed=1, debug=True)
    def pipe():
        return fn.external_source(name="in") * 10

    p = pipe()
    p.feed_input("in", [np.array([1]), np.array([2])])
    (a,) = p.run()
    p.feed_input("in", [np.array([3]), np.array([4])])
    (b,) = p.run()
    assert a.as_array().ravel().tolist() == [10, 20]
    assert b.as_array().ravel().tolist() == [30, 40]


def test_errors_name_the_operator_and_sample():
    def bad(a):
        if a[0, 0, 0] >= 0 and bad.calls == 2:
            raise ValueError("boom")
        bad.calls += 1
        return a

    bad.calls = 0

    @pipeline_def(batch_size=4, num_threads=1, seed=1, debug=True)
    def pipe():
        return fn.python_function(fn.external_source(source=cycling_source()), function=bad)

    with pytest.raises(OperatorError, match=r"python_function.*sample 2.*boom"):
        pipe().run()


def test_operators_outside_run_are_refused():
    p = pipeline_def(batch_size=2, debug=True)(lambda: fn.random.uniform())()
    with p, pytest.raises(RuntimeError, match="run"):
        fn.random.uniform()


def jpeg_files(root, n):
    files = []
    for i in range(n):
        img = RNG.integers(0, 255, (20 + 2 * i, 24 + i, 3), dtype=np.uint8)
        path = root / f"img_{i:02d}.jpg"
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="JPEG", quality=90)
        path.write_bytes(buf.getvalue())
        files.append(str(path))
    return files


def test_reader_decoder_crop_mirror_normalize_agree_over_epochs(tmp_path):
    files = jpeg_files(tmp_path, 10)

    def body(files):
        jpegs, labels = fn.readers.file(files=files, random_shuffle=True, name="Reader")
        images = fn.decoders.image(jpegs, output_type=types.RGB)
        images = fn.resize(images, resize_x=16, resize_y=16)
        out = fn.crop_mirror_normalize(
            images,
            crop=(12, 12),
            crop_pos_x=fn.random.uniform(range=(0, 1)),
            crop_pos_y=fn.random.uniform(range=(0, 1)),
            mirror=fn.random.coin_flip(),
            mean=[128.0, 128.0, 128.0],
            std=[64.0, 64.0, 64.0],
        )
        return out, labels

    results = []
    for debug in (False, True):
        pipe = pipeline_def(batch_size=4, num_threads=2, seed=9, debug=debug)(body)(files)
        pipe.build()
        assert pipe.epoch_size("Reader") == 10
        outs = []
        for _epoch in range(2):
            # readers do not end by themselves: run an epoch's worth, then start the next
            for _ in range(3):
                outs.append([[np.array(s) for s in o] for o in pipe.run()])
            pipe.reset()
        results.append(outs)
        pipe.close()
    traced, debug = results
    assert len(traced) == 6
    assert_same(traced, debug)


@pytest.mark.gpu
def test_gpu_operators_and_transfers_agree():
    cp = pytest.importorskip("cupy")

    def body():
        x = fn.external_source(source=cycling_source(), layout="HWC")
        g = x.gpu()
        y = fn.python_function(g, function=lambda a: cp.flip(a, axis=1) // 2, device="gpu")
        z = fn.crop_mirror_normalize(g, mirror=fn.random.coin_flip(), mean=[10.0] * 3)
        return y, z  # GPU outputs (.cpu() transfers: see transfer.py)

    traced, debug = run_both(body, 2, device_id=0)
    assert_same(traced, debug)
