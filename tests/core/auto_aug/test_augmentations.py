"""Each auto_aug augmentation at fixed magnitudes against its NumPy/OpenCV definition
(auto_aug_reference), on small uint8 images; signs and bins per sample where they vary."""

from __future__ import annotations

import auto_aug_reference as ref
import numpy as np
import pytest
from auto_aug_reference import (
    assert_rounds,
    forward_warp_nn,
    per_sample,
    rotation_matrix,
    run_aug,
    shear_matrix,
    translation_matrix,
)

from chute import types
from chute.auto_aug import augmentations as a
from chute.auto_aug.core import signed_bin

RNG = np.random.default_rng(24)
IMAGE = RNG.integers(0, 256, (6, 8, 3), dtype=np.uint8)
SQUARE = RNG.integers(0, 256, (6, 6, 3), dtype=np.uint8)
# low contrast, so that the enhance factors do not just saturate
SOFT = RNG.integers(60, 190, (5, 7, 3), dtype=np.uint8)
NN = types.INTERP_NN


def both_signs(magnitude_bin):
    """Sample 0 keeps the magnitude, sample 1 negates it."""
    return lambda: signed_bin(magnitude_bin, random_sign=per_sample(0, 1))


@pytest.mark.parametrize(("aug", "axis"), [(a.shear_x, 0), (a.shear_y, 1)])
@pytest.mark.parametrize("fill", [128, 0])
def test_shear_moves_pixels_by_the_factor_times_the_other_coordinate(aug, axis, fill):
    # mag_range (0, 0.3), 11 bins: bin 10 is 0.3; sample 1 is sheared by -0.3
    outs = run_aug(aug, [IMAGE, IMAGE], both_signs(10), 11, fill_value=fill, interp_type=NN)
    for out, s in zip(outs, [0.3, -0.3]):
        factors = (s, 0) if axis == 0 else (0, s)
        np.testing.assert_array_equal(out, forward_warp_nn(IMAGE, shear_matrix(*factors), fill))


def test_shear_without_a_fill_value_repeats_the_border():
    (out,) = run_aug(
        a.shear_x,
        [IMAGE],
        lambda: signed_bin(10, per_sample(0)),
        11,
        fill_value=None,
        interp_type=NN,
    )
    np.testing.assert_array_equal(out, forward_warp_nn(IMAGE, shear_matrix(0.3, 0), None))


def test_translate_by_a_fraction_of_each_images_shape():
    # mag_range (0, 1), 11 bins: bin 5 = half the width (8 -> 4 px) / height (6 -> 3 px)
    tall = RNG.integers(0, 256, (4, 10, 3), dtype=np.uint8)
    for aug, axis in [(a.translate_x, 1), (a.translate_y, 0)]:
        outs = run_aug(aug, [IMAGE, tall], both_signs(5), 11, shape=lambda x: x.shape())
        for out, image, sign in zip(outs, [IMAGE, tall], [1, -1]):
            offset = sign * image.shape[axis] / 2
            m = translation_matrix(offset, 0) if axis == 1 else translation_matrix(0, offset)
            # whole-pixel shifts: linear interpolation samples pixel centres exactly
            np.testing.assert_array_equal(out, forward_warp_nn(image, m, 128))


def test_translate_by_pixels_without_a_shape():
    shift = a.translate_y_no_shape.augmentation(mag_range=(0, 4))  # 5 bins: bin 3 = 3 px
    outs = run_aug(shift, [IMAGE, IMAGE], both_signs(3), 5, fill_value=7)
    for out, dy in zip(outs, [3, -3]):
        np.testing.assert_array_equal(out, forward_warp_nn(IMAGE, translation_matrix(0, dy), 7))
    assert (
        a.translate_x_no_shape.name == "translate_x"
        and a.translate_y_no_shape.name == "translate_y"
    )


def test_translate_needs_the_shape_argument():
    from chute.auto_aug.core._args import MissingArgException

    with pytest.raises(MissingArgException, match="shape"):
        run_aug(a.translate_x, [IMAGE], both_signs(5), 11)


def test_rotate_counter_clockwise_about_the_centre_keeping_the_size():
    quarter = a.rotate.augmentation(mag_range=(0, 90))  # 2 bins: bin 1 = 90 degrees
    ccw, cw = run_aug(quarter, [SQUARE, SQUARE], both_signs(1), 2)
    np.testing.assert_array_equal(ccw, np.rot90(SQUARE))
    np.testing.assert_array_equal(cw, np.rot90(SQUARE, -1))
    # 30 degrees (bin 10 of the default range), nearest neighbour, fill 128
    (out,) = run_aug(a.rotate, [IMAGE], lambda: signed_bin(10, per_sample(0)), 11, interp_type=NN)
    assert out.shape == IMAGE.shape
    np.testing.assert_array_equal(out, forward_warp_nn(IMAGE, rotation_matrix(30, 6, 8), 128))


@pytest.mark.parametrize(
    ("aug", "reference"),
    [
        (a.brightness, ref.brightness),
        (a.contrast, ref.contrast),
        (a.color, ref.color),
        (a.sharpness, ref.sharpness),
    ],
)
def test_enhance_operations_follow_pils_blend_formulas(aug, reference):
    # mag_range (0, 0.9), 11 bins: bin 5 = 0.45 -> factors 1.45 and (negated) 0.55
    outs = run_aug(aug, [SOFT, IMAGE], both_signs(5), 11)
    for out, image, factor in zip(outs, [SOFT, IMAGE], [1.45, 0.55]):
        assert out.shape == image.shape
        assert_rounds(out, reference(image, factor), eps=0.02)


