"""Saturating dtype conversion: rounding mode, clamping, exact ties, out=."""

from __future__ import annotations

import numpy as np
import pytest

from chute.ops.image.convert_kernels import cast, convert_saturate, full_range, half_range


def _round_half_away(x: np.ndarray) -> np.ndarray:
    """Reference rounding in Python's exact decimal-free way: sign * floor(|x| + 1/2) in float64."""
    x = np.asarray(x, dtype=np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def test_ties_round_half_away_from_zero() -> None:
    x = np.array([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 126.5, -127.5], dtype=np.float32)
    assert convert_saturate(x, np.int16).tolist() == [1, 2, 3, -1, -2, -3, 127, -128]


def test_value_just_below_a_tie_rounds_down() -> None:
    # 0.5 - 2**-25 is a float32; x + 0.5 in float32 would round it up to 1.
    x = np.array([np.nextafter(np.float32(0.5), np.float32(0))], dtype=np.float32)
    assert convert_saturate(x, np.uint8)[0] == 0


@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.uint16, np.int16, np.int32])
def test_saturates_to_type_range(dtype: type) -> None:
    info = np.iinfo(dtype)
    x = np.array([-1e12, info.min - 0.6, info.max + 0.6, 1e12, np.inf, -np.inf], dtype=np.float64)
    got = convert_saturate(x, dtype)
    assert got.dtype == dtype
    assert got.tolist() == [info.min, info.min, info.max, info.max, info.max, info.min]


@pytest.mark.parametrize("src", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("dtype", [np.uint8, np.int8, np.int16])
def test_random_values_match_reference(src: type, dtype: type) -> None:
    rng = np.random.default_rng(1)
    x = (rng.normal(0, 120, size=(31, 17, 3)) + rng.integers(-3, 3, (31, 17, 3)) * 0.5).astype(src)
    info = np.iinfo(dtype)
    want = np.clip(_round_half_away(x), info.min, info.max).astype(dtype)
    np.testing.assert_array_equal(convert_saturate(x, dtype), want)


def test_truncate_rounds_toward_zero() -> None:
    x = np.array([1.9, -1.9, 255.9, -0.7], dtype=np.float32)
    assert convert_saturate(x, np.int16, rounding="truncate").tolist() == [1, -1, 255, 0]
    with pytest.raises(ValueError, match="rounding"):
        convert_saturate(x, np.int16, rounding="floor")


def test_integer_to_narrower_integer_clamps() -> None:
    x = np.array([-300, -5, 0, 200, 300], dtype=np.int32)
    assert convert_saturate(x, np.uint8).tolist() == [0, 0, 0, 200, 255]
    assert convert_saturate(x, np.int8).tolist() == [-128, -5, 0, 127, 127]


def test_out_is_written_in_place() -> None:
    x = np.array([[1.5, -3.2], [400.0, 7.49]], dtype=np.float32)
    out = np.zeros((2, 2), dtype=np.uint8)
    res = convert_saturate(x, np.uint8, out=out)
    assert res is out
    assert out.tolist() == [[2, 0], [255, 7]]
    with pytest.raises(TypeError):
        convert_saturate(x, np.uint8, out=np.zeros((2, 2), np.int8))


def test_float_to_float_is_plain_cast_and_cast_alias() -> None:
    x = np.array([0.1, 70000.0], dtype=np.float64)
    assert cast(x, np.float32).dtype == np.float32
    assert np.isinf(cast(x, np.float16)[1])
    assert cast(np.array([2.5, -2.5]), np.int32).tolist() == [3, -3]


def test_type_ranges() -> None:
    assert full_range(np.uint8) == 255 and full_range(np.float32) == 1.0
    assert half_range(np.uint8) == 128 and half_range(np.int8) == 64
    assert half_range(np.uint16) == 32768 and half_range(np.float16) == 0.5


def test_float32_to_uint8_rounds_every_tie_and_its_neighbours_half_away() -> None:
    """The three-pass float32 -> uint8 path against float64 half-away rounding: every tie
    k + 0.5 and the 64 float32 values on either side of it, and all of [-1, 2]."""
    ties = np.arange(-2, 258, dtype=np.float32) + np.float32(0.5)
    bits = ties.view(np.int32)[:, None] + np.arange(-64, 65, dtype=np.int32)[None, :]
    near = bits.view(np.float32).ravel()
    low = np.float32(-1.0).view(np.int32)
    small = np.concatenate(
        [
            np.arange(0, np.float32(2.0).view(np.int32), 9973, dtype=np.int32).view(np.float32),
            -np.arange(0, low & 0x7FFFFFFF, 9973, dtype=np.int32).view(np.float32),
            np.nextafter(np.float32([0.5, 1.5]), np.float32(0)),
        ]
    )
    x = np.concatenate([near, small, np.float32([-1e9, 1e9, 255.49998, 254.5])])
    want = np.clip(_round_half_away(x), 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(convert_saturate(x, np.uint8), want)
    np.testing.assert_array_equal(convert_saturate(x.copy(), np.uint8, overwrite=True), want)
    out = np.empty(x.shape, np.uint8)
    assert convert_saturate(x, np.uint8, out=out) is out
    np.testing.assert_array_equal(out, want)
