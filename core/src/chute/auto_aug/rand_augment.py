"""RandAugment (https://arxiv.org/abs/1909.13719): ``n`` random augmentations per sample,
all at magnitude bin ``m``.

Differences from torchvision's ``RandAugment`` (same suite of 14 operations, 31 bins):
translations reach 100/224 of the image (or 100 pixels without ``shape``; torchvision:
150/331 of it), solarize's thresholds run from 256 (no change) to 0 (torchvision: 255 to
0), and posterize keeps ``round(8 - 4 * bin / 30)`` bits as torchvision does. The sign of
signed magnitudes is drawn per sample and per level, as there.
"""

from __future__ import annotations

import warnings
from typing import Any

from chute import fn, types
from chute.auto_aug import augmentations as a
from chute.auto_aug._utils import get_translations, pretty_select
from chute.auto_aug.core import _Augmentation, signed_bin
from chute.auto_aug.core._args import forbid_unused_kwargs
from chute.auto_aug.core.choices import record
from chute.graph import DataNode

__all__ = [
    "apply_rand_augment",
    "get_rand_augment_non_monotonic_suite",
    "get_rand_augment_suite",
    "rand_augment",
]


def rand_augment(
    data: DataNode,
    n: int,
    m: int,
    num_magnitude_bins: int = 31,
    shape: DataNode | tuple[int, int] | None = None,
    fill_value: int | None = 128,
    interp_type: Any = None,
    max_translate_abs: int | None = None,
    max_translate_rel: float | None = None,
    seed: int | None = None,
    monotonic_mag: bool = True,
    excluded: list[str] | None = None,
) -> DataNode:
    """Apply RandAugment to a batch of uint8 images (HWC) on the CPU or the GPU.

    Args:
        data: the batch.
        n: how many augmentations, drawn at random, each sample goes through.
        m: the magnitude bin of every augmentation, in ``[0, num_magnitude_bins - 1]``.
        num_magnitude_bins: how many bins the magnitude ranges are cut into.
        shape: each sample's (H, W, ...) (e.g. ``fn.peek_image_shape``) or one (H, W):
            translations then reach ``max_translate_rel`` of the image; without it they
            reach ``max_translate_abs`` pixels.
        fill_value: the value of pixels that shear, translate and rotate bring in (None
            repeats the border).
        interp_type: their interpolation (``types.INTERP_LINEAR`` by default, or
            ``types.INTERP_NN``).
        max_translate_abs: the largest shift in pixels without ``shape`` (default 100), or
            a (height, width) pair.
        max_translate_rel: the largest shift as a fraction of the image with ``shape``
            (default 100/224), or a (height, width) pair.
        seed: the seed of the random choices (operations and signs).
        monotonic_mag: True (default): every operation grows stronger with the bin. False:
            brightness, contrast, color and sharpness take factors from 0.1 to 1.9 and
            posterize and solarize weaken with the bin, as AutoAugment's ranges do (see
            :func:`get_rand_augment_non_monotonic_suite`).
        excluded: names of augmentations to leave out of the suite.
    """
    kwargs: dict[str, Any] = {"fill_value": fill_value, "interp_type": interp_type}
    use_shape = shape is not None
    if use_shape:
        kwargs["shape"] = shape
    suite_of = get_rand_augment_suite if monotonic_mag else get_rand_augment_non_monotonic_suite
    suite = suite_of(use_shape, max_translate_abs, max_translate_rel)
    return apply_rand_augment(
        _without(suite, excluded, "RandAugment"),
        data,
        n,
        m,
        num_magnitude_bins=num_magnitude_bins,
        seed=seed,
        **kwargs,
    )


def _without(suite: list[_Augmentation], excluded: list[str] | None, what: str) -> list:
    names = [aug.name for aug in suite]
    for name in excluded or []:
        if name not in names:
            raise ValueError(
                f"`excluded` names `{name}`, which is not in the {what} suite; its "
                f"augmentations are: {', '.join(names)}."
            )
    return [aug for aug in suite if aug.name not in (excluded or [])]


