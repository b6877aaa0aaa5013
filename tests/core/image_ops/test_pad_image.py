"""pad_image (the borders of fn.filter, fn.laplacian, ...) pads as np.pad does, on its
OpenCV fast path and off it (integer constant fills, pads longer than the image)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from chute.ops.image.filters_kernels import FILTER_BORDERS, pad_image


@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.float64, np.int32])
@pytest.mark.parametrize("shape", [(1, 1), (2, 3), (5, 7), (5, 7, 1), (6, 4, 3), (4, 5, 7)])
def test_pad_image_equals_np_pad(dtype, shape):
    rng = np.random.default_rng(3)
    image = (rng.random(shape) * 200).astype(dtype)
    for src, border, (a, b), fill in itertools.product(
        [image, image[::-1], np.swapaxes(image, 0, 1)],
        FILTER_BORDERS,
        [(0, 1), (1, 1), (3, 6)],
        [0.0, 7.5],
    ):
        pads = ((a, b // 2), (b, a // 3))
        mode = FILTER_BORDERS[border]
        full = pads + ((0, 0),) * (src.ndim - 2)
        try:
            kwargs = {"constant_values": fill} if mode == "constant" else {}
            expected = np.pad(src, full, mode=mode, **kwargs)
        except ValueError:  # np.pad cannot reflect an empty axis
            continue
        out = pad_image(src, pads, border, fill)
        assert out.dtype == expected.dtype
        np.testing.assert_array_equal(out, expected, err_msg=f"{border} {pads} {fill}")
