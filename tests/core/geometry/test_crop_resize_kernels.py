"""random_resized_crop and resize_crop_mirror equal their unfused compositions."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from chute.ops.geometry.crop_kernels import crop, flip
from chute.ops.geometry.crop_resize_kernels import random_resized_crop, resize_crop_mirror
from chute.ops.geometry.resize_kernels import resize
from chute.runtime.crop_window import random_crop_window


@pytest.fixture
def image() -> np.ndarray:
    return np.random.default_rng(9).integers(0, 256, (37, 53, 3), dtype=np.uint8)


@pytest.mark.parametrize("mirror", [0, 1])
@pytest.mark.parametrize(
    "args",
    [
        {"resize_shorter": 30, "crop": (24, 24)},
        {"resize_x": 80, "resize_y": 60, "crop": (50, 31), "crop_pos_x": 0.2, "crop_pos_y": 0.9},
        {"size": (20, 29), "crop_h": 11, "crop_w": 17},
    ],
)
def test_resize_crop_mirror_equals_flip_crop_resize(image, args, mirror):
    size_args = {k: v for k, v in args.items() if not k.startswith("crop")}
    crop_args = {k: v for k, v in args.items() if k.startswith("crop")}
    steps = flip(
        crop(resize(image.astype(np.float32), **size_args), **crop_args), horizontal=mirror
    )
    fused = resize_crop_mirror(image.astype(np.float32), mirror=mirror, **args)
    # the same weights, summed in another order
    np.testing.assert_allclose(fused, steps, atol=1e-3)
    as_uint8 = resize_crop_mirror(image, mirror=mirror, **args)
    assert np.abs(as_uint8.astype(int) - steps.round().astype(int)).max() <= 1


def test_random_resized_crop_resizes_the_drawn_window(image):
    out = random_resized_crop(image, (24, 24), np.random.default_rng(11))
    y0, x0, h, w = random_crop_window(37, 53, rng=np.random.default_rng(11))
    box = (x0, y0, x0 + w, y0 + h)
    ref = np.asarray(Image.fromarray(image).resize((24, 24), Image.BILINEAR, box=box))
    assert out.shape == (24, 24, 3)
    assert np.abs(out.astype(int) - ref.astype(int)).max() <= 1


def test_random_resized_crop_arguments(image):
    full = random_resized_crop(
        image,
        16,
        np.random.default_rng(0),
        random_area=(1.0, 1.0),
        random_aspect_ratio=(53 / 37, 53 / 37),
    )
    np.testing.assert_array_equal(full, resize(image, size=(16, 16)))
    nn = random_resized_crop(
        image, (10, 12), np.random.default_rng(0), interp_type="nn", dtype=np.float32
    )
    assert nn.shape == (10, 12, 3) and nn.dtype == np.float32
    assert set(np.unique(nn)) <= set(np.unique(image))
    with pytest.raises(ValueError):
        random_resized_crop(image, (0, 10), np.random.default_rng(0))
