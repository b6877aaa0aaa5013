"""fn.resize_crop_mirror's DALI arguments (mirror bits, rounding, regions) and
fn.fast_resize_crop_mirror (the same operator, antialias off by default).

Expected values come from the unfused composition: fn.resize's kernel on the region,
then the crop and the flips done in NumPy, in float32 (one resampling either way, so
they agree within float rounding).
"""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, pipeline_def
from chute.ops.geometry.resize_kernels import resize
from chute.runtime.errors import OperatorError

RNG = np.random.default_rng(3)
IMAGES = [
    RNG.uniform(0, 255, (60, 80, 3)).astype(np.float32),
    RNG.uniform(0, 255, (47, 33, 3)).astype(np.float32),
]


def run(graph, images=IMAGES, **sources):
    @pipeline_def(batch_size=len(images), num_threads=2, device_id=None)
    def pipe():
        x = fn.external_source(source=lambda: images, layout="HWC")
        named = {k: fn.external_source(source=lambda v=v: v) for k, v in sources.items()}
        return graph(x, **named)

    p = pipe()
    p.build()
    (out,) = p.run()
    return [np.asarray(out.at(i)) for i in range(len(images))]


def composed(
    image, crop, pos=(0.5, 0.5), mirror=0, rounding="round", antialias=True, **resize_args
):
    resized = resize(image, antialias=antialias, **resize_args)
    h, w = crop
    ry, rx = (
        (resized.shape[0] - h) * np.float32(pos[0]),
        (resized.shape[1] - w) * np.float32(pos[1]),
    )
    cut = (lambda v: int(np.floor(v + 0.5))) if rounding == "round" else int
    y0, x0 = cut(float(ry)), cut(float(rx))
    out = resized[y0 : y0 + h, x0 : x0 + w]
    if mirror & 1:
        out = out[:, ::-1]
    if mirror & 2:
        out = out[::-1]
    return out


@pytest.mark.parametrize("mirror", [0, 1, 2, 3])
def test_mirror_bits_flip_horizontally_and_vertically(mirror):
    out = run(lambda x: fn.resize_crop_mirror(x, size=[40, 50], crop=[30, 36], mirror=mirror))
    for a, img in zip(out, IMAGES):
        np.testing.assert_allclose(
            a, composed(img, (30, 36), mirror=mirror, size=[40, 50]), atol=1e-3
        )


def test_crop_position_is_float32_and_rounding_applies():
    # (20 - 15) * float32(0.7) = 3.4999998: "round" gives row 3 (DALI's), not 4
    out = run(lambda x: fn.resize_crop_mirror(x, size=[20, 25], crop=[15, 20], crop_pos_y=0.7))
    for a, img in zip(out, IMAGES):
        resized = resize(img, size=[20, 25])
        np.testing.assert_allclose(a, resized[3:18, 3:23], atol=1e-3)  # x: 2.5 -> 3
    out = run(
        lambda x: fn.resize_crop_mirror(
            x, size=[90, 100], crop=[50, 50], crop_pos_x=0.25, rounding="truncate"
        )
    )
    for a, img in zip(out, IMAGES):
        resized = resize(img, size=[90, 100])
        np.testing.assert_allclose(a, resized[20:70, 12:62], atol=1e-3)  # 12.5 -> 12


def test_regions_of_interest():
    out = run(
        lambda x: fn.resize_crop_mirror(
            x, size=[30, 30], crop=[20, 20], roi_start=[5, 10], roi_end=[40, 30], mirror=1
        )
    )
    for a, img in zip(out, IMAGES):
        ref = composed(img, (20, 20), mirror=1, size=[30, 30], roi_start=[5, 10], roi_end=[40, 30])
        np.testing.assert_allclose(a, ref, atol=1e-3)


def test_fast_variant_turns_antialias_off_by_default():
    fast = run(lambda x: fn.fast_resize_crop_mirror(x, resize_shorter=20, crop=[15, 15]))
    off = run(lambda x: fn.resize_crop_mirror(x, resize_shorter=20, crop=[15, 15], antialias=False))
    on = run(lambda x: fn.resize_crop_mirror(x, resize_shorter=20, crop=[15, 15]))
    on_fast = run(
        lambda x: fn.fast_resize_crop_mirror(x, resize_shorter=20, crop=[15, 15], antialias=True)
    )
    for f, a, b, c in zip(fast, off, on, on_fast):
        np.testing.assert_array_equal(f, a)
        np.testing.assert_array_equal(c, b)
        assert np.abs(f - b).max() > 1.0  # shrinking 3x: the filters differ
    for a, img in zip(fast, IMAGES):
        ref = composed(img, (15, 15), antialias=False, resize_shorter=20)
        np.testing.assert_allclose(a, ref, atol=1e-3)


def test_resize_crop_mirror_argument_errors():
    with pytest.raises(OperatorError, match="depthwise"):
        run(lambda x: fn.resize_crop_mirror(x, size=[20, 20], crop=[10, 10], mirror=4))
    with pytest.raises(ValueError, match="'resize_z' applies to volumes"):
        run(lambda x: fn.fast_resize_crop_mirror(x, size=[20, 20], crop=[10, 10], resize_z=5))
    with pytest.raises(ValueError, match="roi_start and roi_end"):
        run(lambda x: fn.resize_crop_mirror(x, size=[20, 20], crop=[10, 10], roi_start=[0, 0]))
    with pytest.raises(ValueError, match="rounding"):
        run(lambda x: fn.resize_crop_mirror(x, size=[20, 20], crop=[10, 10], rounding="ceil"))
