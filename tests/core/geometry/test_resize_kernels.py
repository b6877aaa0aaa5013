"""Resize kernels: DALI's output-size rules, and pixel parity with Pillow and OpenCV."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from PIL import Image

from chute.ops.geometry.resize_kernels import (
    interp_name,
    resize,
    resize_output_size,
    resize_plan,
)

PIL_FILTERS = {"linear": Image.BILINEAR, "cubic": Image.BICUBIC, "lanczos3": Image.LANCZOS}


def noise(h: int, w: int, c: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, c), dtype=np.uint8)


def smooth(h: int, w: int, c: int, seed: int = 0) -> np.ndarray:
    """A band-limited image: little overshoot, so Pillow's 8-bit clipping stays out of the way."""
    return cv2.GaussianBlur(noise(h, w, c, seed), (0, 0), 2.0)


def pillow_float(image: np.ndarray, out_hw, filt, box=None) -> np.ndarray:
    """Pillow's resize of each channel in 32-bit float mode (no 8-bit rounding)."""
    planes = [
        np.asarray(
            Image.fromarray(np.ascontiguousarray(image[:, :, c], dtype=np.float32)).resize(
                (out_hw[1], out_hw[0]), filt, box=box
            )
        )
        for c in range(image.shape[2])
    ]
    return np.stack(planes, axis=-1)


PAD = 32  # past every filter's reach in these tests (lanczos3 at 7x: 23 pixels)


def replicated(image: np.ndarray) -> np.ndarray:
    """``image`` with its edge pixels repeated PAD times on every side (DALI clamps taps)."""
    out = cv2.copyMakeBorder(image, PAD, PAD, PAD, PAD, cv2.BORDER_REPLICATE)
    return out.reshape(image.shape[0] + 2 * PAD, image.shape[1] + 2 * PAD, *image.shape[2:])


def whole(image: np.ndarray) -> tuple[int, int, int, int]:
    """Pillow's box (x0, y0, x1, y1) of the original image inside ``replicated(image)``."""
    return (PAD, PAD, PAD + image.shape[1], PAD + image.shape[0])


# ---------------------------------------------------------------- output-size rules

# (in_h, in_w, args, expected (out_h, out_w)); examples from DALI's documentation first
SIZE_TABLE = [
    (720, 1280, {"size": (480, 640), "mode": "not_larger"}, (360, 640)),
    (480, 640, {"size": (1080, 1920), "mode": "not_smaller"}, (1440, 1920)),
    (600, 1200, {"size": 800, "mode": "not_smaller", "max_size": 1400}, (700, 1400)),
    # default mode: a missing extent takes the given extent's scale
    (375, 500, {"resize_x": 224}, (168, 224)),
    (375, 500, {"resize_y": 224}, (224, 299)),
    (375, 500, {"size": (0, 250)}, (188, 250)),
    (375, 500, {"resize_x": 224, "resize_y": 100}, (100, 224)),
    # stretch: a missing extent keeps its size
    (375, 500, {"resize_x": 224, "mode": "stretch"}, (375, 224)),
    (375, 500, {"size": (100, 0), "mode": "stretch"}, (100, 500)),
    # not_smaller / not_larger with both extents
    (375, 500, {"size": (224, 224), "mode": "not_smaller"}, (224, 299)),
    (375, 500, {"size": (224, 224), "mode": "not_larger"}, (168, 224)),
    (375, 500, {"resize_x": 100, "mode": "not_larger"}, (75, 100)),
    # resize_shorter / resize_longer
    (375, 500, {"resize_shorter": 224}, (224, 299)),
    (500, 375, {"resize_shorter": 224}, (299, 224)),
    (375, 500, {"resize_longer": 224}, (168, 224)),
    (1000, 100, {"resize_shorter": 224, "max_size": 1000}, (1000, 100)),
    (1000, 100, {"resize_shorter": 50, "max_size": (400, 400)}, (400, 40)),
    # default mode + max_size clamps only the offending axis
    (375, 500, {"resize_x": 1000, "max_size": 600}, (600, 600)),
    # negative sizes flip but keep the magnitude
    (375, 500, {"resize_x": -224}, (168, 224)),
    # nothing given but zeros: keep the input size
    (37, 53, {"size": (0, 0)}, (37, 53)),
    # rounding of fractional sizes (halves away from zero)
    (3, 5, {"resize_x": 3}, (2, 3)),
    (2, 4, {"resize_x": 3}, (2, 3)),  # 1.5 -> 2
    # a region of interest sets the input extent
    (100, 200, {"size": (0, 50), "roi_start": (0, 0), "roi_end": (50, 100)}, (25, 50)),
    (
        100,
        200,
        {"size": (0, 50), "roi_start": (0.0, 0.0), "roi_end": (0.5, 0.25), "roi_relative": True},
        (50, 50),
    ),
]