def test_enhance_at_factor_zero_gives_the_blend_target():
    # AutoAugment's range (0.1, 1.9) unsigned, with shift-free factors: bin 0 = 0.1
    gray_ish = a.color.augmentation((0.1, 1.9), False, None)
    (out,) = run_aug(gray_ish, [IMAGE], 0, 11)
    assert_rounds(out, ref.color(IMAGE, 0.1), eps=0.02)


def test_posterize_keeps_the_highest_bits_per_sample_bin():
    # mag_range (0, 4), 5 bins: bits 0 (kept as 1), 1, 2, 3, 4
    outs = run_aug(a.posterize, [IMAGE] * 5, lambda: per_sample(0, 1, 2, 3, 4), 5)
    for out, bits in zip(outs, [1, 1, 2, 3, 4]):
        np.testing.assert_array_equal(out, ref.posterize(IMAGE, bits))


def test_solarize_inverts_values_at_or_above_the_threshold():
    # mag_range (256, 0), 5 bins: thresholds 256 (identity), 192, 128, 64, 0 (invert)
    outs = run_aug(a.solarize, [IMAGE] * 5, lambda: per_sample(0, 1, 2, 3, 4), 5)
    for out, threshold in zip(outs, [256, 192, 128, 64, 0]):
        np.testing.assert_array_equal(out, ref.solarize(IMAGE, threshold))
    np.testing.assert_array_equal(outs[0], IMAGE)
    np.testing.assert_array_equal(outs[4], 255 - IMAGE)


def test_solarize_add_shifts_values_below_128():
    # mag_range (0, 110), 11 bins: bin 3 = 33, bin 10 = 110
    outs = run_aug(a.solarize_add, [IMAGE, IMAGE], lambda: per_sample(3, 10), 11)
    np.testing.assert_array_equal(outs[0], ref.solarize_add(IMAGE, 33))
    np.testing.assert_array_equal(outs[1], ref.solarize_add(IMAGE, 110))
    with pytest.raises(ValueError, match="0 to 127"):
        run_aug(a.solarize_add.augmentation(mag_range=(0, 128)), [IMAGE], 1, 2)


def test_invert_equalize_auto_contrast_identity():
    flat_channel = IMAGE.copy()
    flat_channel[..., 1] = 77  # a channel with no span is kept as it is
    images = [IMAGE, flat_channel]
    np.testing.assert_array_equal(run_aug(a.invert, images)[0], 255 - IMAGE)
    for out, image in zip(run_aug(a.equalize, images), images):
        np.testing.assert_array_equal(out, ref.equalize(image))
    stretched = run_aug(a.auto_contrast, images)
    for out, image in zip(stretched, images):
        assert_rounds(out, ref.auto_contrast(image))
    assert (stretched[1][..., 1] == 77).all()
    assert stretched[0].min(axis=(0, 1)).tolist() == [0, 0, 0]
    assert stretched[0].max(axis=(0, 1)).tolist() == [255, 255, 255]
    np.testing.assert_array_equal(run_aug(a.identity, images)[1], flat_channel)


def test_an_unsigned_bin_for_a_signed_augmentation_draws_signs_and_warns():
    with pytest.warns(Warning, match="signed_bin"):
        outs = run_aug(a.brightness, [SOFT] * 8, 5, 11)
    for out in outs:  # each sample is 1.45x or 0.55x, by its own sign
        assert any(
            np.abs(out.astype(float) - np.clip(ref.brightness(SOFT, f), 0, 255)).max() <= 0.51
            for f in (1.45, 0.55)
        )


AUGS = [
    (a.shear_x, both_signs(7), {}),
    (a.translate_y, both_signs(4), {"shape": lambda x: x.shape()}),
    (a.rotate, both_signs(6), {}),
    (a.brightness, both_signs(5), {}),
    (a.contrast, both_signs(5), {}),
    (a.color, both_signs(5), {}),
    (a.sharpness, both_signs(5), {}),
    (a.posterize, lambda: per_sample(1, 3), {}),
    (a.solarize, lambda: per_sample(2, 7), {}),
    (a.solarize_add, lambda: per_sample(2, 7), {}),
    (a.invert, None, {}),
    (a.equalize, None, {}),
    (a.auto_contrast, None, {}),
]


@pytest.mark.gpu
@pytest.mark.parametrize(
    ("aug", "magnitude_bin", "kwargs"), AUGS, ids=lambda v: getattr(v, "name", "")
)
def test_gpu_equals_cpu(aug, magnitude_bin, kwargs):
    images = [IMAGE, SOFT]
    num_bins = None if magnitude_bin is None else 11
    cpu = run_aug(aug, images, magnitude_bin, num_bins, **kwargs)
    gpu = run_aug(aug, images, magnitude_bin, num_bins, device="gpu", **kwargs)
    for c, g in zip(cpu, gpu):
        assert c.shape == g.shape and c.dtype == g.dtype
        # geometric and float-blend operations may round differently by one level
        assert np.abs(c.astype(int) - g.astype(int)).max() <= 1
