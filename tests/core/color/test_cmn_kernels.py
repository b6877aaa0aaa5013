"""crop_mirror_normalize: layouts, dtypes, mirror, pad_output, out-of-bounds, out=."""

from __future__ import annotations

import numpy as np
import pytest

from chute.ops.image.cmn_kernels import crop_mirror_normalize, crop_window

RNG = np.random.default_rng(9)
MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def _round_sat(x: np.ndarray, dtype: type) -> np.ndarray:
    info = np.iinfo(dtype)
    return np.clip(np.sign(x) * np.floor(np.abs(x) + 0.5), info.min, info.max).astype(dtype)


def _reference(
    img: np.ndarray,
    anchor: tuple[int, int],
    size: tuple[int, int],
    mirror: bool,
    mean: object,
    std: object,
    scale: float = 1.0,
    shift: float = 0.0,
    fill: float = 0.0,
) -> np.ndarray:
    """Float64 HWC result, padding outside the image with ``fill`` (output units)."""
    h, w = size
    c = img.shape[2]
    out = np.full((h, w, c), fill, dtype=np.float64)
    for y in range(h):
        sy = anchor[0] + y
        if not 0 <= sy < img.shape[0]:
            continue
        for x in range(w):
            sx = anchor[1] + x
            if 0 <= sx < img.shape[1]:
                out[y, x] = (img[sy, sx] - np.asarray(mean)) / np.asarray(std) * scale + shift
    return out[:, ::-1] if mirror else out


def _to(ref: np.ndarray, layout: str, dtype: type) -> np.ndarray:
    if layout == "CHW":
        ref = ref.transpose(2, 0, 1)
    if np.dtype(dtype).kind == "f":
        return ref.astype(dtype)
    return _round_sat(ref, dtype)


@pytest.mark.parametrize("layout", ["CHW", "HWC"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.uint8, np.int8])
@pytest.mark.parametrize("mirror", [False, True])
@pytest.mark.parametrize("in_dtype", [np.uint8, np.float32])
def test_matches_reference(layout: str, dtype: type, mirror: bool, in_dtype: type) -> None:
    img = RNG.integers(0, 256, size=(41, 57, 3)).astype(in_dtype)
    scale, shift = (
        (64.0, 128.0) if dtype == np.uint8 else (32.0, 0.0) if dtype == np.int8 else (1, 0)
    )
    got = crop_mirror_normalize(
        img, crop_h=23, crop_w=31, crop_pos_x=0.3, crop_pos_y=0.8, mirror=mirror,
        mean=MEAN, std=STD, scale=scale, shift=shift, dtype=dtype, output_layout=layout,
    )  # fmt: skip
    anchor = (int(np.floor(0.8 * 18 + 0.5)), int(np.floor(0.3 * 26 + 0.5)))
    want = _to(_reference(img, anchor, (23, 31), mirror, MEAN, STD, scale, shift), layout, dtype)
    assert got.dtype == dtype and got.shape == want.shape
    if in_dtype == np.uint8:
        np.testing.assert_array_equal(got, want)  # exact float64 tables
    elif np.dtype(dtype).kind == "f":
        np.testing.assert_allclose(
            got.astype(np.float64), want, rtol=1e-3 if dtype == np.float16 else 1e-6, atol=1e-6
        )
    else:
        assert np.abs(got.astype(int) - want).max() <= 1  # float32 arithmetic near a tie


def test_no_crop_is_whole_image_and_scalar_mean() -> None:
    img = RNG.integers(0, 256, size=(7, 9, 1), dtype=np.uint8)
    got = crop_mirror_normalize(img, mean=100.0, std=50.0)
    np.testing.assert_array_equal(
        got, ((img.astype(np.float64) - 100) / 50).transpose(2, 0, 1).astype(np.float32)
    )
    gray2d = crop_mirror_normalize(
        img[..., 0], mean=100.0, std=50.0, output_layout="HWC", mirror=True
    )
    np.testing.assert_array_equal(
        gray2d[..., 0], ((img[:, ::-1, 0] - 100.0) / 50).astype(np.float32)
    )


@pytest.mark.parametrize("layout", ["CHW", "HWC"])
@pytest.mark.parametrize("dtype", [np.float16, np.uint8])
def test_pad_output_adds_fill_channel(layout: str, dtype: type) -> None:
    img = RNG.integers(0, 256, size=(13, 17, 3), dtype=np.uint8)
    got = crop_mirror_normalize(
        img, crop=(8, 10), pad_output=True, dtype=dtype, output_layout=layout
    )
    chan = got[3] if layout == "CHW" else got[..., 3]
    assert got.shape == ((4, 8, 10) if layout == "CHW" else (8, 10, 4))
    assert (chan == 0).all()
    rgb = got[:3] if layout == "CHW" else got[..., :3]
    want = _to(_reference(img, (3, 4), (8, 10), False, 0.0, 1.0), layout, dtype)  # 2.5 -> 3
    np.testing.assert_array_equal(rgb, want)
    filled = crop_mirror_normalize(img, crop=(8, 10), pad_output=True, fill_values=[1, 2, 3, 9],
                                   output_layout=layout)  # fmt: skip
    assert ((filled[3] if layout == "CHW" else filled[..., 3]) == 9).all()


