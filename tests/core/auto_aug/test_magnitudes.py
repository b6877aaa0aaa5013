"""Magnitude bin -> parameter, written out for each policy's suite, and checked against
the formulas of torchvision's autoaugment.py and the AutoAugment implementation."""

from __future__ import annotations

import numpy as np
import pytest

from chute import fn, pipeline_def
from chute.auto_aug import augmentations as a
from chute.auto_aug import auto_augment, rand_augment, trivial_augment
from chute.auto_aug.core import signed_bin


def params(aug, bins, signs=None, num_magnitude_bins=31):
    """The parameter each sample gets for its bin (and sign), looked up as in a pipeline."""
    n = len(bins)

    @pipeline_def(batch_size=n, num_threads=1, device_id=None, seed=1)
    def pipe():
        b = fn.external_source(source=lambda: [np.int32(v) for v in bins])
        if aug.randomly_negate:
            s = fn.external_source(source=lambda: [np.int32(v) for v in signs or [0] * n])
            b = signed_bin(b, random_sign=s)
        return aug._get_param(b, num_magnitude_bins, "cpu")

    p = pipe()
    p.build()
    (out,) = p.run()
    return [np.asarray(out.at(i)) for i in range(n)]


def by_name(suite):
    return {aug.name: aug for aug in suite}


SHARP_CENTER = lambda m: 1 + m - m * 5 / 13  # noqa: E731  (sharpness kernel centre)


def test_rand_augment_suite_at_m9():
    """RandAugment (n=2, m=9, 31 bins), the setting of the paper's ImageNet ResNet-50."""
    suite = by_name(rand_augment.get_rand_augment_suite())
    assert list(suite) == [
        "translate_x", "translate_y", "shear_x", "shear_y", "rotate", "brightness",
        "contrast", "color", "sharpness", "posterize", "solarize", "equalize",
        "auto_contrast", "identity",
    ]  # fmt: skip
    expect = {
        "translate_x": ([30, 0], [-30, 0]),  # 100 px * 9/30
        "translate_y": ([0, 30], [0, -30]),
        "shear_x": ([0.09, 0], [-0.09, 0]),  # 0.3 * 9/30
        "shear_y": ([0, 0.09], [0, -0.09]),
        "rotate": (9.0, -9.0),  # 30 degrees * 9/30
        "brightness": (1.27, 0.73),  # 1 +- 0.9 * 9/30
        "contrast": (1.27, 0.73),
        "color": (1.27, 0.73),
    }
    for name, (plus, minus) in expect.items():
        got = params(suite[name], [9, 9], [0, 1])
        np.testing.assert_allclose(got[0], plus, rtol=1e-5, atol=1e-6, err_msg=name)
        np.testing.assert_allclose(got[1], minus, rtol=1e-5, atol=1e-6, err_msg=name)
    kernel_plus, kernel_minus = params(suite["sharpness"], [9, 9], [0, 1])
    assert kernel_plus.shape == (3, 3) and kernel_plus.dtype == np.float32
    np.testing.assert_allclose(kernel_plus[1, 1], SHARP_CENTER(0.27), rtol=1e-6)
    np.testing.assert_allclose(kernel_plus[0, 0], -0.27 / 13, rtol=1e-5)
    np.testing.assert_allclose(kernel_minus[1, 1], SHARP_CENTER(-0.27), rtol=1e-6)
    np.testing.assert_allclose(kernel_plus.sum(), 1.0, rtol=1e-6)  # brightness kept
    # posterize 8 - 4 * 9/30 = 6.8 -> 7 bits -> 0b11111110; solarize 256 * (1 - 9/30)
    assert params(suite["posterize"], [9])[0] == 0b11111110
    np.testing.assert_allclose(params(suite["solarize"], [9])[0], 179.2, rtol=1e-6)
    for name in ("equalize", "auto_contrast", "identity"):
        assert suite[name].mag_range is None


def test_rand_augment_relative_translation_is_100_over_224():
    suite = by_name(rand_augment.get_rand_augment_suite(use_shape=True))
    got = params(suite["translate_x"], [30, 9], [0, 1])
    np.testing.assert_allclose(got[0], [100 / 224, 0], rtol=1e-6)
    np.testing.assert_allclose(got[1], [-100 / 224 * 0.3, 0], rtol=1e-5)
    wide = by_name(rand_augment.get_rand_augment_suite(max_translate_abs=(10, 40)))
    assert wide["translate_x"].mag_range == (0, 40) and wide["translate_y"].mag_range == (0, 10)
    with pytest.raises(ValueError, match="max_translate_rel"):
        rand_augment.get_rand_augment_suite(use_shape=False, max_translate_rel=0.5)


