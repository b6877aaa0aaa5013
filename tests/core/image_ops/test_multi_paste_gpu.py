"""GPU backend of fn.multi_paste against the CPU one (exact), and its tables without a GPU."""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, pipeline_def, types
from chute.ops.image.paste_gpu import IMAGE_DTYPE, REGION_DTYPE, paste_tables
from chute.ops.image.paste_kernels import Region


def run_both(graph, inputs, layout="HWC", **sources):
    results = []
    for device in ("cpu", "gpu"):

        @pipeline_def(
            batch_size=len(inputs[0]), num_threads=2, device_id=0 if device == "gpu" else None
        )
        def pipe():
            xs = [fn.external_source(source=lambda b=b: b, layout=layout) for b in inputs]
            if device == "gpu":
                xs = [x.gpu() for x in xs]
            named = {k: fn.external_source(source=lambda v=v: v) for k, v in sources.items()}
            return graph(*xs, **named)

        p = pipe()
        p.build()
        (out,) = p.run()
        out = out.as_cpu() if hasattr(out, "as_cpu") else out
        results.append([np.asarray(out.at(i)) for i in range(len(inputs[0]))])
    return results


def _images(dtype, c=3, seed=0):
    rng = np.random.default_rng(seed)
    sizes = [(6, 7), (5, 9), (8, 8)]
    if np.dtype(dtype).kind == "f":
        return [rng.uniform(-300, 300, (h, w, c)).astype(dtype) for h, w in sizes]
    return [rng.integers(0, 120, (h, w, c)).astype(dtype) for h, w in sizes]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.uint8, np.int16, np.int32, np.float32])
@pytest.mark.parametrize("out_dtype", [None, types.UINT8, types.FLOAT])
def test_multi_paste_gpu_matches_cpu(dtype, out_dtype):
    data = _images(dtype)
    ids = [np.array(v, np.int32) for v in ([0, 2, 1], [], [2, 2])]
    anchors = [
        np.array(v, np.int32).reshape(-1, 2)
        for v in ([[0, 0], [1, 1], [2, 3]], [], [[0, 1], [3, 0]])
    ]
    shapes = [
        np.array(v, np.int32).reshape(-1, 2)
        for v in ([[5, 6], [4, 4], [3, 2]], [], [[8, 7], [5, 5]])
    ]
    kw = {} if out_dtype is None else {"dtype": out_dtype}
    cpu, gpu = run_both(
        lambda x, i, a, s: fn.multi_paste(
            x, in_ids=i, out_anchors=a, shapes=s, output_size=[9, 10], **kw
        ),
        [data],
        i=ids,
        a=anchors,
        s=shapes,
    )
    for c, g in zip(cpu, gpu):
        assert c.shape == g.shape and c.dtype == g.dtype
        np.testing.assert_array_equal(g, c)


@pytest.mark.gpu
def test_multi_paste_gpu_several_inputs_channels_and_sequences():
    a = _images(np.uint8, 1, seed=1)
    b = _images(np.uint8, 1, seed=2)
    same = [x[:5, :7] for x in a], [x[:5, :7] for x in b]
    cpu, gpu = run_both(lambda x, y: fn.multi_paste(x, y), list(same))
    for c, g in zip(cpu, gpu):
        np.testing.assert_array_equal(g, c)
    seqs = [np.stack([x[:5, :7], 255 - x[:5, :7]]) for x in _images(np.uint8, 3)]
    ids = [np.array(v, np.int32) for v in ([1, 0], [2], [])]
    anchors = [np.array(v, np.int32).reshape(-1, 2) for v in ([[0, 0], [1, 1]], [[1, 1]], [])]
    cpu, gpu = run_both(
        lambda x, i, a: fn.multi_paste(x, in_ids=i, out_anchors=a, output_size=[6, 8]),
        [seqs],
        layout="FHWC",
        i=ids,
        a=anchors,
    )
    for c, g in zip(cpu, gpu):
        assert c.shape == g.shape
        np.testing.assert_array_equal(g, c)


def test_paste_tables_rows():
    plans = [
        ((2, 4, 5, 3), np.dtype(np.uint8), [Region((0, 1), (1, 2), (2, 3), (0, 1))]),
        ((4, 5, 3), np.dtype(np.uint8), []),
    ]
    shapes = [[(2, 4, 5, 3), (2, 6, 7, 3)]]
    ptrs = [[1000, 5000]]
    images, regions, starts = paste_tables(plans, ptrs, shapes, itemsize=1)
    assert images.dtype == IMAGE_DTYPE and regions.dtype == REGION_DTYPE
    assert starts == [0, 120, 180]
    np.testing.assert_array_equal(images["out_off"], [0, 60, 120])
    np.testing.assert_array_equal(images["first"], [0, 1, 2])
    np.testing.assert_array_equal(images["count"], [1, 1, 0])
    # frame 1 of source (0, 1) starts 6 * 7 * 3 bytes after frame 0
    np.testing.assert_array_equal(regions["src_ptr"], [5000, 5000 + 126])
    np.testing.assert_array_equal(regions["src_row"], [21, 21])
    assert tuple(regions[0][["iy", "ix", "h", "w", "oy", "ox"]]) == (1, 2, 2, 3, 0, 1)


def test_paste_tables_reproduce_the_cpu_backend():
    """paste_batch's rule over the tables, in NumPy: the last region covering a pixel wins."""
    from chute.ops.image import paste_kernels

    a = np.arange(4 * 5 * 2, dtype=np.uint8).reshape(4, 5, 2)
    b = (100 + np.arange(4 * 5 * 2)).astype(np.uint8).reshape(4, 5, 2)
    regions = [
        Region((0, 0), (0, 0), (4, 5), (0, 0)),
        Region((0, 1), (1, 1), (3, 3), (1, 2)),
    ]
    plans = [((6, 7, 2), np.dtype(np.uint8), regions)]
    flat = {0: a.ravel(), 1: b.ravel()}
    images, table, starts = paste_tables(plans, [[0, 1]], [[a.shape, b.shape]], itemsize=1)
    out = np.zeros(starts[-1], np.uint8)
    for im in images:
        c, w = int(im["c"]), int(im["out_w"])
        for y in range(int(im["out_h"])):
            for x in range(w):
                at = int(im["out_off"]) + (y * w + x) * c
                for r in table[int(im["first"]) : int(im["first"]) + int(im["count"])][::-1]:
                    if r["oy"] <= y < r["oy"] + r["h"] and r["ox"] <= x < r["ox"] + r["w"]:
                        src = (y - r["oy"] + r["iy"]) * r["src_row"] + (x - r["ox"] + r["ix"]) * c
                        out[at : at + c] = flat[int(r["src_ptr"])][src : src + c]
                        break
    cpu = paste_kernels.paste(np.zeros((6, 7, 2), np.uint8), regions, lambda s: (a, b)[s[1]])
    np.testing.assert_array_equal(out.reshape(6, 7, 2), cpu)
