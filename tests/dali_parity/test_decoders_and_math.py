"""chute's CPU decoders, arithmetic, casts and reductions against DALI 2.4's.

Decoders get the same bytes (images encoded by Pillow); arithmetic and reductions the
same arrays. Tolerances and differences are documented per case, as in test_image_ops.
"""

from __future__ import annotations

import pytest

pytest.importorskip("nvidia.dali")

from _harness import FLOAT_IMAGES, IMAGES, Case, compare, encoded, params

GRAY = "RGB to gray conversion rounds differently: about half the pixels 1 apart"


def decode(fmt: str, output_type: str = "RGB", **options: object) -> list[Case]:
    data = [encoded(image, fmt, **options) for image in IMAGES]
    name = f"decoders.image {fmt} {options or ''} -> {output_type}".replace("  ", " ")
    gray = output_type == "GRAY" and fmt != "JPEG"  # JPEG gray is the decoder's own Y
    return [
        Case(
            name,
            lambda L, x: L.fn.decoders.image(x, output_type=getattr(L.types, output_type)),
            data,
            layout=None,
            atol=1 if gray else 0,
            why=GRAY if gray else "",
        )
    ]


JPEGS = [encoded(image, "JPEG", quality=85) for image in IMAGES]

DECODERS = [
    *decode("PNG"),
    *decode("PNG", "GRAY"),
    *decode("PNG", "BGR"),
    *decode("JPEG", quality=90),
    *decode("JPEG", "GRAY", quality=90),
    *decode("JPEG", quality=75, subsampling=0),
    *decode("JPEG", quality=95, subsampling=2),
    *decode("BMP"),
    *decode("BMP", "GRAY"),
    *decode("TIFF"),
    Case(
        "decoders.image_crop JPEG",
        lambda L, x: L.fn.decoders.image_crop(x, crop=(16, 20), crop_pos_x=0.5, crop_pos_y=0.5),
        JPEGS,
        layout=None,
    ),
    Case(
        "decoders.image_slice JPEG",
        lambda L, x: L.fn.decoders.image_slice(x, rel_start=(0.1, 0.2), rel_end=(0.8, 0.9)),
        JPEGS,
        layout=None,
    ),
    Case("peek_image_shape", lambda L, x: L.fn.peek_image_shape(x), JPEGS, layout=None),
]

