"""TrivialAugment Wide (https://arxiv.org/abs/2103.10158): one random augmentation per
sample, at a random magnitude bin.

The wide augmentation space is the paper's (and torchvision's ``TrivialAugmentWide``):
shear 0.99, translate 32 pixels, rotate 135 degrees, enhance factors 1 +- 0.99,
posterize 8 down to 2 bits, solarize. Differences from torchvision: the enhance
magnitudes start at 0.01 rather than 0 (bin 0 is not an identity), solarize's
thresholds run from 256 (no change) rather than 255, and with ``shape`` the
translations are relative (up to the whole image by default).
"""

from __future__ import annotations

from typing import Any

from chute import fn, types
from chute.auto_aug import augmentations as a
from chute.auto_aug._utils import get_translations, pretty_select
from chute.auto_aug.core import _Augmentation, signed_bin
from chute.auto_aug.core._args import forbid_unused_kwargs
from chute.auto_aug.core.choices import record
from chute.auto_aug.rand_augment import _without
from chute.graph import DataNode

__all__ = ["apply_trivial_augment", "get_trivial_augment_wide_suite", "trivial_augment_wide"]


def trivial_augment_wide(
    data: DataNode,
    num_magnitude_bins: int = 31,
    shape: DataNode | tuple[int, int] | None = None,
    fill_value: int | None = 128,
    interp_type: Any = None,
    max_translate_abs: int | None = None,
    max_translate_rel: float | None = None,
    seed: int | None = None,
    excluded: list[str] | None = None,
) -> DataNode:
    """Apply TrivialAugment Wide to a batch of uint8 images (HWC) on the CPU or the GPU.

    Args:
        data: the batch.
        num_magnitude_bins: how many bins the magnitude ranges are cut into.
        shape: each sample's (H, W, ...) or one (H, W): translations then reach
            ``max_translate_rel`` of the image (default 1: all of it); without it they
            reach ``max_translate_abs`` pixels (default 32).
        fill_value: the value of pixels that shear, translate and rotate bring in (None
            repeats the border).
        interp_type: their interpolation (``types.INTERP_LINEAR`` by default).
        max_translate_abs: the largest shift in pixels, or a (height, width) pair.
        max_translate_rel: the largest shift as a fraction of the image, or a pair.
        seed: the seed of the random choices (operation, bin and sign).
        excluded: names of augmentations to leave out of the suite.
    """
    kwargs: dict[str, Any] = {"fill_value": fill_value, "interp_type": interp_type}
    use_shape = shape is not None
    if use_shape:
        kwargs["shape"] = shape
    suite = get_trivial_augment_wide_suite(use_shape, max_translate_abs, max_translate_rel)
    return apply_trivial_augment(
        _without(suite, excluded, "TrivialAugmentWide"),
        data,
        num_magnitude_bins=num_magnitude_bins,
        seed=seed,
        **kwargs,
    )


def apply_trivial_augment(
    augmentations: list[_Augmentation],
    data: DataNode,
    num_magnitude_bins: int = 31,
    seed: int | None = None,
    **kwargs: Any,
) -> DataNode:
    """Apply one augmentation drawn from ``augmentations`` to each sample, at a magnitude
    bin drawn from ``[0, num_magnitude_bins - 1]`` (TrivialAugment over a custom suite).

    ``kwargs`` go to the augmentations that take them by name; one that none takes is an
    error.
    """
    if (
        isinstance(num_magnitude_bins, bool)
        or not isinstance(num_magnitude_bins, int)
        or num_magnitude_bins < 1
    ):
        raise ValueError(
            f"The `num_magnitude_bins` must be a positive integer, got {num_magnitude_bins!r}."
        )
    if not augmentations:
        raise ValueError("The `augmentations` list of `apply_trivial_augment` is empty.")
    magnitude_bin: Any = fn.random.uniform(
        values=list(range(num_magnitude_bins)), dtype=types.INT32, seed=seed
    )
    record("magnitude_bin", magnitude_bin)
    if any(aug.randomly_negate for aug in augmentations):
        magnitude_bin = signed_bin(magnitude_bin, seed=seed)
        record("random_sign", magnitude_bin.random_sign)
    forbid_unused_kwargs(augmentations, kwargs, "apply_trivial_augment")
    op_idx = fn.random.uniform(values=list(range(len(augmentations))), seed=seed, dtype=types.INT32)
    record("op_idx", op_idx)
    return pretty_select(
        augmentations,
        op_idx,
        dict(
            data=data, magnitude_bin=magnitude_bin, num_magnitude_bins=num_magnitude_bins, **kwargs
        ),
        auto_aug_name="apply_trivial_augment",
        ref_suite_name="get_trivial_augment_wide_suite",
    )


def get_trivial_augment_wide_suite(
    use_shape: bool = False,
    max_translate_abs: int | None = None,
    max_translate_rel: float | None = None,
) -> list[_Augmentation]:
    """The 14 augmentations of TrivialAugment's wide space.

    Translations reach ``max_translate_rel`` of the image (default 1) with ``use_shape``,
    else ``max_translate_abs`` pixels (default 32); shear 0.99, rotate 135 degrees,
    enhance factors 1 +- (0.01 to 0.99), posterize 8 down to 2 bits, solarize thresholds
    256 down to 0; equalize, auto_contrast and identity take no magnitude.
    """
    return [
        *get_translations(use_shape, 32, 1.0, max_translate_abs, max_translate_rel),
        a.shear_x.augmentation((0, 0.99), True),
        a.shear_y.augmentation((0, 0.99), True),
        a.rotate.augmentation((0, 135), True),
        a.brightness.augmentation((0.01, 0.99), True, a.shift_enhance_range),
        a.contrast.augmentation((0.01, 0.99), True, a.shift_enhance_range),
        a.color.augmentation((0.01, 0.99), True, a.shift_enhance_range),
        a.sharpness.augmentation((0.01, 0.99), True, a.sharpness_kernel),
        a.posterize.augmentation((8, 2), False, a.poster_mask_uint8),
        a.solarize.augmentation((256, 0)),  # a lower threshold inverts more
        a.equalize,
        a.auto_contrast,
        a.identity,
    ]
