"""Whole-batch random draws (executor/philox.py) equal the per-sample generators, bit for bit.

Also the batch forms of the GPU path's host arithmetic (crop windows, ROI clipping,
resize sizes), which run without a GPU.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from chute import fn, pipeline_def
from chute.executor import compute as compute_module
from chute.runtime import native, philox
from chute.runtime.context import BatchContext, sample_generator
from chute.runtime.crop_window import centre_crop_window, random_crop_window


def _metas(rng, n, keyed):
    if not keyed:
        return [{} for _ in range(n)]
    return [
        {"sample_key": (int(rng.integers(0, 10**9)), int(rng.integers(0, 9)))} for _ in range(n)
    ]


@pytest.mark.parametrize("keyed", [True, False])
def test_stream_words_are_numpys_philox_words(keyed):
    rng = np.random.default_rng(0)
    metas = _metas(rng, 16, keyed)
    seed, node = int(rng.integers(0, 2**63)), 12
    key, ctr = philox.sample_counters(seed, node, 4, 9, metas)
    words = philox.stream_words(key, ctr, 3)
    for i in range(16):
        g = sample_generator(seed, node, 4, 9, i, metas[i])
        assert words[i].tolist() == [int(g.bit_generator.random_raw()) for _ in range(12)]


def test_compiled_and_numpy_philox_agree_with_mixed_metas_and_counter_carry(monkeypatch):
    """The compiled kernel (runtime.native.philox_blocks) and the NumPy rounds give the
    same words, for keyed and unkeyed samples in one batch and for counters whose low
    words carry over."""
    if philox.native.philox_blocks is None:
        pytest.skip("chute's compiled module is not built here")
    rng = np.random.default_rng(5)
    metas = [*_metas(rng, 8, True), {}, None, {"batch_index": 3}]
    key, ctr = philox.sample_counters(77, 3, 2, 5, metas)
    ctr[0, 0] = ctr[1, :2] = np.uint64(2**64 - 1)  # the next block carries
    compiled = philox.stream_words(key, ctr, 4)
    monkeypatch.setattr(philox.native, "philox_blocks", None)
    assert np.array_equal(compiled, philox.stream_words(key, ctr, 4))
    for i in (0, 1):
        g = np.random.Generator(np.random.Philox(key=key[i], counter=ctr[i]))
        assert compiled[i].tolist() == [int(g.bit_generator.random_raw()) for _ in range(16)]


@pytest.mark.parametrize("attempts", [1, 3, 10, 100])
def test_batch_crop_windows_equal_random_crop_window(attempts):
    rng = np.random.default_rng(attempts)
    n = 512
    shapes = np.stack([rng.integers(1, 900, n), rng.integers(1, 900, n)], 1)
    shapes[:20] = rng.integers(1, 4, (20, 2))  # tiny images: ranges of one value, fallbacks
    metas = _metas(rng, n, True)
    key, ctr = philox.sample_counters(3, 7, 0, 0, metas)
    words = philox.stream_words(key, ctr, 2)
    area, ratio = (0.08, 1.0), (3 / 4, 4 / 3)
    got = philox.random_crop_windows(shapes, words, area, ratio, attempts)
    settled = 0
    for i in range(n):
        ref = random_crop_window(
            int(shapes[i, 0]),
            int(shapes[i, 1]),
            area=area,
            aspect_ratio=ratio,
            num_attempts=attempts,
            rng=sample_generator(3, 7, 0, 0, i, metas[i]),
        )
        if got[i] is not None:
            settled += 1
            assert got[i] == tuple(ref), i
    assert settled > n // 3  # most samples need no generator of their own


@pytest.mark.parametrize("path", ["batch", "numpy"])
@pytest.mark.parametrize("attempts", [10, 1])
def test_gpu_backend_windows_equal_the_cpu_backends(monkeypatch, path, attempts):
    """Both ways the mixed decoder draws its windows give the CPU backend's: the compiled
    batch call and NumPy's batch rounds; 1 attempt makes many samples miss (the centre
    crop), and empty shapes (refused samples) get no window."""
    from chute.ops.decoders.image_gpu import random_crop_windows

    if path == "batch" and native.random_crop_windows is None:
        pytest.skip("chute.runtime._native is not built")
    if path == "numpy":
        monkeypatch.setattr(native, "random_crop_windows", None)
    rng = np.random.default_rng(5)
    n = 300
    shapes = np.stack([rng.integers(2, 700, n), rng.integers(2, 700, n)], 1)
    shapes[[7, 150]] = 0
    metas = _metas(rng, n - 10, True)  # the last 10 samples have no meta: keyed by position
    node = SimpleNamespace(id=4)
    ctx = BatchContext(node, 11, 2, 6, None, metas, None)
    args = {"random_area": (0.1, 0.9), "random_aspect_ratio": (0.5, 2.0), "num_attempts": attempts}
    got = random_crop_windows(shapes[:, ::-1][:, ::-1], args, ctx)  # a strided view too
    centred = 0
    for i in range(n):
        if i in (7, 150):
            assert got[i] is None
            continue
        h, w = int(shapes[i, 0]), int(shapes[i, 1])
        ref = random_crop_window(h, w, (0.1, 0.9), (0.5, 2.0), attempts, ctx.rng(i))
        centred += ref == centre_crop_window(h, w, (0.5, 2.0))
        assert got[i] == tuple(float(v) for v in ref), i
    assert centred > (20 if attempts == 1 else -1)


def _coin_pipe(files):
    @pipeline_def(batch_size=5, num_threads=2, seed=21)
    def pipe():
        data, _ = fn.readers.file(files=files, random_shuffle=True, name="Reader")
        return (
            data,
            fn.random.coin_flip(probability=0.3),
            fn.random.coin_flip(dtype=np.uint8),
            fn.random.uniform(range=(0, 1)),
        )

    return pipe()


def test_batched_coin_flips_equal_per_sample_coin_flips(tmp_path, monkeypatch):
    files = []
    for i in range(12):
        (tmp_path / f"{i}.bin").write_bytes(bytes([i]))
        files.append(str(tmp_path / f"{i}.bin"))

    def run():
        p = _coin_pipe(files)
        out = [[t.as_array().copy() for t in p.run()[1:]] for _ in range(4)]
        p.close()
        return out

    fast = run()
    monkeypatch.setattr(compute_module, "supports_batched", lambda node: False)
    slow = run()
    for a, b in zip(fast, slow):
        for x, y in zip(a, b):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x, y)
    flips = np.concatenate([b[0] for b in fast])
    assert 0 < flips.sum() < len(flips)


def test_clip_rois_equals_clip_roi():
    from chute.gpu.cpu_decode import clip_roi as _clip_roi
    from chute.gpu.cpu_decode import clip_rois

    rng = np.random.default_rng(2)
    n = 400
    shapes = np.stack([rng.integers(0, 60, n), rng.integers(0, 60, n)], 1)
    rois = [tuple(rng.uniform(-20, 70, 4).round(1)) for _ in range(n)]
    windows = np.zeros((n, 4), np.float32)
    errors: list = [None] * n
    regions = clip_rois(shapes, rois, windows, errors)
    for i in range(n):
        h, w = (int(v) for v in shapes[i])
        try:
            ref = _clip_roi(rois[i], h, w) if h and w else None
            assert errors[i] is None
        except ValueError as e:
            assert errors[i] == str(e)
            ref = None
        assert regions[i] == ref
        if ref is not None:
            assert tuple(windows[i]) == tuple(
                np.float32(v) for v in (rois[i][0] - ref[0], rois[i][1] - ref[1], *rois[i][2:])
            )


@pytest.mark.parametrize(
    "kwargs",
    [
        {"resize_shorter": 256},
        {"resize_longer": 300.5},
        {"resize_shorter": -224},
        {"resize_x": 224, "resize_y": 224},
        {"size": (160, 90)},
        {"resize_x": 300},
        {"resize_shorter": 256, "max_size": 320},
        {"resize_x": 224, "resize_y": 200, "mode": "not_smaller"},
    ],
)
def test_output_sizes_equal_resize_output_size(kwargs):
    from chute.ops.geometry.resize_gpu import output_sizes
    from chute.ops.geometry.resize_kernels import resize_output_size

    rng = np.random.default_rng(0)
    hw = np.stack([rng.integers(1, 2500, 3000), rng.integers(1, 2500, 3000)], 1)
    hw[:40] = rng.integers(1, 6, (40, 2))
    kw = {"mode": None, "max_size": None, "subpixel_scale": True, **kwargs}
    ref = np.array([resize_output_size(int(h), int(w), **kw) for h, w in hw.tolist()])
    np.testing.assert_array_equal(output_sizes(hw, kw), ref)


@pytest.mark.parametrize("keyed", [True, False])
@pytest.mark.parametrize("n", [1, 2, 3, 14, 31, 1000, 2**31 + 11])
@pytest.mark.parametrize("count", [1, 2, 7, 9])
def test_batch_bounded_integers_are_generator_integers(keyed, n, count):
    rng = np.random.default_rng(n + count)
    metas = _metas(rng, 40, keyed)
    key, ctr = philox.sample_counters(77, 5, 1, 3, metas)
    picks, redraw = philox.bounded_integers(key, ctr, count, n)
    for i in range(40):
        want = sample_generator(77, 5, 1, 3, i, metas[i]).integers(0, n, size=count)
        if i not in redraw:
            assert picks[i].tolist() == want.tolist(), i
    # n = 2**31 + 11 rejects about half of all draws: those samples are handed back
    assert (len(redraw) > 10) == (n > 2**30)


def test_batch_uniform_doubles_are_generator_uniform():
    assert philox.uniform_doubles_match_numpy()
    rng = np.random.default_rng(1)
    metas = _metas(rng, 30, True)
    key, ctr = philox.sample_counters(5, 2, 0, 8, metas)
    words = philox.stream_words(key, ctr, 2)[:, :6]
    for lo, hi in ((0.0, 1.0), (-2.5, 7.0)):
        got = philox.uniform_doubles(words, lo, hi)
        for i in range(30):
            want = sample_generator(5, 2, 0, 8, i, metas[i]).uniform(lo, hi, size=6)
            assert got[i].tolist() == want.tolist()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"values": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13], "dtype": np.int32},
        {"values": [0, 1], "shape": [2], "dtype": np.int32},
        {"values": [2.5, -1.0, 7.25], "shape": [3, 2]},
        {"values": [4.0]},
        {"range": [0, 1], "shape": [3], "dtype": np.float32},
        {"range": [-5, 5]},
        {"range": [0, 255], "dtype": np.uint8},
    ],
)
def test_batched_uniform_equals_per_sample_uniform(kwargs, tmp_path, monkeypatch):
    files = []
    for i in range(9):
        (tmp_path / f"{i}.bin").write_bytes(bytes([i]))
        files.append(str(tmp_path / f"{i}.bin"))

    @pipeline_def(batch_size=4, num_threads=2, seed=13)
    def pipe():
        data, _ = fn.readers.file(files=files, random_shuffle=True, name="Reader")
        return data, fn.random.uniform(**kwargs), fn.random.uniform(data, **kwargs)

    def run():
        p = pipe()
        out = [[t.as_array().copy() for t in p.run()[1:]] for _ in range(3)]
        p.close()
        return out

    from chute.executor.plan import build_plan

    node = build_plan(pipe()._outputs).outputs[1].producer
    assert node.op.draws_batch(node)
    fast = run()
    monkeypatch.setattr(compute_module, "supports_batched", lambda node: False)
    slow = run()
    for a, b in zip(fast, slow):
        for x, y in zip(a, b):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize(
    ("kind", "values", "at_once"),
    [
        ("int", [np.array(1, np.int32), np.array(-4, np.int32), np.array(7, np.int32)], True),
        ("int", [np.array([2**40]), np.array([3])], True),
        ("int", [np.array(True), np.array(False)], True),
        ("bool", [np.array(1, np.uint8), np.array(0, np.uint8)], True),
        ("float", [np.array(0.1, np.float32), np.array(3, np.int16), np.array(2.25)], True),
        ("int", [np.array(2.0), np.array(3.0)], False),  # float dtype: one by one
        ("float", [np.array(1.0), 2.0], False),  # not all arrays
        ("int", [np.array(1), np.array([2])], False),  # shapes differ
    ],
)
def test_a_numeric_column_converts_as_each_value_would(kind, values, at_once):
    from chute.graph.schema import Arg
    from chute.runtime.context import _numeric_column

    arg = Arg("x", kind, 0)
    fast = _numeric_column(arg, values)
    assert (fast is not None) == at_once
    if at_once:
        expected = [arg.convert("op", v) for v in values]
        assert fast == expected
        assert [type(v) for v in fast] == [type(v) for v in expected]


def test_a_numeric_column_leaves_bad_values_to_the_checked_path():
    from chute.graph.schema import Arg
    from chute.runtime.context import _numeric_column

    assert _numeric_column(Arg("x", "float", 0.0), [np.array(np.nan), np.array(1.0)]) is None
    assert _numeric_column(Arg("x", "int", 0, choices=(0, 1)), [np.array(3)]) is None
    assert _numeric_column(Arg("x", "int", 0), [np.array([1, 2]), np.array([3, 4])]) is None