@pytest.mark.parametrize(("in_h", "in_w", "args", "expected"), SIZE_TABLE)
def test_output_size_rules(in_h, in_w, args, expected):
    assert resize_output_size(in_h, in_w, **args) == expected


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"resize_x": 10, "size": (10, 10)},
        {"resize_shorter": 10, "resize_longer": 10},
        {"resize_shorter": 10, "mode": "not_larger"},
        {"size": (10, 10), "mode": "bogus"},
        {"size": (10, 10), "roi_start": (0, 0)},
    ],
)
def test_bad_size_arguments_raise(args):
    with pytest.raises(ValueError):
        resize_output_size(10, 10, **args)


def test_subpixel_scale_keeps_the_scale_and_centre():
    plan = resize_plan(375, 500, resize_shorter=224)
    assert (plan.out_h, plan.out_w) == (224, 299)
    # 500 * 224/375 = 298.67 px requested, 299 produced: the x-region widens around its centre
    x0, x1 = plan.roi_x
    assert x0 + x1 == pytest.approx(500.0)
    assert (x1 - x0) / 299 == pytest.approx(375 / 224, rel=1e-6)
    plain = resize_plan(375, 500, resize_shorter=224, subpixel_scale=False)
    assert plain.roi_x == (0.0, 500.0)


def test_flipped_roi_and_negative_size():
    plan = resize_plan(100, 200, size=(10, 20), roi_start=(90, 0), roi_end=(10, 200))
    assert plan.roi_y == (90.0, 10.0) and plan.roi_x == (0.0, 200.0)
    plan = resize_plan(100, 200, resize_x=-20, resize_y=10)
    assert plan.roi_x == (200.0, 0.0) and plan.out_w == 20
    # two flips cancel
    plan = resize_plan(100, 200, resize_x=-20, resize_y=10, roi_start=(0, 200), roi_end=(100, 0))
    assert plan.roi_x == (0.0, 200.0)


def test_interp_name_accepts_enums_and_strings():
    from chute import types

    assert interp_name(types.INTERP_TRIANGULAR) == "linear"
    assert interp_name("INTERP_LANCZOS3") == "lanczos3"
    assert interp_name("nn") == "nn"
    with pytest.raises(ValueError):
        interp_name("bicubic-ish")


# ---------------------------------------------------------------- pixel parity


@pytest.mark.parametrize("out_hw", [(17, 29), (24, 24), (37, 20), (80, 120), (5, 200)])
@pytest.mark.parametrize("filt", ["linear", "cubic", "lanczos3"])
def test_float_parity_with_pillow(out_hw, filt):
    # Pillow's float mode is the antialiased filter in double precision: the reference
    image = noise(37, 53, 3).astype(np.float32)
    ours = resize(image, size=out_hw, interp_type=filt)
    # DALI reads a tap past the edge as the edge pixel; Pillow drops it: compare over
    # replicated edges, where the two agree
    ref = pillow_float(replicated(image), out_hw, PIL_FILTERS[filt], box=whole(image))
    assert ours.dtype == np.float32 and ours.shape == (*out_hw, 3)
    np.testing.assert_allclose(ours, ref, atol=2e-3)  # float32 accumulation


@pytest.mark.parametrize("channels", [1, 3, 4])
@pytest.mark.parametrize("out_hw", [(17, 29), (24, 24), (80, 120)])
def test_uint8_bilinear_antialias_parity_with_pillow(channels, out_hw):
    image = noise(37, 53, channels, seed=channels)
    ours = resize(image, size=out_hw)
    padded = replicated(image)
    pil = Image.fromarray(padded[:, :, 0] if channels == 1 else padded, mode=None)
    if channels == 4:
        # RGBA would be alpha-premultiplied by Pillow; RGBX resizes all four bands alike
        size = (padded.shape[1], padded.shape[0])
        pil = Image.frombuffer("RGBX", size, padded.tobytes(), "raw", "RGBX", 0, 1)
    resized = pil.resize((out_hw[1], out_hw[0]), Image.BILINEAR, box=whole(image))
    ref = np.asarray(resized).reshape(*out_hw, channels)
    # Pillow rounds its intermediate pass to 8 bits; we keep it in float: off by <= 1
    assert np.abs(ours.astype(int) - ref.astype(int)).max() <= 1


