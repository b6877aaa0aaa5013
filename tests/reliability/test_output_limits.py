"""Outputs over the per-sample size limit are refused before allocating (issue 30, item 6).

Before, ``resize`` to 100000 x 100000 or ``resize_x=2e9`` failed only when OpenCV's
allocation failed, and a size that fit was simply allocated; NaN in a per-sample
``coord_transform`` matrix gave NaN coordinates without an error.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from chute import OperatorError, fn, pipeline_def
from chute.runtime import limits


def images():
    return [np.full((4, 6, 3), 7, np.uint8), np.full((5, 3, 3), 9, np.uint8)]


def run_one(build, on_error="raise"):
    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=0, on_error=on_error)
    def pipe():
        return build(fn.external_source(source=images))

    p = pipe()
    p.build()
    try:
        return p.run(), p.errors()
    finally:
        p.close()


@pytest.fixture(autouse=True)
def default_limit():
    limits.set_max_sample_bytes(None)
    yield
    limits.set_max_sample_bytes(None)


HUGE = [
    ("resize", lambda x: fn.resize(x, size=(100000, 100000)), "'size'"),
    ("resize", lambda x: fn.resize(x, resize_x=2e9), "'resize_x'"),
    ("resize", lambda x: fn.resize(x, resize_shorter=1e6), "'resize_shorter'"),
    (
        "warp_affine",
        lambda x: fn.warp_affine(x, matrix=[1, 0, 0, 0, 1, 0], size=(1e6, 1e6)),
        "'size'",
    ),
    ("random_resized_crop", lambda x: fn.random_resized_crop(x, size=(1e6, 1e5)), "'size'"),
    ("pad", lambda x: fn.pad(x, shape=[10**6, 10**6, 3]), "'shape/align'"),
    ("paste", lambda x: fn.paste(x, ratio=1e5, fill_value=0), "'ratio/min_canvas_size'"),
]


@pytest.mark.parametrize(("op", "build", "argument"), HUGE, ids=[f"{h[0]}-{h[2]}" for h in HUGE])
def test_a_huge_output_is_refused_naming_operator_sample_argument_and_size(op, build, argument):
    start = time.monotonic()
    with pytest.raises(OperatorError) as info:
        run_one(build)
    message = str(info.value)
    assert f"fn.{op}" in message and "sample 0" in message
    assert f"argument {argument} asks for an output of" in message
    assert "GiB), over the per-sample limit of 4.0 GiB" in message
    assert time.monotonic() - start < 5  # refused, not allocated then freed


def test_the_limit_is_configurable_and_can_be_turned_off():
    limits.set_max_sample_bytes(1000)  # 4 x 6 x 3 = 72 bytes fit, 20 x 20 x 3 do not
    with pytest.raises(OperatorError, match=r"20 x 20 x 3 uint8 \(0.0 GiB\), over the per-sample"):
        run_one(lambda x: fn.resize(x, size=(20, 20)))
    (out,), _ = run_one(lambda x: fn.resize(x, size=(10, 10)))
    assert out.at(0).shape == (10, 10, 3)
    limits.set_max_sample_bytes(0)
    (out,), _ = run_one(lambda x: fn.resize(x, size=(20, 20)))
    assert out.at(0).shape == (20, 20, 3)
    np.testing.assert_array_equal(out.at(1), np.full((20, 20, 3), 9, np.uint8))
    with pytest.raises(ValueError, match="non-negative integer"):
        limits.set_max_sample_bytes(-1)


def test_the_limit_from_the_environment(monkeypatch):
    monkeypatch.setenv("CHUTE_MAX_SAMPLE_BYTES", "100")
    assert limits.max_sample_bytes() == 100
    with pytest.raises(OperatorError, match="over the per-sample limit"):
        run_one(lambda x: fn.resize(x, size=(6, 6)))
    monkeypatch.setenv("CHUTE_MAX_SAMPLE_BYTES", "lots")
    with pytest.raises(ValueError, match="CHUTE_MAX_SAMPLE_BYTES must be a number"):
        limits.max_sample_bytes()


def test_under_skip_the_huge_sample_is_skipped_and_reported():
    sizes = [np.array([8, 8], np.float32), np.array([1e6, 1e6], np.float32)]

    def build(x):
        return fn.resize(x, size=fn.external_source(source=lambda: sizes))

    # the source cycles, so the next batch's first sample fills the refused one's place
    (out,), errors = run_one(build, on_error="skip")
    assert [out.at(k).shape for k in range(2)] == [(8, 8, 3), (8, 8, 3)]
    # the drawn batch's own sample 1 is refused too: reported with the batch that drew it
    assert [(e["index"], e["iteration"]) for e in errors] == [(1, 0), (1, 1)]
    assert all("over the per-sample limit" in e["reason"] for e in errors)


def test_inflate_refuses_a_huge_declared_shape():
    data = np.array([0x10, 0], np.uint8)  # refused before the LZ4 data is read

    @pipeline_def(batch_size=1, num_threads=1, device_id=None, seed=0)
    def pipe():
        x = fn.external_source(source=lambda: [data])
        return fn.decoders.inflate(x, shape=[2**20, 2**20], dtype=np.float32)

    p = pipe()
    p.build()
    with pytest.raises(
        OperatorError, match=r"'shape' asks for an output of 1048576 x 1048576 float32"
    ):
        p.run()
    p.close()


@pytest.mark.parametrize("name", ["M", "T"])
def test_coord_transform_refuses_a_per_sample_nan(name):
    good = {"M": np.eye(2, dtype=np.float32), "T": np.zeros(2, np.float32)}
    bad = dict(good)
    bad[name] = np.full_like(good[name], np.nan)
    points = [np.array([[1, 2], [3, 4]], np.float32)] * 2

    @pipeline_def(batch_size=2, num_threads=1, device_id=None, seed=0)
    def pipe():
        m = fn.external_source(source=lambda: [good["M"], bad["M"]])
        t = fn.external_source(source=lambda: [good["T"], bad["T"]])
        return fn.coord_transform(fn.external_source(source=lambda: points), M=m, T=t)

    p = pipe()
    p.build()
    with pytest.raises(OperatorError, match=rf"sample 1 .*argument '{name}' must be finite"):
        p.run()
    p.close()


@pytest.mark.gpu
def test_gpu_resize_refuses_a_huge_output_before_allocating():
    @pipeline_def(batch_size=2, num_threads=1, device_id=0, seed=0)
    def pipe():
        x = fn.external_source(source=images)
        return fn.resize(x.gpu(), size=(100000, 100000))

    p = pipe()
    p.build()
    with pytest.raises(OperatorError, match=r"fn.resize.*sample 0: argument 'size' asks for"):
        p.run()
    p.close()
