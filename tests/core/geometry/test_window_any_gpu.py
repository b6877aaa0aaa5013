"""fn.crop / fn.pad / fn.paste on the GPU for types the window kernel does not read
(chute.ops.geometry.window_any_gpu): equal to the CPU backend, element for element."""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, pipeline_def

pytestmark = pytest.mark.gpu

RNG = np.random.default_rng(3)
DTYPES = [np.int16, np.uint16, np.int32, np.float64]


def images(dtype, channels):
    shapes = [(20, 31), (7, 9), (33, 12)]
    extra = (channels,) if channels else ()
    if np.dtype(dtype).kind == "f":
        return [RNG.random(s + extra).astype(dtype) for s in shapes]
    info = np.iinfo(dtype)
    lo, hi = max(info.min, -(2**30)), min(info.max, 2**30)
    return [RNG.integers(lo, hi, s + extra, dtype=dtype) for s in shapes]


def run_both(data, graph):
    layout = "HWC" if data[0].ndim == 3 else "HW"
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


def same(cpu, gpu):
    for c, g in zip(cpu, gpu):
        assert c.dtype == g.dtype and c.shape == g.shape
        np.testing.assert_array_equal(c, g)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("channels", [0, 1, 3])
def test_crop_out_of_bounds_pad_matches_cpu(dtype, channels):
    data = images(dtype, channels)
    same(
        *run_both(
            data,
            lambda x: fn.crop(
                x,
                crop=(15, 40),
                crop_pos_x=0.2,
                crop_pos_y=0.9,
                out_of_bounds_policy="pad",
                fill_values=7,
            ),
        )
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("channels", [0, 3])
def test_pad_align_and_fill_match_cpu(dtype, channels):
    data = images(dtype, channels)
    same(*run_both(data, lambda x: fn.pad(x, axis_names="HW", align=(16, 8), fill_value=-5)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_paste_matches_cpu(dtype):
    data = images(dtype, 3)
    same(*run_both(data, lambda x: fn.paste(x, ratio=1.7, paste_x=0.3, paste_y=0.8, fill_value=9)))
