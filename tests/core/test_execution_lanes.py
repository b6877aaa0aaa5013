"""Compute lanes: several batches computed at once, delivered in order, errors and resets intact.

Lanes are meant for GPU pipelines; here they are forced on CPU pipelines (``lanes``
fixture) so that ordering, errors, reset and restore are checked without a GPU.
"""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

from chute import Iterator, LastBatchPolicy, OperatorError, fn, pipeline_def
from chute.executor import executor as executor_module
from chute.executor import lanes as lanes_module
from chute.runtime import tuning


@pytest.fixture
def lanes(monkeypatch):
    """Force ``n`` compute lanes on every pipeline built afterwards."""

    def force(n: int) -> None:
        monkeypatch.setattr(executor_module, "lane_count", lambda plan, pipeline: n)

    return force


def _slow_pipe(delays, **kw):
    """Batch i takes delays[i % len(delays)] seconds in a batch operator."""

    def slow(x):
        if int(x) % 4 == 0:  # one sample per batch waits
            time.sleep(delays[int(x) // 4 % len(delays)])
        return x * 10

    @pipeline_def(**{"batch_size": 4, "num_threads": 2, "seed": 3, **kw})
    def pipe():
        x = fn.external_source(source=lambda info: np.int64(info.idx_in_epoch), batch=False)
        coin = fn.random.coin_flip()
        return fn.python_function(x, function=slow), coin

    return pipe()


def test_lanes_deliver_in_iteration_order_when_later_batches_finish_first(lanes):
    reference = _slow_pipe([0.0])
    ref = [[t.as_array().copy() for t in reference.run()] for _ in range(6)]
    reference.close()
    lanes(3)
    p = _slow_pipe([0.15, 0.0, 0.0])  # batch 0 of every three is the slowest
    got = [[t.as_array().copy() for t in p.run()] for _ in range(6)]
    names = {t.name for t in threading.enumerate()}
    assert {"chute-compute-0", "chute-compute-1", "chute-compute-2"} <= names
    p.close()
    for r, g in zip(ref, got):
        for a, b in zip(r, g):
            np.testing.assert_array_equal(a, b)
    assert [int(b[0][0]) for b in got] == [0, 40, 80, 120, 160, 200]  # sample 4i, times 10


def test_lanes_error_arrives_after_the_batches_before_it(lanes):
    lanes(3)

    def fail_on_batch_2(x):
        if int(x) == 8:
            raise ValueError("bad batch")
        time.sleep(0.05 if int(x) == 4 else 0.0)  # batch 1 finishes after batch 2 failed
        return x

    @pipeline_def(batch_size=4, num_threads=2, seed=0)
    def pipe():
        x = fn.external_source(source=lambda info: np.int64(info.idx_in_epoch), batch=False)
        return fn.python_function(x, function=fail_on_batch_2)

    before = set(threading.enumerate())  # other tests' pipelines may not be collected yet
    p = pipe()
    assert int(p.run()[0].at(0)) == 0
    assert int(p.run()[0].at(0)) == 4
    with pytest.raises(OperatorError, match="bad batch"):
        p.run()
    with pytest.raises(RuntimeError, match="stopped after an error"):
        p.run()
    p.close()
    ours = set(threading.enumerate()) - before
    assert not [t for t in ours if t.name.startswith("chute-compute")]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("lane_files")
    paths = []
    for i in range(20):
        p = root / f"{i:03d}.bin"
        p.write_bytes(bytes([i]))
        paths.append(str(p))
    return paths


def _reader_pipe(paths, **kw):
    @pipeline_def(**{"batch_size": 3, "num_threads": 2, "seed": 1, "prefetch_queue_depth": 2, **kw})
    def pipe():
        data, _ = fn.readers.file(files=paths, random_shuffle=True, name="Reader")
        return data, fn.random.uniform(range=(0, 1))

    return pipe()


def _epoch(it):
    return [
        ([int(b["data"].at(i)[0]) for i in range(len(b["data"]))], b["u"].as_array().tolist())
        for (b,) in it
    ]


def test_lanes_keep_epochs_state_and_reset_exact(lanes, files):
    def run(n_lanes):
        lanes(n_lanes)
        p = _reader_pipe(files)
        it = Iterator(
            p, ["data", "u"], reader_name="Reader", last_batch_policy=LastBatchPolicy.PARTIAL
        )
        first = _epoch(it)
        it.reset()
        (b,) = next(it)
        state = it.state_dict()
        rest = _epoch(it)
        it2 = Iterator(
            _reader_pipe(files),
            ["data", "u"],
            reader_name="Reader",
            last_batch_policy=LastBatchPolicy.PARTIAL,
        )
        it2.load_state_dict(state)
        resumed = _epoch(it2)
        p.close()
        return first, rest, resumed

    ref = run(1)
    got = run(3)
    assert got == ref
    first, rest, resumed = got
    assert sorted(i for ids, _ in first for i in ids) == list(range(20))
    assert resumed == rest


def test_pipeline_reset_with_lanes_loses_no_prefetched_batch(lanes, files):
    lanes(3)

    @pipeline_def(batch_size=2, num_threads=2, seed=0, prefetch_queue_depth=3)
    def pipe():
        data, _ = fn.readers.file(files=files[:8], name="Reader")
        return data

    p = pipe()
    first = int(p.run()[0].at(0)[0])
    time.sleep(0.2)  # let the reader and the lanes run ahead
    p.reset()
    assert (first, int(p.run()[0].at(0)[0])) == (0, 2)
    p.close()


def _plan(*steps, sources=("cpu",), fed=False):
    nodes = [n for s in steps for n in s.nodes]
    source_op = SimpleNamespace(feedable=fed)  # fed: an external_source the user feeds
    return SimpleNamespace(
        uses_gpu=any(n.device != "cpu" for n in nodes),
        sources=[SimpleNamespace(device=d, op=source_op, arg=lambda name: None) for d in sources],
        steps=list(steps),
        nodes=nodes,
    )


def _operator(name):
    """An instance of the operator class behind ``name``: lane_count reads its traits only."""
    from chute.ops.decoders.image_decoders import ImageCrop, ImageRandomCrop
    from chute.ops.geometry.crop_ops import Flip
    from chute.ops.geometry.resize_ops import Resize
    from chute.ops.image.image_ops import CropMirrorNormalize
    from chute.ops.python import PythonFunction
    from chute.ops.random import CoinFlip

    classes = {
        c.schema.name: c
        for c in (ImageCrop, ImageRandomCrop, Flip, Resize, CropMirrorNormalize, CoinFlip)
    }
    if name == "python_function":
        return PythonFunction(batch_processing=True)
    return classes[name]()


def _step(name, device, kind="gpu", **args):
    node = SimpleNamespace(
        device=device, schema=SimpleNamespace(name=name), op=_operator(name), args=args
    )
    return SimpleNamespace(kind=kind, nodes=[node])


def test_lane_count_for_gpu_decoding_and_cpu_pipelines_with_lane_safe_steps():
    with tuning.use(tuning.Tuning(gpu_lanes=3, cpu_lanes=4)):
        _check_lane_counts(gpu_lanes=3, cpu_lanes=4)
    _check_lane_counts(tuning.DEFAULTS.gpu_lanes, tuning.DEFAULTS.cpu_lanes)  # back to defaults


def _check_lane_counts(gpu_lanes: int, cpu_lanes: int) -> None:
    pipe = SimpleNamespace(exec_pipelined=True, on_error="raise", num_threads=4)
    train = [
        _step("random.coin_flip", "cpu", kind="segment"),
        _step("decoders.image_random_crop", "mixed"),
        _step("resize", "gpu"),
        _step("crop_mirror_normalize", "gpu"),
    ]
    assert lanes_module.lane_count(_plan(*train), pipe) == gpu_lanes
    assert lanes_module.lane_count(_plan(*train[2:]), pipe) == 1  # no GPU decoding
    assert lanes_module.lane_count(_plan(*train, _step("python_function", "gpu")), pipe) == 1
    assert lanes_module.lane_count(_plan(*train, sources=("gpu",)), pipe) == 1
    # skipping: lanes while a reader is behind (refill.py fills every failed place in
    # reader order), one lane where the user feeds the source (the padding reaches them)
    flip_skips = _step("flip", "gpu", on_error="skip")
    assert lanes_module.lane_count(_plan(*train, flip_skips), pipe) == gpu_lanes
    assert lanes_module.lane_count(_plan(*train, flip_skips, fed=True), pipe) == 1
    skip = SimpleNamespace(exec_pipelined=True, on_error="skip", num_threads=4)
    assert lanes_module.lane_count(_plan(*train), skip) == gpu_lanes
    assert lanes_module.lane_count(_plan(*train, fed=True), skip) == 1
    serial = SimpleNamespace(exec_pipelined=False, on_error="raise", num_threads=4)
    assert lanes_module.lane_count(_plan(*train), serial) == 1
    cpu = [
        _step("random.coin_flip", "cpu", kind="segment"),
        _step("python_function", "cpu", "batch"),
    ]
    assert lanes_module.lane_count(_plan(*cpu), pipe) == 1  # a user's function: in order
    # CPU decoders run batch-wise (cpu_batch_wise): one batch's tail beside the next's start
    decode = _step("decoders.image_crop", "cpu", "batch")
    cpu_train = [cpu[0], decode, _step("resize", "cpu", kind="segment")]
    assert lanes_module.lane_count(_plan(*cpu_train), pipe) == cpu_lanes
    assert lanes_module.lane_count(_plan(cpu[0]), pipe) == cpu_lanes
    one_thread = SimpleNamespace(exec_pipelined=True, on_error="raise", num_threads=1)
    assert lanes_module.lane_count(_plan(*cpu_train), one_thread) == 1
    assert lanes_module.lane_count(_plan(*cpu_train), skip) == cpu_lanes
    assert lanes_module.lane_count(_plan(*cpu_train, fed=True), skip) == 1


def test_cpu_pipelines_run_two_lanes_and_give_the_batches_of_one():
    """A CPU decoding pipeline computes two batches at once, with the results of one lane."""

    @pipeline_def(batch_size=8, num_threads=3, seed=5, device_id=None)
    def pipe():
        x = fn.external_source(source=lambda info: _jpeg(info.idx_in_epoch), batch=False)
        return fn.decoders.image_random_crop(x), fn.random.uniform(range=(0, 1))

    p = pipe()
    p.build()
    assert p._executor.lanes == tuning.DEFAULTS.cpu_lanes > 1
    got = [
        [
            t.as_array() if t.is_dense_tensor() else [np.asarray(t.at(i)) for i in range(8)]
            for t in p.run()
        ]
        for _ in range(4)
    ]
    p.close()
    serial = pipe(exec_pipelined=False)
    serial.build()
    assert serial._executor.lanes == 1
    for batch in got:
        want = serial.run()
        for i in range(8):
            np.testing.assert_array_equal(batch[0][i], np.asarray(want[0].at(i)))
        np.testing.assert_array_equal(batch[1], want[1].as_array())
    serial.close()


def _jpeg(k: int) -> np.ndarray:
    import io

    from PIL import Image

    rng = np.random.default_rng(k)
    pixels = rng.integers(0, 256, (24 + k % 5 * 8, 32, 3), dtype=np.uint8)
    data = io.BytesIO()
    Image.fromarray(pixels).save(data, "JPEG", quality=90)
    return np.frombuffer(data.getvalue(), np.uint8)


@pytest.mark.parametrize(("n_lanes", "depth"), [(2, 2), (3, 1), (1, 3)])
def test_batches_computed_ahead_of_the_user_are_bounded(lanes, n_lanes, depth):
    """A user slower than the lanes finds at most max(prefetch_queue_depth, lanes) batches
    computed ahead of the one it holds — not a full queue plus a finished batch held by
    every lane waiting to put it (on the GPU each one a full output buffer)."""
    lanes(n_lanes)
    started = []

    def count(x):
        started.append(time.monotonic())
        return x

    @pipeline_def(batch_size=2, num_threads=2, seed=3, prefetch_queue_depth=depth)
    def pipe():
        x = fn.external_source(source=lambda info: np.int64(info.idx_in_epoch), batch=False)
        return fn.python_function(x, function=count, batch_processing=True)

    p = pipe()
    bound = max(depth, n_lanes)
    for taken in range(1, 4):
        p.run()
        time.sleep(0.4)  # the lanes run ahead as far as they may
        assert len(started) == taken + bound, (taken, len(started))
    p.close()