@pytest.mark.parametrize("layout", ["CHW", "HWC"])
@pytest.mark.parametrize("mirror", [False, True])
@pytest.mark.parametrize("in_dtype", [np.uint8, np.float32])
def test_out_of_bounds_pads_with_fill_values(layout: str, mirror: bool, in_dtype: type) -> None:
    img = RNG.integers(0, 256, size=(11, 15, 3)).astype(in_dtype)
    fill = [-1.0, -2.0, -3.0]
    got = crop_mirror_normalize(
        img, crop_h=20, crop_w=12, crop_pos_x=0.0, crop_pos_y=0.25, mirror=mirror,
        mean=MEAN, std=STD, fill_values=fill, out_of_bounds_policy="pad", output_layout=layout,
    )  # fmt: skip
    anchor = (int(np.floor(0.25 * (11 - 20) + 0.5)), 0)  # -2: two rows above the image
    ref = _reference(img, anchor, (20, 12), mirror, MEAN, STD)
    outside = np.zeros((20, 12), bool)
    outside[: -anchor[0]] = True
    outside[-anchor[0] + 11 :] = True
    ref[outside] = fill
    np.testing.assert_allclose(got, _to(ref, layout, np.float32), rtol=1e-6, atol=1e-6)


def test_out_of_bounds_policies() -> None:
    img = RNG.integers(0, 256, size=(10, 10, 3), dtype=np.uint8)
    with pytest.raises(ValueError, match="out_of_bounds_policy"):
        crop_mirror_normalize(img, crop=(12, 4))
    trimmed = crop_mirror_normalize(
        img, crop=(12, 4), crop_pos_x=1.0, out_of_bounds_policy="trim_to_shape"
    )
    assert trimmed.shape == (3, 10, 4)
    np.testing.assert_array_equal(trimmed, img[:, 6:].transpose(2, 0, 1).astype(np.float32))
    # Window entirely outside the image: only fill.
    far = crop_mirror_normalize(
        img, crop=(4, 40), crop_pos_x=0.0, fill_values=5, out_of_bounds_policy="pad"
    )
    assert far.shape == (3, 4, 40)
    assert (far[:, :, :10] != 5).any() and (far[:, :, 10:] == 5).all()


def test_writes_into_out_slot_of_a_batch() -> None:
    img = RNG.integers(0, 256, size=(30, 40, 3), dtype=np.uint8)
    batch = np.full((2, 3, 16, 16), 7, dtype=np.float16)
    res = crop_mirror_normalize(
        img, crop=(16, 16), mean=MEAN, std=STD, dtype=np.float16, out=batch[1]
    )
    assert res is batch[1] or np.shares_memory(res, batch)
    want = _to(_reference(img, (7, 12), (16, 16), False, MEAN, STD), "CHW", np.float16)
    np.testing.assert_array_equal(batch[1], want)
    assert (batch[0] == 7).all()
    with pytest.raises(ValueError, match="out is"):
        crop_mirror_normalize(img, crop=(16, 16), out=np.empty((3, 16, 16), np.float16))


def test_crop_window_rounding() -> None:
    win = crop_window((375, 500), 224, 224, crop_pos_x=0.5, crop_pos_y=0.5)
    assert win.anchor == (76, 138) and win.inside  # 75.5 rounds up, 138 exact
    assert crop_window((10, 10), 20, 4, 0.5, 0.5).anchor == (-5, 3)


def test_rounding_truncate_and_bad_arguments() -> None:
    img = np.array([[[10, 20, 30]]], dtype=np.uint8)
    got = crop_mirror_normalize(img, std=4.0, dtype=np.uint8, rounding="truncate")
    assert got.ravel().tolist() == [2, 5, 7]
    with pytest.raises(ValueError, match="mean"):
        crop_mirror_normalize(img, mean=[1, 2])
    with pytest.raises(ValueError, match="output_layout"):
        crop_mirror_normalize(img, output_layout="NHWC")


def test_out_of_bounds_anchor_rounds_half_away_from_zero():
    # a 70-wide crop centred on a 57-wide image: anchor 0.5 * (57 - 70) = -6.5 -> -7, as DALI
    # (and fn.crop): the image starts at output column 7
    window = crop_window((40, 57), 70, 70)
    assert window.anchor == (-15, -7)
