"""GPU backends of fn.experimental.warp_perspective and fn.experimental.remap vs the CPU ones.

Tolerances: bilinear and cubic within one level for integer types and 1e-3 for float32
(the GPU interpolates in float32, OpenCV in its own order), except int16 + bilinear within
4: OpenCV's int16 bilinear path (the CPU backend, and DALI 2.4's CPU backend: equal to
chute's on these inputs) rounds its interpolation weights to 1/32 of a pixel, up to 3.4
levels off an exact float computation on 0-255 data; nearest neighbour equal on
more than 99% of pixels (OpenCV divides in float32, the GPU in double: ties may differ).
The tables are checked without a GPU at the end.
"""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from chute import fn, pipeline_def, types
from chute.ops.geometry.remap_gpu import SAMPLE_DTYPE, perspective_table, remap_table

SIZES = [(13, 17), (1, 1), (20, 9), (16, 16)]
PERSPECTIVE = np.array([[0.9, 0.1, 2.0], [-0.05, 1.1, -1.5], [0.001, -0.002, 1.0]], np.float32)
INTERPS = {"nn": types.INTERP_NN, "linear": types.INTERP_LINEAR, "cubic": types.INTERP_CUBIC}


def images(c=3, dtype=np.uint8, sizes=SIZES, seed=0):
    rng = np.random.default_rng(seed)
    hi = 200 if np.dtype(dtype).kind == "f" else min(np.iinfo(dtype).max, 255)
    shape = (lambda h, w: (h, w)) if c == 0 else (lambda h, w: (h, w, c))
    return [rng.uniform(0, hi, shape(h, w)).astype(dtype) for h, w in sizes]


def run_both(make, data, layout="HWC", **sources):
    results = []
    for device in ("cpu", "gpu"):

        @pipeline_def(batch_size=len(data), num_threads=2, device_id=0 if device == "gpu" else None)
        def pipe():
            x = fn.external_source(source=lambda: data, layout=layout)
            extra = {k: fn.external_source(source=lambda v=v: v) for k, v in sources.items()}
            if device == "gpu":
                x = x.gpu()
                extra = {k: v.gpu() if k.startswith("gpu_") else v for k, v in extra.items()}
            return make(x, **extra)

        p = pipe()
        p.build()
        (out,) = p.run()
        out = out.as_cpu() if hasattr(out, "as_cpu") else out
        results.append([np.asarray(out.at(i)) for i in range(len(data))])
    return results


def close(cpu, gpu, interp, dtype):
    for c, g in zip(cpu, gpu):
        assert c.shape == g.shape and c.dtype == g.dtype
        diff = np.abs(c.astype(np.float64) - g.astype(np.float64))
        if interp == "nn":
            assert np.mean(diff > 0) < 0.01
        elif np.dtype(dtype).kind == "f":
            assert diff.max() <= 1e-3 * max(1.0, np.abs(c).max())
        elif interp == "linear" and np.dtype(dtype) == np.int16:
            assert diff.max() <= 4 and diff.mean() < 1
        else:
            assert diff.max() <= 1


