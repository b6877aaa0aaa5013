"""fn.resize's size rules and filters, and fn.color_space_conversion, against DALI 2.4 (CPU).

Each case is one row of docs/parity.md. uint8 outputs within 1 differ by rounding (the same
float math summed in another order); YCbCr conversions are exact.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("nvidia.dali")

from _harness import Case, compare, photo

ROUNDING = "uint8 rounding of the same float sums"
# portrait, landscape, square and a thin strip: every size rule meets both orientations
SHAPES = [photo(h, w, i) for i, (h, w) in enumerate([(40, 57), (57, 40), (33, 33), (101, 7)])]


def _resize(**kwargs):
    return lambda L, x: L.fn.resize(x, **kwargs)


SIZE_CASES = [
    {"resize_shorter": 20},
    {"resize_shorter": 21.5},
    {"resize_longer": 30},
    {"resize_longer": 17.3},
    {"resize_shorter": 20, "max_size": 25},
    {"resize_shorter": 20, "max_size": (22, 35)},
    {"resize_longer": 20, "max_size": 15},
    {"resize_x": 30},
    {"resize_y": 25},
    {"resize_x": 30, "max_size": (20, 50)},
    {"resize_x": -30, "resize_y": 20},
    {"size": 24.5},
    {"size": (25, 25), "mode": "not_larger"},
    {"size": (25, 25), "mode": "not_smaller"},
    {"size": (25, 25), "mode": "stretch"},
    {"size": (25, 0), "mode": "stretch"},
    {"size": (0, 31), "mode": "not_larger"},
    {"size": (25, 31), "mode": "not_smaller", "max_size": (40, 40)},
    {"size": (30, 30), "mode": "not_smaller", "max_size": (30, 30)},
    {"resize_x": 30.4, "resize_y": 20.6},
    {"resize_x": 30.4, "resize_y": 20.6, "subpixel_scale": False},
    {"resize_x": 30, "resize_y": 20, "roi_start": (5, 5), "roi_end": (30, 40)},
    {
        "resize_x": 30,
        "resize_y": 20,
        "roi_start": (0.1, 0.2),
        "roi_end": (0.9, 0.5),
        "roi_relative": True,
    },
    {"resize_shorter": 13, "roi_start": (30, 5), "roi_end": (3, 30)},
    {"resize_x": 90, "resize_y": 70, "antialias": False},
]


@pytest.mark.parametrize("kwargs", SIZE_CASES, ids=str)
def test_resize_sizes(kwargs: dict) -> None:
    compare(Case(f"resize {kwargs}", _resize(**kwargs), inputs=SHAPES, atol=1, why=ROUNDING))


@pytest.mark.parametrize(
    "interp", ["INTERP_NN", "INTERP_LINEAR", "INTERP_CUBIC", "INTERP_LANCZOS3", "INTERP_GAUSSIAN"]
)
@pytest.mark.parametrize("size", [(17, 23), (97, 83), (30, 70)], ids=str)
def test_resize_filters(interp: str, size: tuple[int, int]) -> None:
    def define(L, x):
        return L.fn.resize(
            x, resize_y=size[0], resize_x=size[1], interp_type=getattr(L.types, interp)
        )

    # the Gaussian's weights come from DALI's 65-point table: 2 levels apart at a few pixels
    atol = 0 if interp == "INTERP_NN" else 1
    outliers = 0.002 if interp == "INTERP_GAUSSIAN" else 0.0
    compare(Case(f"resize {interp} {size}", define, inputs=SHAPES, atol=atol, outliers=outliers))


@pytest.mark.parametrize("size", [(17, 23), (97, 83)], ids=str)
def test_resize_float(size: tuple[int, int]) -> None:
    floats = [s.astype(np.float32) / 255 for s in SHAPES]
    define = _resize(resize_y=size[0], resize_x=size[1])
    compare(Case(f"resize float {size}", define, inputs=floats, atol=1e-5))


PAIRS = [
    ("RGB", "YCbCr"),
    ("BGR", "YCbCr"),
    ("YCbCr", "RGB"),
    ("YCbCr", "BGR"),
    ("YCbCr", "GRAY"),
    ("RGB", "GRAY"),
    ("BGR", "GRAY"),
    ("RGB", "BGR"),
]


@pytest.mark.parametrize(("src", "dst"), PAIRS)
def test_color_space_conversion(src: str, dst: str) -> None:
    rng = np.random.default_rng(3)
    images = [rng.integers(0, 256, (32, 48 + i, 3), dtype=np.uint8) for i in range(3)]

    def define(L, x):
        return L.fn.color_space_conversion(
            x, image_type=getattr(L.types, src), output_type=getattr(L.types, dst)
        )

    compare(Case(f"color_space_conversion {src} -> {dst}", define, inputs=images))


@pytest.mark.parametrize("dst", ["RGB", "BGR", "YCbCr"])
def test_color_space_from_gray(dst: str) -> None:
    gray = [np.arange(256, dtype=np.uint8).reshape(16, 16, 1)]

    def define(L, x):
        return L.fn.color_space_conversion(
            x, image_type=L.types.GRAY, output_type=getattr(L.types, dst)
        )

    compare(Case(f"color_space_conversion GRAY -> {dst}", define, inputs=gray))


def test_resize_crop_mirror_and_crop_then_resize() -> None:
    compare(
        Case(
            "resize_crop_mirror",
            lambda L, x: L.fn.resize_crop_mirror(x, resize_shorter=30, crop=(20, 20), mirror=1),
            atol=1,
            why=ROUNDING,
        )
    )
    compare(
        Case(
            "crop then resize",
            lambda L, x: L.fn.resize(L.fn.crop(x, crop=(30, 30)), size=(17, 17)),
            atol=1,
            why=ROUNDING,
        )
    )
