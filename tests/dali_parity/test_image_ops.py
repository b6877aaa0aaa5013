"""chute's CPU image operators against DALI 2.4's on the same images.

Each case is one row of the parity table: the operator call (written once, run by both
libraries), its tolerance, and where the results are not equal, why. uint8 outputs
within 1 differ by rounding (float math in a different order, round-half-even vs
round-half-up). Cases that do not agree are strict xfails: the day chute matches DALI
there, the test says so.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("nvidia.dali")

from _harness import FLOAT_IMAGES, Case, compare, params, xfail

ROUNDING = "uint8 rounding of the same float math"
ANTIALIAS = (
    "downscaling filters: both antialias, with resampling kernels of slightly different "
    "support and weights (the outlier fraction is the pixels more than 1 apart; at most 4)"
)


CASES = [
    # geometry
    Case("flip horizontal", lambda L, x: L.fn.flip(x, horizontal=1)),
    Case("flip vertical", lambda L, x: L.fn.flip(x, horizontal=0, vertical=1)),
    Case("crop", lambda L, x: L.fn.crop(x, crop=(20, 24), crop_pos_x=0.3, crop_pos_y=0.7)),
    Case(
        "crop out of bounds, pad",
        lambda L, x: L.fn.crop(x, crop=(60, 64), out_of_bounds_policy="pad", fill_values=7),
    ),
    Case(
        "slice",
        lambda L, x: L.fn.slice(x, rel_start=(0.1, 0.2), rel_shape=(0.5, 0.5), axis_names="HW"),
    ),
    Case("pad", lambda L, x: L.fn.pad(x, fill_value=3, axes=(0,), shape=(70,))),
    Case("transpose", lambda L, x: L.fn.transpose(x, perm=[2, 0, 1])),
    Case(
        "paste",
        lambda L, x: L.fn.paste(x, ratio=1.5, paste_x=0.2, paste_y=0.8, fill_value=(1, 2, 3)),
    ),
    Case(
        "erase",
        lambda L, x: L.fn.erase(x, anchor=(5, 5), shape=(10, 10), axis_names="HW", fill_value=0),
    ),
    Case("sphere", lambda L, x: L.fn.sphere(x)),
    Case(
        "rotate, nearest",
        lambda L, x: L.fn.rotate(x, angle=-17, interp_type=L.types.INTERP_NN, fill_value=5),
    ),
    Case(
        "rotate 30, keep_size",
        lambda L, x: L.fn.rotate(x, angle=30, keep_size=True, fill_value=0),
        atol=1,
        why=ROUNDING,
    ),
    Case("rotate 30", lambda L, x: L.fn.rotate(x, angle=30, fill_value=0), atol=1, why=ROUNDING),
    Case(
        "warp_affine",
        lambda L, x: L.fn.warp_affine(x, matrix=[0.9, 0.1, 3, -0.2, 1.1, -2], fill_value=0),
        atol=1,
        why=ROUNDING,
    ),
    Case(
        "warp_affine, forward map, size",
        lambda L, x: L.fn.warp_affine(
            x, matrix=[0.9, 0.1, 3, -0.2, 1.1, -2], inverse_map=False, fill_value=0, size=(30, 40)
        ),
        atol=1,
        why=ROUNDING,
    ),
    Case(
        "water",
        lambda L, x: L.fn.water(x),
        atol=0,
        outliers=0.005,
        why="a few pixels at the image border, where the wave samples outside the image",
    ),
    # resize
    Case(
        "resize up, linear",
        lambda L, x: L.fn.resize(x, resize_x=97, resize_y=83),
        atol=1,
        why=ROUNDING,
    ),
    Case(
        "resize down, linear",
        lambda L, x: L.fn.resize(x, resize_x=23, resize_y=17),
        atol=1,
        outliers=0.04,
        why=ANTIALIAS,
    ),
    Case(
        "resize down, no antialias",
        lambda L, x: L.fn.resize(x, resize_x=23, resize_y=17, antialias=False),
        atol=1,
        why=ROUNDING,
    ),
    Case(
        "resize up, cubic",
        lambda L, x: L.fn.resize(x, resize_x=97, resize_y=83, interp_type=L.types.INTERP_CUBIC),
        atol=1,
        outliers=0.003,
        why="cubic weights rounded differently near edges (at most 3 apart)",
    ),
    Case(
        "resize down, cubic",
        lambda L, x: L.fn.resize(x, resize_x=23, resize_y=17, interp_type=L.types.INTERP_CUBIC),
        atol=1,
        outliers=0.015,
        why=ANTIALIAS,
    ),
    Case(
        "resize up, lanczos3",
        lambda L, x: L.fn.resize(x, resize_x=97, resize_y=83, interp_type=L.types.INTERP_LANCZOS3),
        atol=1,
        outliers=0.02,
        why="lanczos weights rounded differently near edges (at most 5 apart)",
    ),
    Case(
        "resize down, lanczos3",
        lambda L, x: L.fn.resize(x, resize_x=23, resize_y=17, interp_type=L.types.INTERP_LANCZOS3),
        atol=1,
        outliers=0.01,
        why=ANTIALIAS,
    ),
    Case(
        "resize up, triangular",
        lambda L, x: L.fn.resize(
            x, resize_x=97, resize_y=83, interp_type=L.types.INTERP_TRIANGULAR
        ),
        atol=1,
        why=ROUNDING,
    ),
    Case(
        "resize down, triangular",
        lambda L, x: L.fn.resize(
            x, resize_x=23, resize_y=17, interp_type=L.types.INTERP_TRIANGULAR
        ),
        atol=1,
        outliers=0.04,
        why=ANTIALIAS,
    ),
    Case(
        "resize up, gaussian",
        lambda L, x: L.fn.resize(x, resize_x=97, resize_y=83, interp_type=L.types.INTERP_GAUSSIAN),
        atol=1,
        why=ROUNDING,
    ),
    Case(
        "resize down, gaussian",
        lambda L, x: L.fn.resize(x, resize_x=23, resize_y=17, interp_type=L.types.INTERP_GAUSSIAN),
        atol=1,
        outliers=0.01,
        why=ANTIALIAS,
    ),
    Case(
        "resize_shorter",
        lambda L, x: L.fn.resize(x, resize_shorter=20),
        atol=1,
        outliers=0.04,
        why=ANTIALIAS,
    ),
    Case(
        "resize float",
        lambda L, x: L.fn.resize(x, size=(30, 30)),
        FLOAT_IMAGES,
        atol=0.004,
        outliers=0.04,
        why=ANTIALIAS,
    ),
    Case(
        "resize up, nearest",
        lambda L, x: L.fn.resize(x, resize_x=97, resize_y=83, interp_type=L.types.INTERP_NN),
    ),
    Case(
        "resize down, nearest",
        lambda L, x: L.fn.resize(x, resize_x=23, resize_y=17, interp_type=L.types.INTERP_NN),
    ),
    # normalization
    Case(
        "crop_mirror_normalize to float CHW",
        lambda L, x: L.fn.crop_mirror_normalize(
            x,
            crop=(24, 24),
            mean=[10.0, 20.0, 30.0],
            std=[50.0, 60.0, 70.0],
            mirror=1,
            output_layout="CHW",
            dtype=L.types.FLOAT,
        ),
        rtol=1e-6,
        atol=1e-6,
    ),
    Case(
        "crop_mirror_normalize to uint8",
        lambda L, x: L.fn.crop_mirror_normalize(
            x, mean=[10.0], std=[2.0], dtype=L.types.UINT8, scale=1.0, shift=100
        ),
    ),
    Case("normalize", lambda L, x: L.fn.normalize(x, axes=(0, 1)), FLOAT_IMAGES, atol=1e-5),
    # color
    Case("brightness", lambda L, x: L.fn.brightness(x, brightness=1.3), atol=1, why=ROUNDING),
    Case("contrast", lambda L, x: L.fn.contrast(x, contrast=1.5)),
    Case(
        "brightness_contrast",
        lambda L, x: L.fn.brightness_contrast(
            x, brightness=0.8, brightness_shift=0.1, contrast=1.3, contrast_center=100
        ),
        atol=1,
        why=ROUNDING,
    ),
    Case("saturation", lambda L, x: L.fn.saturation(x, saturation=0.4), atol=1, why=ROUNDING),
    Case("hue", lambda L, x: L.fn.hue(x, hue=30), atol=1, why=ROUNDING),
    Case("hsv", lambda L, x: L.fn.hsv(x, hue=20, saturation=1.2, value=0.9), atol=1, why=ROUNDING),
    Case(
        "color_twist",
        lambda L, x: L.fn.color_twist(x, brightness=1.1, contrast=0.9, saturation=1.2, hue=10),
        atol=1,
        why=ROUNDING,
    ),
    Case(
        "RGB to gray",
        lambda L, x: L.fn.color_space_conversion(
            x, image_type=L.types.RGB, output_type=L.types.GRAY
        ),
        atol=1,
        why=ROUNDING,
    ),
    Case(
        "RGB to BGR",
        lambda L, x: L.fn.color_space_conversion(
            x, image_type=L.types.RGB, output_type=L.types.BGR
        ),
    ),
    Case(
        "RGB to YCbCr",
        lambda L, x: L.fn.color_space_conversion(
            x, image_type=L.types.RGB, output_type=L.types.YCbCr
        ),
    ),
    Case(
        "YCbCr to RGB",
        lambda L, x: L.fn.color_space_conversion(
            x, image_type=L.types.YCbCr, output_type=L.types.RGB
        ),
    ),
    # filters and distortions
    Case(
        "gaussian_blur, sigma", lambda L, x: L.fn.gaussian_blur(x, sigma=1.5), atol=1, why=ROUNDING
    ),
    Case(
        "gaussian_blur, window",
        lambda L, x: L.fn.gaussian_blur(x, window_size=5),
        atol=1,
        why=ROUNDING,
    ),
    Case("laplacian", lambda L, x: L.fn.laplacian(x, window_size=3)),
    Case(
        "filter with a constant kernel input",
        lambda L, x: L.fn.filter(x, np.array([[0, 1, 0], [1, -4, 1], [0, 1, 0]], np.float32)),
    ),
    Case("equalize", lambda L, x: L.fn.equalize(x)),
    Case(
        "jpeg_compression_distortion", lambda L, x: L.fn.jpeg_compression_distortion(x, quality=50)
    ),
    xfail(
        Case(
            "grid_mask",
            lambda L, x: L.fn.grid_mask(x, ratio=0.5, tile=10, angle=0.3),
            why="the grid is laid out from a different origin and rotated about another point: "
            "whole tiles differ",
        )
    ),
]


@pytest.mark.parametrize("case", params(CASES))
def test_chute_matches_dali(case: Case) -> None:
    compare(case)