@pytest.mark.gpu
@pytest.mark.parametrize("interp", sorted(INTERPS))
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int16, np.float32])
@pytest.mark.parametrize("border", ["constant", "replicate", "reflect", "reflect_101", "wrap"])
def test_warp_perspective_gpu_matches_cpu(interp, dtype, border):
    data = images(3, dtype)
    rng = np.random.default_rng(1)
    ms = [
        (PERSPECTIVE + rng.uniform(-0.05, 0.05, (3, 3)) * [1, 1, 10]).astype(np.float32)
        for _ in data
    ]
    sizes = [np.array(s, np.float32) for s in ((10, 12), (3, 4), (20, 9), (15.5, 7))]
    cpu, gpu = run_both(
        lambda x, m, s: fn.experimental.warp_perspective(
            x,
            matrix=m,
            size=s,
            interp_type=INTERPS[interp],
            border_mode=border,
            fill_value=[3, 30, 90],
        ),
        data,
        m=ms,
        s=sizes,
    )
    close(cpu, gpu, interp, dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("c", [0, 1, 5])
@pytest.mark.parametrize("inverse", [True, False])
def test_warp_perspective_gpu_channels_matrix_input_inverse(c, inverse):
    data = images(c, np.uint8)
    ms = [PERSPECTIVE] * len(data)
    cpu, gpu = run_both(
        lambda x, gpu_m: fn.experimental.warp_perspective(
            x, gpu_m, inverse_map=inverse, pixel_origin="center"
        ),
        data,
        layout="HW" if c == 0 else "HWC",
        gpu_m=ms,
    )
    close(cpu, gpu, "linear", np.uint8)


@pytest.mark.gpu
def test_warp_perspective_gpu_sequences():
    seqs = [np.stack([img, img[::-1]]) for img in images(3, np.uint8)]
    cpu, gpu = run_both(
        lambda x: fn.experimental.warp_perspective(x, matrix=PERSPECTIVE.ravel().tolist()),
        seqs,
        layout="FHWC",
    )
    close(cpu, gpu, "linear", np.uint8)


@pytest.mark.gpu
@pytest.mark.parametrize("interp", sorted(INTERPS))
@pytest.mark.parametrize("origin", ["corner", "center"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_remap_gpu_matches_cpu(interp, origin, dtype):
    data = images(3, dtype)
    rng = np.random.default_rng(2)
    mx = [rng.uniform(-2, w + 2, (h + 3, w + 1)).astype(np.float32) for h, w in SIZES]
    my = [rng.uniform(-2, h + 2, (h + 3, w + 1)).astype(np.float32) for h, w in SIZES]
    cpu, gpu = run_both(
        lambda x, gpu_a, gpu_b: fn.experimental.remap(
            x, gpu_a, gpu_b, interp=INTERPS[interp], pixel_origin=origin
        ),
        data,
        gpu_a=mx,
        gpu_b=my,
    )
    close(cpu, gpu, interp, dtype)


@pytest.mark.gpu
def test_remap_gpu_sequences_per_frame_and_shared_maps():
    seqs = [np.stack([img, 255 - img]) for img in images(3, np.uint8)]
    rng = np.random.default_rng(4)
    per_x = [rng.uniform(0, w, (2, h, w)).astype(np.float32) for h, w in SIZES]
    per_y = [rng.uniform(0, h, (2, h, w)).astype(np.float32) for h, w in SIZES]
    cpu, gpu = run_both(
        lambda x, gpu_a, gpu_b: fn.experimental.remap(x, gpu_a, gpu_b),
        seqs,
        layout="FHWC",
        gpu_a=per_x,
        gpu_b=per_y,
    )
    close(cpu, gpu, "linear", np.uint8)
    cpu, gpu = run_both(
        lambda x, gpu_a, gpu_b: fn.experimental.remap(x, gpu_a, gpu_b),
        seqs,
        layout="FHWC",
        gpu_a=[m[0] for m in per_x],
        gpu_b=[m[0] for m in per_y],
    )
    close(cpu, gpu, "linear", np.uint8)


# ---- the tables, without a GPU ------------------------------------------------------------
def _images(hw, c=3):
    hw = np.asarray(hw, np.int64).reshape(-1, 2)
    n = len(hw)
    return SimpleNamespace(
        hw=hw, ptrs=np.arange(n, dtype=np.uint64) * 1000, rows=hw[:, 1] * c, channels=c
    )


def test_perspective_table_rows():
    imgs = _images([(4, 5), (0, 3)])
    m = np.stack([np.eye(3), 2 * np.eye(3)])
    t = perspective_table(imgs, m, np.array([[7, 8], [2, 2]]), "cubic", "wrap")
    assert t.dtype == SAMPLE_DTYPE and SAMPLE_DTYPE.itemsize == 152
    np.testing.assert_array_equal(t["in_row"], [15, 9])
    np.testing.assert_array_equal(t["out_h"], [7, 2])
    np.testing.assert_array_equal(t["interp"], [2, 2])
    # border codes follow the sorted names; an empty input reads the fill (constant, 0)
    np.testing.assert_array_equal(t["border"], [4, 0])
    np.testing.assert_array_equal(t["fill_off"], [0, 3])
    np.testing.assert_array_equal(t["m"][1], 2 * np.eye(3).ravel())


def test_remap_table_rows():
    imgs = _images([(4, 5)], c=1)
    t = remap_table(
        imgs, np.array([11], np.uint64), np.array([22], np.uint64), np.array([[6, 7]]), "nn", -0.5
    )
    assert (t["mx_ptr"][0], t["my_ptr"][0], t["map_row"][0]) == (11, 22, 7)
    assert (t["out_h"][0], t["out_w"][0], t["interp"][0], t["border"][0]) == (6, 7, 0, 0)
    assert t["shift"][0] == np.float32(-0.5)