@pytest.mark.parametrize("filt", ["cubic", "lanczos3"])
def test_uint8_cubic_lanczos_parity_with_pillow_on_smooth_images(filt):
    image = smooth(37, 53, 3)
    ours = resize(image, size=(17, 29), interp_type=filt)
    ref = np.asarray(Image.fromarray(image).resize((29, 17), PIL_FILTERS[filt]))
    # Pillow also clips its 8-bit intermediate; on band-limited content that rarely bites
    assert np.abs(ours.astype(int) - ref.astype(int)).max() <= 2


def test_subpixel_roi_parity_with_pillow_box():
    image = noise(37, 53, 3).astype(np.float32)
    box = (3.25, 2.5, 47.75, 30.125)  # x0, y0, x1, y1
    ours = resize(image, size=(11, 19), roi_start=(box[1], box[0]), roi_end=(box[3], box[2]))
    ref = pillow_float(image, (11, 19), Image.BILINEAR, box=box)
    np.testing.assert_allclose(ours, ref, atol=2e-3)


def test_flipped_roi_flips_the_image():
    image = noise(37, 53, 3)
    straight = resize(image, size=(20, 30), roi_start=(0, 0), roi_end=(37, 53))
    flipped = resize(image, size=(20, 30), roi_start=(37, 0), roi_end=(0, 53))
    np.testing.assert_array_equal(flipped, straight[::-1])
    both = resize(image, size=(20, 30), roi_start=(37, 53), roi_end=(0, 0))
    np.testing.assert_array_equal(both, straight[::-1, ::-1])
    mirrored = resize(image, resize_x=-30, resize_y=20)
    np.testing.assert_array_equal(mirrored, straight[:, ::-1])


@pytest.mark.parametrize("out_hw", [(17, 29), (74, 106), (50, 20)])
def test_linear_without_antialias_matches_cv2(out_hw):
    image = noise(37, 53, 3)
    ours = resize(image, size=out_hw, antialias=False)
    ref = cv2.resize(image, (out_hw[1], out_hw[0]), interpolation=cv2.INTER_LINEAR)
    assert np.abs(ours.astype(int) - ref.astype(int)).max() <= 1
    # same answer when the region is fractional and the engine does the work
    as_float = resize(image.astype(np.float32), size=out_hw, antialias=False)
    ref_float = cv2.resize(
        image.astype(np.float32), (out_hw[1], out_hw[0]), interpolation=cv2.INTER_LINEAR
    )
    np.testing.assert_allclose(as_float, ref_float, atol=1e-3)


def test_nearest_matches_pillow():
    image = noise(37, 53, 3)
    for out_hw in [(17, 29), (74, 106), (37, 10)]:
        ours = resize(image, size=out_hw, interp_type="nn")
        ref = np.asarray(Image.fromarray(image).resize((out_hw[1], out_hw[0]), Image.NEAREST))
        np.testing.assert_array_equal(ours, ref)


def test_min_and_mag_filters_are_chosen_per_axis():
    image = noise(37, 53, 1).astype(np.float32)
    # y grows (mag_filter = nn), x shrinks (min_filter = linear)
    ours = resize(image, size=(74, 20), min_filter="linear", mag_filter="nn")
    rows = np.floor((np.arange(74) + 0.5) * 37 / 74).astype(int)
    x_only = pillow_float(replicated(image[rows]), (74, 20), Image.BILINEAR, box=whole(image[rows]))
    np.testing.assert_allclose(ours, x_only, atol=2e-3)


def test_gaussian_preserves_flat_images_and_mean():
    flat = np.full((37, 53, 3), 77, dtype=np.uint8)
    assert np.all(resize(flat, size=(13, 19), interp_type="gaussian") == 77)
    image = smooth(37, 53, 3).astype(np.float32)
    out = resize(image, size=(18, 26), interp_type="gaussian")
    assert abs(out.mean() - image.mean()) < 1.0


