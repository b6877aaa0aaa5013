"""GPU backend of fn.clahe against the CPU one (exact: OpenCV's arithmetic and, for RGB
luminance, OpenCV's own Lab tables), and its plane table without a GPU."""

from __future__ import annotations

import numpy as np
import pytest
from test_clahe import smooth

from chute import fn, pipeline_def
from chute.ops.image.clahe_gpu import PLANE_DTYPE, plane_table


def run_both(graph, data, layout="HWC"):
    results = []
    for device in ("cpu", "gpu"):

        @pipeline_def(batch_size=len(data), num_threads=2, device_id=0 if device == "gpu" else None)
        def pipe():
            x = fn.external_source(source=lambda: data, layout=layout)
            return graph(x.gpu() if device == "gpu" else x)

        p = pipe()
        p.build()
        (out,) = p.run()
        out = out.as_cpu() if hasattr(out, "as_cpu") else out
        results.append([np.asarray(out.at(i)) for i in range(len(data))])
    return results


@pytest.mark.gpu
@pytest.mark.parametrize("c, luma", [(1, True), (3, True), (3, False)])
@pytest.mark.parametrize("clip", [2.0, 0.0])
def test_clahe_gpu_matches_cpu(c, luma, clip):
    data = [smooth(h, w, c, seed=i) for i, (h, w) in enumerate(((64, 96), (37, 53), (5, 9)))]
    data.append(np.zeros((0, 4, c), np.uint8))
    cpu, gpu = run_both(
        lambda x: fn.clahe(x, tiles_x=8, tiles_y=6, clip_limit=clip, luma_only=luma), data
    )
    for a, b in zip(cpu, gpu):
        assert a.shape == b.shape
        np.testing.assert_array_equal(b, a)


@pytest.mark.gpu
def test_clahe_gpu_grayscale_hw():
    data = [smooth(30, 40, 1)[:, :, 0], smooth(17, 9, 1, seed=3)[:, :, 0]]
    cpu, gpu = run_both(lambda x: fn.clahe(x, tiles_x=3, tiles_y=3, clip_limit=3.0), data, "HW")
    for a, b in zip(cpu, gpu):
        np.testing.assert_array_equal(b, a)


def test_plane_table_rows():
    table = plane_table(
        [100, 200],
        [300, 400],
        [(30, 30, 3, 3), (8, 8, 1, 1)],
        np.array([[37, 10], [8, 8]]),
        4,
        2,
        2.0,
    )
    assert table.dtype == PLANE_DTYPE
    # 37 x 10 with 4 x 2 tiles: 10 % 4 != 0, so both far sides grow: 12 / 4 = 3, 38 / 2 = 19
    assert (table["tw"][0], table["th"][0]) == (3, 19)
    assert table["clip"][0] == max(int(2.0 * 57 / 256), 1)
    assert (table["tw"][1], table["th"][1]) == (2, 4)
    np.testing.assert_array_equal(table["in_pix"], [3, 1])
    assert table["lut_scale"][1] == np.float32(255) / np.float32(8)
