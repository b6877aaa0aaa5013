"""GPU backend of fn.resize_crop_mirror / fn.fast_resize_crop_mirror with DALI's mirror bits,
crop rounding and regions, against the CPU backend (uint8 within 2 levels, mean under 0.5:
Pillow's path on the CPU rounds between its passes, the kernel does not)."""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, pipeline_def

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(5)
IMAGES = [
    RNG.integers(0, 256, (h, w, 3), dtype=np.uint8) for h, w in ((60, 80), (47, 33), (9, 120))
]


def run_both(graph):
    results = []
    for device in ("cpu", "gpu"):

        @pipeline_def(
            batch_size=len(IMAGES), num_threads=2, device_id=0 if device == "gpu" else None
        )
        def pipe():
            x = fn.external_source(source=lambda: IMAGES, layout="HWC")
            return graph(x.gpu() if device == "gpu" else x)

        p = pipe()
        p.build()
        (out,) = p.run()
        out = out.as_cpu() if hasattr(out, "as_cpu") else out
        results.append([np.asarray(out.at(i)) for i in range(len(IMAGES))])
    return results


@pytest.mark.parametrize("name", ["resize_crop_mirror", "fast_resize_crop_mirror"])
@pytest.mark.parametrize("mirror", [0, 1, 2, 3])
def test_mirror_bits_and_regions_gpu_match_cpu(name, mirror):
    op = getattr(fn, name)
    cpu, gpu = run_both(
        lambda x: op(
            x,
            size=[30, -40],
            crop=[20, 25],
            crop_pos_x=0.3,
            crop_pos_y=0.7,
            rounding="truncate",
            roi_start=[0.1, 0.9],
            roi_end=[0.8, 0.2],
            roi_relative=True,
            mirror=mirror,
        )
    )
    for c, g in zip(cpu, gpu):
        assert c.shape == g.shape
        d = np.abs(c.astype(int) - g.astype(int))
        assert d.max() <= 2 and d.mean() < 0.5