def test_dtype_channels_and_hw_input():
    image = noise(37, 53, 5)
    out = resize(image, size=(20, 30), dtype=np.float32)
    assert out.dtype == np.float32 and out.shape == (20, 30, 5)
    # five channels resize like five separate single-channel images (to float precision;
    # uint8 single channels take Pillow's fixed-point path: within one level)
    as_float = image.astype(np.float32)
    single = np.stack([resize(as_float[:, :, c], size=(20, 30)) for c in range(5)], axis=-1)
    # (OpenCV's SIMD paths for 1 and 5 channels may round the last float bit differently)
    np.testing.assert_allclose(resize(as_float, size=(20, 30)), single, rtol=1e-6, atol=0)
    single = np.stack([resize(image[:, :, c], size=(20, 30)) for c in range(5)], axis=-1)
    diff = resize(image, size=(20, 30)).astype(int) - single
    assert np.abs(diff).max() <= 1
    assert resize(image[:, :, 0], size=(20, 30)).shape == (20, 30)


def test_identity_resize_copies():
    image = noise(37, 53, 3)
    out = resize(image, size=(37, 53))
    np.testing.assert_array_equal(out, image)
    assert not np.shares_memory(out, image)


def test_whole_pixel_roi_reads_the_pixels_around_it():
    # upscaling a region: edge outputs blend in the neighbours outside the region, as
    # Pillow's box and DALI's ROI do (cropping first would repeat the region's edge)
    image = noise(37, 53, 3)
    ours = resize(image, size=(30, 40), roi_start=(10, 20), roi_end=(30, 40))
    ref = np.asarray(Image.fromarray(image).resize((40, 30), Image.BILINEAR, box=(20, 10, 40, 30)))
    assert np.abs(ours.astype(int) - ref.astype(int)).max() <= 1


# ---------------------------------------------------------------- DALI's edge and rounding rules


def triangle_clamped(row: np.ndarray, out_w: int) -> np.ndarray:
    """Antialiased linear downscaling of a float row, taps past the edges clamped (DALI's)."""
    in_w = row.shape[0]
    scale = in_w / out_w
    out = np.empty(out_w)
    for x in range(out_w):
        center = (x + 0.5) * scale
        taps = np.arange(int(np.floor(center - scale)) - 1, int(np.ceil(center + scale)) + 1)
        weights = np.maximum(0.0, 1.0 - np.abs(taps + 0.5 - center) / scale)
        out[x] = weights @ row[np.clip(taps, 0, in_w - 1)] / weights.sum()
    return out


def test_downscaling_clamps_taps_past_the_edge():
    # 7 -> 2 pixels: each output's triangle (radius 3.5) reaches past the image; the taps there
    # read the edge pixel with their full weight instead of being dropped
    row = np.array([0, 0, 0, 0, 0, 0, 255], np.float32)
    got = resize(row.reshape(1, 7, 1), size=(1, 2))[0, :, 0]
    want = triangle_clamped(row.astype(np.float64), 2)
    np.testing.assert_allclose(got, want, atol=1e-4)
    # written out: the right output's centre is 5.25; taps 2..8 weigh 3, 7, 11, 13, 9, 5, 1
    # (in 14ths); 6 is the 255 pixel and 7, 8 read it again (Pillow would give 255 * 9/43)
    assert abs(got[1] - 255 * (9 + 5 + 1) / 49) < 1e-3 and got[0] == 0
    noisy = noise(1, 101, 3, seed=4).astype(np.float32)
    got = resize(noisy, size=(1, 30))[0]
    want = np.stack([triangle_clamped(noisy[0, :, c].astype(np.float64), 30) for c in range(3)], -1)
    np.testing.assert_allclose(got, want, atol=1e-3)
    # uint8 takes the compiled kernel / Pillow: the same sums, rounded
    as_u8 = resize(noise(1, 101, 3, seed=4), size=(1, 30))[0]
    assert np.abs(as_u8.astype(float) - np.floor(want + 0.5)).max() <= 1


def test_nearest_rows_step_in_float32_as_dali():
    # 8 -> 12 rows: row 10's centre is 7.0 exactly, but DALI adds the float32 step 2/3 ten
    # times to 1/3 and lands just below 7: source row 6 (columns are computed directly)
    column = (np.arange(8, dtype=np.uint8) * 10).reshape(8, 1, 1)
    got = resize(column, resize_y=12, resize_x=1, interp_type="nn")[:, 0, 0]
    np.testing.assert_array_equal(got, [0, 10, 10, 20, 30, 30, 40, 50, 50, 60, 60, 70])
    row = (np.arange(8, dtype=np.uint8) * 10).reshape(1, 8, 1)
    got = resize(row, resize_y=1, resize_x=12, interp_type="nn")[0, :, 0]
    np.testing.assert_array_equal(got, [0, 10, 10, 20, 30, 30, 40, 50, 50, 60, 70, 70])