def test_rand_augment_non_monotonic_suite_uses_autoaugments_ranges():
    suite = by_name(rand_augment.get_rand_augment_non_monotonic_suite())
    # 0.1 + 1.8 * bin/30, unsigned
    assert not suite["brightness"].randomly_negate
    np.testing.assert_allclose(params(suite["brightness"], [0, 15, 30]), [0.1, 1.0, 1.9], rtol=1e-6)
    bits = [bin(int(m)).count("1") for m in params(suite["posterize"], [0, 8, 15, 30])]
    assert bits == [1, 1, 2, 4]  # round(4 * bin/30), 0 bits kept as 1
    np.testing.assert_allclose(params(suite["solarize"], [0, 30]), [0, 256])
    kernels = params(suite["sharpness"], [15])
    np.testing.assert_allclose(kernels[0][1, 1], 1.0, atol=1e-6)  # factor 1: identity


def test_trivial_augment_wide_suite():
    suite = by_name(trivial_augment.get_trivial_augment_wide_suite())
    assert len(suite) == 14
    checks = {
        "shear_x": ([0, 15, 30], [[0, 0], [0.495, 0], [0.99, 0]]),
        "rotate": ([0, 15, 30], [0, 67.5, 135]),
        "translate_y": ([0, 15, 30], [[0, 0], [0, 16], [0, 32]]),  # 32 px
        "brightness": ([0, 30], [1.01, 1.99]),  # 1 + (0.01 .. 0.99)
        "solarize": ([0, 15, 30], [256, 128, 0]),
    }
    for name, (bins, expected) in checks.items():
        np.testing.assert_allclose(params(suite[name], bins), expected, rtol=1e-5, err_msg=name)
    np.testing.assert_allclose(params(suite["color"], [30], [1])[0], 0.01, rtol=1e-4)
    masks = params(suite["posterize"], [0, 15, 30])
    assert [bin(int(m)).count("1") for m in masks] == [8, 5, 2]  # 8 - 6 * bin/30
    rel = by_name(trivial_augment.get_trivial_augment_wide_suite(use_shape=True))
    np.testing.assert_allclose(params(rel["translate_x"], [30])[0], [1.0, 0])


def test_auto_augment_image_net_magnitudes_are_level_over_10_of_each_range():
    policy = auto_augment.get_image_net_policy()
    assert policy.num_magnitude_bins == 11
    augs = policy.augmentations
    # (augmentation, bin) from the policy table -> tensorflow/tpu's level_to_arg value
    expect = {
        ("shear_y", 4): [0, 0.12],  # 0.3 * 4/10
        ("rotate", 8): 24.0,  # 30 * 8/10
        ("color", 9): 1.72,  # 1.8 * 9/10 + 0.1
        ("solarize", 3): 76.8,  # 256 * 3/10
        ("translate_y", 9): [0, 225],  # 250 * 9/10
    }
    for (name, level), value in expect.items():
        np.testing.assert_allclose(
            params(augs[name], [level], num_magnitude_bins=11)[0], value, rtol=1e-6
        )
    assert params(augs["solarize_add"], [3], num_magnitude_bins=11)[0] == 33  # int(110 * 3/10)
    # posterize: int(4 * level/10) bits in tensorflow/tpu; bins 6 and 2 -> 2 and 1 bits
    masks = params(augs["posterize"], [6, 2], num_magnitude_bins=11)
    assert [int(m) for m in masks] == [0b11000000, 0b10000000]


def test_torchvision_formulas_agree_where_stated():
    """torchvision/transforms/autoaugment.py's RandAugment space (31 bins), written out:
    shear linspace(0, 0.3), rotate linspace(0, 30), enhance 1 + linspace(0, 0.9), signed;
    posterize 8 - round(bin / (30 / 4)) bits; solarize linspace(255, 0)."""
    suite = by_name(rand_augment.get_rand_augment_suite())
    bins = list(range(31))
    np.testing.assert_allclose(
        [p[0] for p in params(suite["shear_x"], bins)], np.linspace(0, 0.3, 31), rtol=1e-6
    )
    np.testing.assert_allclose(params(suite["rotate"], bins), np.linspace(0, 30, 31), rtol=1e-6)
    np.testing.assert_allclose(
        params(suite["contrast"], bins, [1] * 31), 1 - np.linspace(0, 0.9, 31), rtol=1e-5
    )
    tv_bits = 8 - np.round(np.arange(31) / (30 / 4)).astype(int)
    ours = [bin(int(m)).count("1") for m in params(suite["posterize"], bins)]
    assert ours == tv_bits.tolist()
    # the difference: our thresholds run 256 -> 0 (bin 0: no pixel inverted), torchvision's
    # 255 -> 0 (bin 0 inverts the value 255)
    np.testing.assert_allclose(params(suite["solarize"], bins), np.linspace(256, 0, 31), rtol=1e-6)


def test_custom_magnitudes_array_and_mag_to_param():
    @a.augmentation(mag_range=np.array([2.0, 5.0, 11.0]), mag_to_param=lambda m: [m, m * m])
    def custom(data, param):
        return data

    np.testing.assert_allclose(params(custom, [0, 2], num_magnitude_bins=3), [[2, 4], [11, 121]])
    with pytest.raises(ValueError, match="3 explicit magnitudes"):
        params(custom, [0], num_magnitude_bins=4)