def apply_rand_augment(
    augmentations: list[_Augmentation],
    data: DataNode,
    n: int,
    m: int,
    num_magnitude_bins: int = 31,
    seed: int | None = None,
    **kwargs: Any,
) -> DataNode:
    """Apply ``n`` augmentations drawn from ``augmentations`` to each sample, in sequence,
    each at magnitude bin ``m`` (RandAugment over a custom suite).

    ``kwargs`` go to the augmentations that take them by name (``shape``, ``fill_value``,
    ``interp_type``, ...); one that none takes is an error.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"The number of operations `n` must be a non-negative integer, got {n!r}.")
    if (
        isinstance(num_magnitude_bins, bool)
        or not isinstance(num_magnitude_bins, int)
        or num_magnitude_bins < 1
    ):
        raise ValueError(
            f"The `num_magnitude_bins` must be a positive integer, got {num_magnitude_bins!r}."
        )
    if isinstance(m, bool) or not isinstance(m, int) or not 0 <= m < num_magnitude_bins:
        raise ValueError(
            f"The magnitude bin `m` must be an integer in [0, {num_magnitude_bins - 1}], got {m!r}."
        )
    if n == 0:
        warnings.warn("`apply_rand_augment` got n=0: no augmentation is applied.", stacklevel=2)
        return data
    if not augmentations:
        raise ValueError("The `augmentations` list of `apply_rand_augment` is empty (and n > 0).")
    shape = () if n == 1 else (n,)
    op_idx = fn.random.uniform(
        values=list(range(len(augmentations))), seed=seed, shape=shape, dtype=types.INT32
    )
    record("op_idx", op_idx)
    signed = any(aug.randomly_negate for aug in augmentations)
    mag_bin: Any = m
    if signed:
        mag_bin = signed_bin(m, seed=seed, shape=shape)
        record("random_sign", mag_bin.random_sign)
    forbid_unused_kwargs(augmentations, kwargs, "apply_rand_augment")
    for level in range(n):
        level_bin = mag_bin[level] if signed and n > 1 else mag_bin
        data = pretty_select(
            augmentations,
            op_idx if n == 1 else op_idx[level],
            dict(
                data=data, magnitude_bin=level_bin, num_magnitude_bins=num_magnitude_bins, **kwargs
            ),
            auto_aug_name="apply_rand_augment",
            ref_suite_name="get_rand_augment_suite",
        )
    return data


def get_rand_augment_suite(
    use_shape: bool = False,
    max_translate_abs: int | None = None,
    max_translate_rel: float | None = None,
) -> list[_Augmentation]:
    """The 14 augmentations of RandAugment, each stronger at a higher bin.

    Translations reach ``max_translate_rel`` of the image (default 100/224) with
    ``use_shape``, else ``max_translate_abs`` pixels (default 100); shear 0.3, rotate 30
    degrees, enhance factors 1 +- 0.9, posterize 8 down to 4 bits, solarize thresholds 256
    down to 0; equalize, auto_contrast and identity take no magnitude.
    """
    return [
        *get_translations(use_shape, 100, 100 / 224, max_translate_abs, max_translate_rel),
        a.shear_x.augmentation((0, 0.3), True),
        a.shear_y.augmentation((0, 0.3), True),
        a.rotate.augmentation((0, 30), True),
        a.brightness.augmentation((0, 0.9), True, a.shift_enhance_range),
        a.contrast.augmentation((0, 0.9), True, a.shift_enhance_range),
        a.color.augmentation((0, 0.9), True, a.shift_enhance_range),
        a.sharpness.augmentation((0, 0.9), True, a.sharpness_kernel),
        a.posterize.augmentation((8, 4), False, a.poster_mask_uint8),
        a.solarize.augmentation((256, 0)),  # a lower threshold inverts more
        a.equalize,
        a.auto_contrast,
        a.identity,
    ]


def get_rand_augment_non_monotonic_suite(
    use_shape: bool = False,
    max_translate_abs: int | None = None,
    max_translate_rel: float | None = None,
) -> list[_Augmentation]:
    """RandAugment's suite with AutoAugment's ranges for the color operations:
    enhance factors 0.1 to 1.9 (weakest mid-range), posterize 0 to 4 bits and solarize
    thresholds 0 to 256 (both weaker at higher bins)."""
    return [
        *get_translations(use_shape, 100, 100 / 224, max_translate_abs, max_translate_rel),
        a.shear_x.augmentation((0, 0.3), True),
        a.shear_y.augmentation((0, 0.3), True),
        a.rotate.augmentation((0, 30), True),
        a.brightness.augmentation((0.1, 1.9), False, None),
        a.contrast.augmentation((0.1, 1.9), False, None),
        a.color.augmentation((0.1, 1.9), False, None),
        a.sharpness.augmentation((0.1, 1.9), False, a.sharpness_kernel_shifted),
        a.posterize.augmentation((0, 4), False, a.poster_mask_uint8),
        a.solarize.augmentation((0, 256), False, None),
        a.equalize,
        a.auto_contrast,
        a.identity,
    ]