MATH = [
    # DALI's constants: a Python int is INT32, a float FLOAT (no wrap-around in uint8 * 2)
    Case("uint8 * 2 + 1", lambda L, x: x * 2 + 1),
    Case("uint8 - 200", lambda L, x: x - 200),
    Case("uint8 // 3", lambda L, x: x // 3),
    Case("uint8 + 0.5", lambda L, x: x + 0.5),
    Case("bool * 2", lambda L, x: (x > 100) * 2),
    Case("int16 + 1", lambda L, x: L.fn.cast(x, dtype=L.types.INT16) + 1),
    Case("uint16 * 2.5", lambda L, x: L.fn.cast(x, dtype=L.types.UINT16) * 2.5),
    Case(
        "int8 * uint8 constant",
        lambda L, x: L.fn.cast(x, dtype=L.types.INT8) * L.types.Constant(2, L.types.UINT8),
    ),
    Case(
        "uint32 + int32",
        lambda L, x: L.fn.cast(x, dtype=L.types.UINT32) + L.fn.cast(x, dtype=L.types.INT32),
    ),
    Case("float64 + 0.1", lambda L, x: L.fn.cast(x, dtype=L.types.FLOAT64) + 0.1),
    Case("uint8 / 3", lambda L, x: x / 3),
    Case("uint8 > 100", lambda L, x: x > 100),
    Case("uint8 & 0x0F", lambda L, x: x & L.types.Constant(15, L.types.UINT8)),
    Case("uint8 + typed uint8 constant", lambda L, x: x + L.types.Constant(10, L.types.UINT8)),
    Case(
        "float * INT32 constant", lambda L, x: x * L.types.Constant(3, L.types.INT32), FLOAT_IMAGES
    ),
    Case("float - float", lambda L, x: x - x * 0.5, FLOAT_IMAGES),
    Case("math.sqrt", lambda L, x: L.math.sqrt(x), FLOAT_IMAGES),
    Case("math.exp", lambda L, x: L.math.exp(x), FLOAT_IMAGES, rtol=1e-6),
    Case("math.clamp", lambda L, x: L.math.clamp(x, 0.2, 0.7), FLOAT_IMAGES),
    Case(
        "math.abs of int16",
        lambda L, x: L.math.abs(
            L.fn.cast(x, dtype=L.types.INT16) - L.types.Constant(128, L.types.INT16)
        ),
    ),
    Case("cast to float16", lambda L, x: L.fn.cast(x, dtype=L.types.FLOAT16), FLOAT_IMAGES),
    Case("cast uint8 to int16", lambda L, x: L.fn.cast(x, dtype=L.types.INT16)),
    Case(
        "cast float to uint8",
        lambda L, x: L.fn.cast(x * 300.0 - 20.0, dtype=L.types.UINT8),
        FLOAT_IMAGES,
    ),
    Case("reshape", lambda L, x: L.fn.reshape(x, shape=[-1, 3])),
    Case("cat", lambda L, x: L.fn.cat(x, x, axis=2)),
    Case("stack", lambda L, x: L.fn.stack(x, x, axis=0)),
    Case(
        "one_hot",
        lambda L, x: L.fn.one_hot(L.fn.reductions.max(x, axes=(0, 1, 2)) // 32, num_classes=8),
    ),
    Case(
        "lookup_table",
        lambda L, x: L.fn.lookup_table(x // 64, keys=[0, 1, 2, 3], values=[10, 20, 30, 40]),
    ),
    Case(
        "coord_flip",
        lambda L, x: L.fn.coord_flip(
            L.fn.cast(L.fn.reshape(x[0:2, 0:2, 0:2], shape=(-1, 2)), dtype=L.types.FLOAT) / 255,
            flip_x=1,
        ),
    ),
    Case(
        "bb_flip",
        lambda L, x: L.fn.bb_flip(
            L.fn.cast(L.fn.reshape(x[0:2, 0:2, 0:1], shape=(1, 4)), dtype=L.types.FLOAT) / 1024,
            horizontal=1,
        ),
    ),
    Case("indexing and slicing", lambda L, x: x[2:10, ::3, 1]),
]

REDUCTIONS = [
    Case("reductions.sum, all axes", lambda L, x: L.fn.reductions.sum(x), FLOAT_IMAGES, rtol=1e-6),
    Case(
        "reductions.sum, axes (0, 1)",
        lambda L, x: L.fn.reductions.sum(x, axes=(0, 1)),
        FLOAT_IMAGES,
        rtol=1e-5,
        why="float32 sums in another order",
    ),
    Case(
        "reductions.sum of uint8 by axis_names",
        lambda L, x: L.fn.reductions.sum(x, axis_names="HW"),
    ),
    Case(
        "reductions.mean, all axes", lambda L, x: L.fn.reductions.mean(x), FLOAT_IMAGES, rtol=1e-6
    ),
    Case(
        "reductions.mean, axes (0, 1)",
        lambda L, x: L.fn.reductions.mean(x, axes=(0, 1)),
        FLOAT_IMAGES,
        rtol=1e-5,
    ),
    Case(
        "reductions.mean of uint8, keep_dims",
        lambda L, x: L.fn.reductions.mean(x, axes=2, keep_dims=True),
        rtol=1e-6,
    ),
    Case("reductions.min", lambda L, x: L.fn.reductions.min(x, axes=(0, 1))),
    Case("reductions.max", lambda L, x: L.fn.reductions.max(x)),
    Case(
        "reductions.mean_square",
        lambda L, x: L.fn.reductions.mean_square(x, axes=(0, 1)),
        FLOAT_IMAGES,
        rtol=1e-5,
    ),
    Case(
        "reductions.rms", lambda L, x: L.fn.reductions.rms(x, axes=(0, 1)), FLOAT_IMAGES, rtol=1e-5
    ),
    Case(
        "reductions.std_dev with the mean as input",
        lambda L, x: L.fn.reductions.std_dev(
            x, L.fn.reductions.mean(x, axes=(0, 1), keep_dims=True), axes=(0, 1)
        ),
        FLOAT_IMAGES,
        rtol=1e-5,
    ),
    Case(
        "reductions.variance with the mean as input",
        lambda L, x: L.fn.reductions.variance(x, L.fn.reductions.mean(x, keep_dims=True), ddof=1),
        FLOAT_IMAGES,
        rtol=1e-5,
    ),
]


@pytest.mark.parametrize("case", params(DECODERS))
def test_decoders_match_dali(case: Case) -> None:
    compare(case)


@pytest.mark.parametrize("case", params(MATH))
def test_arithmetic_and_tensor_ops_match_dali(case: Case) -> None:
    compare(case)


@pytest.mark.parametrize("case", params(REDUCTIONS))
def test_reductions_match_dali(case: Case) -> None:
    compare(case)
