"""GPU backends of fn.filter, fn.laplacian, median_blur, dilate, erode against the CPU ones.

Ragged batches with a 1x1 image, per-sample arguments, every border mode, sequences.
float32 results agree within float rounding (the GPU sums in another order; laplacian
runs as one summed 2-D kernel), integer results within one level; median and morphology
are exact.
"""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, pipeline_def

pytestmark = pytest.mark.gpu

SIZES = [(1, 1), (5, 7), (33, 20), (2, 13), (17, 17)]


def images(c=3, dtype=np.uint8, sizes=SIZES, seed=0):
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "f":
        return [rng.uniform(-10, 10, (h, w, c)).astype(dtype) for h, w in sizes]
    return [rng.integers(0, 256, (h, w, c)).astype(dtype) for h, w in sizes]


def run_both(make, data, layout="HWC", **sources):
    results = []
    for device in ("cpu", "gpu"):

        @pipeline_def(
            batch_size=len(data),
            num_threads=2,
            device_id=0 if device == "gpu" else None,
            seed=3,
        )
        def pipe():
            x = fn.external_source(source=lambda: data, layout=layout)
            extra = {k: fn.external_source(source=lambda v=v: v) for k, v in sources.items()}
            if device == "gpu":
                x = x.gpu()
            return make(x, **extra)

        p = pipe()
        p.build()
        (out,) = p.run()
        out = out.as_cpu() if hasattr(out, "as_cpu") else out
        results.append([np.asarray(out.at(i)) for i in range(len(data))])
    return results


def close(cpu, gpu, dtype):
    for c, g in zip(cpu, gpu):
        assert c.shape == g.shape and c.dtype == g.dtype
        if np.dtype(dtype).kind == "f":
            np.testing.assert_allclose(g, c, atol=1e-3, rtol=1e-4)
        else:
            assert np.abs(g.astype(int) - c.astype(int)).max() <= 1


@pytest.mark.parametrize("border", ["reflect_101", "reflect_1001", "clamp", "wrap", "constant"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_filter_gpu_matches_cpu(border, dtype):
    data = images(3, dtype)
    rng = np.random.default_rng(1)
    shapes = [(3, 3), (5, 2), (1, 7), (4, 4), (3, 5)]
    ks = [rng.uniform(-0.5, 0.5, s).astype(np.float32) for s in shapes]
    anchors = [np.array(a, np.int32) for a in ([-1, -1], [4, 1], [0, 6], [3, 0], [1, 2])]
    fills = [np.array(v, dtype) for v in (3, 0, 100, 7, 1)]
    cpu, gpu = run_both(
        lambda x, k, a, f: fn.filter(x, k, f, anchor=a, border=border),
        data,
        k=ks,
        a=anchors,
        f=fills,
    )
    close(cpu, gpu, dtype)


def test_filter_gpu_valid_mode_and_dtype():
    data = images(1, np.uint8, sizes=[(9, 9), (12, 7)])
    ks = [np.full((3, 5), 0.2, np.float32)] * 2
    cpu, gpu = run_both(lambda x, k: fn.filter(x, k, mode="valid", dtype=np.float32), data, k=ks)
    close(cpu, gpu, np.float32)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_laplacian_gpu_matches_cpu(dtype):
    data = images(3, dtype)
    wins = [np.array(w, np.int32) for w in ([3], [5, 3], [7], [3, 5], [5])]
    cpu, gpu = run_both(
        lambda x, w: fn.laplacian(x, window_size=w, smoothing_size=[1, 3]), data, w=wins
    )
    close(cpu, gpu, dtype)
    cpu, gpu = run_both(lambda x: fn.laplacian(x, window_size=5, normalized_kernel=True), data)
    close(cpu, gpu, dtype)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_median_blur_gpu_matches_cpu(dtype):
    data = images(3, dtype)
    wins = [np.array(w, np.int32) for w in ([3, 3], [5, 5], [3, 5], [1, 3], [7, 7])]
    cpu, gpu = run_both(lambda x, w: fn.experimental.median_blur(x, window_size=w), data, w=wins)
    for c, g in zip(cpu, gpu):
        np.testing.assert_array_equal(g, c)


@pytest.mark.parametrize("op", ["dilate", "erode"])
@pytest.mark.parametrize("border", ["constant", "replicate", "reflect", "reflect_101", "wrap"])
def test_morphology_gpu_matches_cpu(op, border):
    data = images(3, np.uint8)
    sizes = [np.array(s, np.int32) for s in ([3, 3], [5, 3], [1, 4], [2, 2], [3, 1])]
    anchors = [np.array(a, np.int32) for a in ([-1, -1], [0, 2], [0, 0], [1, 1], [2, 0])]
    make = getattr(fn.experimental, op)
    cpu, gpu = run_both(
        lambda x, m, a: make(x, mask_size=m, anchor=a, iterations=2, border_mode=border),
        data,
        m=sizes,
        a=anchors,
    )
    for c, g in zip(cpu, gpu):
        np.testing.assert_array_equal(g, c)


def test_filters_gpu_sequences():
    rng = np.random.default_rng(6)
    seqs = [rng.uniform(0, 1, (f, 8, 9, 2)).astype(np.float32) for f in (3, 2)]
    # one filter per frame (a batch's samples share their rank, as external_source wants)
    ks = [rng.uniform(-1, 1, (f, 3, 3)).astype(np.float32) for f in (3, 2)]
    cpu, gpu = run_both(lambda x, k: fn.filter(x, k), seqs, layout="FHWC", k=ks)
    close(cpu, gpu, np.float32)
    # one filter for every frame of a sample
    ks = [rng.uniform(-1, 1, (3, 3)).astype(np.float32), np.ones((3, 3), np.float32)]
    cpu, gpu = run_both(lambda x, k: fn.filter(x, k), seqs, layout="FHWC", k=ks)
    close(cpu, gpu, np.float32)
    cpu, gpu = run_both(lambda x: fn.experimental.dilate(x), seqs, layout="FHWC")
    for c, g in zip(cpu, gpu):
        np.testing.assert_array_equal(g, c)
