"""GPU backend of fn.tensor_resize against the CPU one, and its pass tables without a GPU.

Tolerances: float32 within 1e-4 of the range (the same weights, summed in the same
order); uint8 images within 2 levels with a mean under 0.5 (the CPU resamples images
through fn.resize's native uint8 path, which rounds between its passes).
"""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, pipeline_def, types
from chute.ops.geometry.tensor_resize_gpu import PASS_DTYPE, pass_table


def run_both(graph, data, layout="", **sources):
    results = []
    for device in ("cpu", "gpu"):

        @pipeline_def(batch_size=len(data), num_threads=2, device_id=0 if device == "gpu" else None)
        def pipe():
            x = fn.external_source(source=lambda: data, layout=layout)
            named = {k: fn.external_source(source=lambda v=v: v) for k, v in sources.items()}
            return graph(x.gpu() if device == "gpu" else x, **named)

        p = pipe()
        p.build()
        (out,) = p.run()
        out = out.as_cpu() if hasattr(out, "as_cpu") else out
        results.append([np.asarray(out.at(i)) for i in range(len(data))])
    return results


def close(cpu, gpu):
    for c, g in zip(cpu, gpu):
        assert c.shape == g.shape and c.dtype == g.dtype
        if c.size == 0:
            continue
        diff = np.abs(c.astype(np.float64) - g.astype(np.float64))
        if c.dtype == np.float32:
            assert diff.max() <= 1e-4 * max(1.0, np.abs(c).max())
        else:
            assert diff.max() <= 2 and diff.mean() < 0.5


@pytest.mark.gpu
@pytest.mark.parametrize("interp", [types.INTERP_NN, types.INTERP_LINEAR, types.INTERP_CUBIC])
@pytest.mark.parametrize("antialias", [True, False])
def test_tensor_resize_gpu_volumes_match_cpu(interp, antialias):
    rng = np.random.default_rng(0)
    data = [
        rng.uniform(-5, 5, s).astype(np.float32) for s in ((4, 6, 5, 2), (7, 3, 9, 2), (1, 1, 1, 2))
    ]
    scales = [np.array(v, np.float32) for v in ((2, 0.5, 1.3), (0.6, 3, 0.4), (2, 2, 2))]
    cpu, gpu = run_both(
        lambda x, s: fn.tensor_resize(
            x, scales=s, axes=[0, 1, 2], interp_type=interp, antialias=antialias
        ),
        data,
        s=scales,
    )
    close(cpu, gpu)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.int16, np.float32])
def test_tensor_resize_gpu_images_rois_and_dtypes(dtype):
    rng = np.random.default_rng(1)
    hi = 200 if dtype == np.float32 else 250
    data = [rng.uniform(0, hi, (h, w, 3)).astype(dtype) for h, w in ((30, 40), (17, 9), (1, 5))]
    cpu, gpu = run_both(
        lambda x: fn.tensor_resize(
            x,
            sizes=[11, 23],
            axis_names="HW",
            roi_start=[0.1, 0.9],
            roi_end=[0.8, 0.1],
            roi_relative=True,
        ),
        data,
        layout="HWC",
    )
    close(cpu, gpu)
    cpu, gpu = run_both(
        lambda x: fn.tensor_resize(x, scales=[1.0, 1.0], axes=[0, 1], dtype=types.FLOAT),
        data,
        layout="HWC",
    )
    close(cpu, gpu)  # nothing resized: one copy pass that converts


@pytest.mark.gpu
def test_tensor_resize_gpu_one_dimensional_and_empty():
    data = [
        np.arange(10, dtype=np.float32),
        np.zeros(0, np.float32),
        np.arange(3, dtype=np.float32),
    ]
    cpu, gpu = run_both(lambda x: fn.tensor_resize(x, sizes=[7]), data)
    close(cpu, gpu)


def test_pass_table_rows():
    first = np.array([0, 1, 3], np.int64)
    w = np.array([[0.5, 0.5], [1.0, 0.0], [0.25, 0.75]])
    ident = (np.arange(4), np.ones((4, 1)))
    table, weights, firsts, offsets = pass_table(
        [100, 200], [(2, 5, 3), (4, 6)], [3, 4], 1, [(first, w), ident]
    )
    assert table.dtype == PASS_DTYPE
    np.testing.assert_array_equal(table["outer"], [2, 4])
    np.testing.assert_array_equal(table["inner"], [3, 1])
    np.testing.assert_array_equal(table["in_len"], [5, 6])
    np.testing.assert_array_equal(table["out_len"], [3, 4])
    np.testing.assert_array_equal(table["taps"], [2, 1])
    np.testing.assert_array_equal(table["w_off"], [0, 6])
    np.testing.assert_array_equal(table["f_off"], [0, 3])
    assert offsets == [0, 18, 34]
    np.testing.assert_array_equal(table["out_off"], [0, 18])
    assert weights.dtype == np.float32 and firsts.dtype == np.int32
    np.testing.assert_array_equal(firsts[:7], [0, 1, 3, 0, 1, 2, 3])


def _mirror_pass(table, weights, firsts, sources, out_len_total):
    """resample_axis over ``table`` in NumPy: ``sources[ptr]`` is the flat array a pointer names."""
    out = np.zeros(out_len_total, np.float32)
    for s in table:
        src = sources[int(s["in_ptr"])]
        outer, inner, n_in, n_out, taps = (
            int(s[k]) for k in ("outer", "inner", "in_len", "out_len", "taps")
        )
        block = src.reshape(outer, n_in, inner).astype(np.float32)
        res = np.zeros((outer, n_out, inner), np.float32)
        for j in range(n_out):
            first = firsts[s["f_off"] + j]
            for t in range(taps):
                k = first + t
                w = weights[s["w_off"] + j * taps + t]
                if k < n_in and w != 0:
                    res[:, j] += w * block[:, k]
        out[s["out_off"] : s["out_off"] + res.size] = res.ravel()
    return out


def test_pass_tables_reproduce_the_cpu_backend():
    from chute.ops.geometry import tensor_resize_kernels as trk
    from chute.ops.geometry._resample import axis_weights

    rng = np.random.default_rng(4)
    vol = rng.uniform(-3, 3, (5, 7, 4)).astype(np.float32)
    plan = trk.tensor_resize_plan(vol.shape, [0, 1, 2], scales=[1.6, 0.5, 2.0])
    filters = ["linear", "cubic", "linear"]
    data, shape = vol.ravel(), vol.shape
    for d in trk.changed_axes(vol.shape, plan):
        lo, hi = plan.roi[d]
        wts = axis_weights(shape[d], plan.out_shape[d], lo, hi, filters[d], True)
        table, weights, firsts, offsets = pass_table([1], [shape], [plan.out_shape[d]], d, [wts])
        data = _mirror_pass(table, weights, firsts, {1: data}, offsets[-1])
        shape = (*shape[:d], plan.out_shape[d], *shape[d + 1 :])
    ref = trk.resample_axes(vol, plan, filters)
    np.testing.assert_allclose(data.reshape(shape), ref, atol=1e-5)
