"""AutoAugment (https://arxiv.org/abs/1805.09501): each sample runs one random sub-policy,
whose steps apply with their probabilities at their magnitude bins.

The policies and their magnitudes (11 bins, bin k = k/10 of each range: shear 0.3,
rotate 30 degrees, translate 250 pixels, enhance factors 0.1 to 1.9, posterize 0 to 4
bits, solarize 0 to 256, solarize_add 0 to 110) are those of the AutoAugment
implementation in tensorflow/tpu (EfficientNet's ``policy_v0`` for ``image_net``); steps
with probability 0 are left out. ``reduced_image_net`` is the ImageNet table printed in
the paper's appendix, which is also what torchvision's ``AutoAugmentPolicy.IMAGENET``
runs; torchvision differs in its magnitudes too: 10 bins (bin k = k/9 of each range),
translations of 150/331 of the image, posterize 4 to 8 bits, solarize 256 to 0.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute import fn, types
from chute.auto_aug import augmentations as a
from chute.auto_aug._utils import get_translations, pretty_select
from chute.auto_aug.core import Policy, _Augmentation, signed_bin
from chute.auto_aug.core._args import forbid_unused_kwargs
from chute.auto_aug.core.choices import record
from chute.conditionals import if_else
from chute.graph import DataNode

__all__ = [
    "apply_auto_augment",
    "auto_augment",
    "auto_augment_image_net",
    "get_image_net_policy",
    "get_reduced_cifar10_policy",
    "get_reduced_image_net_policy",
    "get_svhn_policy",
]

_DEFAULT_TRANSLATE_ABS, _DEFAULT_TRANSLATE_REL = 250, 1.0


def auto_augment(
    data: DataNode,
    policy_name: str = "image_net",
    shape: DataNode | tuple[int, int] | None = None,
    fill_value: int | None = 128,
    interp_type: Any = None,
    max_translate_abs: int | None = None,
    max_translate_rel: float | None = None,
    seed: int | None = None,
) -> DataNode:
    """Apply one of AutoAugment's policies to a batch of uint8 images (HWC), CPU or GPU.

    Args:
        data: the batch.
        policy_name: ``image_net`` (default), ``reduced_image_net``, ``svhn`` or
            ``reduced_cifar10``.
        shape: each sample's (H, W, ...) or one (H, W): translations then reach
            ``max_translate_rel`` of the image (default 1); without it they reach
            ``max_translate_abs`` pixels (default 250).
        fill_value: the value of pixels that shear, translate and rotate bring in (None
            repeats the border).
        interp_type: their interpolation (``types.INTERP_LINEAR`` by default).
        max_translate_abs: the largest shift in pixels, or a (height, width) pair.
        max_translate_rel: the largest shift as a fraction of the image, or a pair.
        seed: the seed of the random choices (sub-policy, steps and signs).
    """
    policies = {
        "image_net": get_image_net_policy,
        "reduced_image_net": get_reduced_image_net_policy,
        "svhn": get_svhn_policy,
        "reduced_cifar10": get_reduced_cifar10_policy,
    }
    if not isinstance(policy_name, str) or policy_name not in policies:
        raise ValueError(
            f"The `policy_name` must be one of {', '.join(map(repr, policies))}, "
            f"got {policy_name!r}."
        )
    kwargs: dict[str, Any] = {"fill_value": fill_value, "interp_type": interp_type}
    if policy_name == "reduced_image_net":  # no translations: nothing takes a shape
        given = [
            name
            for name, value in (
                ("shape", shape),
                ("max_translate_abs", max_translate_abs),
                ("max_translate_rel", max_translate_rel),
            )
            if value is not None
        ]
        if given:
            raise ValueError(
                f"The policy `reduced_image_net` has no augmentation that depends on the image "
                f"shape: the argument `{given[0]}` must not be given."
            )
        policy = get_reduced_image_net_policy()
    else:
        if shape is not None:
            kwargs["shape"] = shape
        policy = policies[policy_name](shape is not None, max_translate_abs, max_translate_rel)
    return apply_auto_augment(policy, data, seed, **kwargs)


def auto_augment_image_net(
    data: DataNode,
    shape: DataNode | tuple[int, int] | None = None,
    fill_value: int | None = 128,
    interp_type: Any = None,
    max_translate_abs: int | None = None,
    max_translate_rel: float | None = None,
    seed: int | None = None,
) -> DataNode:
    """:func:`auto_augment` with the ``image_net`` policy."""
    return auto_augment(
        data,
        "image_net",
        shape,
        fill_value,
        interp_type,
        max_translate_abs,
        max_translate_rel,
        seed,
    )


def apply_auto_augment(
    policy: Policy, data: DataNode, seed: int | None = None, **kwargs: Any
) -> DataNode:
    """Apply ``policy`` to each sample, AutoAugment's way: a sub-policy drawn uniformly,
    then each of its steps where a uniform draw falls below the step's probability.

    ``kwargs`` go to the augmentations that take them by name (``shape``, ``fill_value``,
    ``interp_type``, ...); one that none takes is an error.
    """
    if not policy.sub_policies:
        raise ValueError(f"`apply_auto_augment` cannot run an empty policy: {policy}.")
    length = max(len(sub_policy) for sub_policy in policy.sub_policies)
    should_run = fn.random.uniform(range=[0, 1], shape=(length,), dtype=types.FLOAT, seed=seed)
    sub_policy_id = fn.random.uniform(
        values=list(range(len(policy.sub_policies))), seed=seed, dtype=types.INT32
    )
    record("sub_policy_id", sub_policy_id)
    record("should_run", should_run)
    probabilities, bins, aug_ids, stages = _policy_tables(policy)
    run_probability = types.Constant(probabilities)[sub_policy_id]
    magnitude_bins: Any = types.Constant(bins)[sub_policy_id]
    aug_ids_of_sample = types.Constant(aug_ids)[sub_policy_id]
    if any(aug.randomly_negate for aug in policy.augmentations.values()):
        magnitude_bins = signed_bin(magnitude_bins, seed=seed, shape=(length,))
        record("random_sign", magnitude_bins.random_sign)
    forbid_unused_kwargs(policy.augmentations.values(), kwargs, "apply_auto_augment")
    for stage in range(length):

        def run_step(data: DataNode = data, stage: int = stage) -> DataNode:
            step_kwargs = dict(
                data=data,
                magnitude_bin=magnitude_bins[stage],
                num_magnitude_bins=policy.num_magnitude_bins,
                **kwargs,
            )
            return pretty_select(
                stages[stage],
                aug_ids_of_sample[stage],
                step_kwargs,
                auto_aug_name="apply_auto_augment",
                ref_suite_name="get_image_net_policy",
            )

        def skip_step(data: DataNode = data) -> DataNode:
            return data

        data = if_else(
            should_run[stage] < run_probability[stage],
            run_step,
            skip_step,
            where=f"apply_auto_augment step {stage}",
        )
    return data


def _policy_tables(
    policy: Policy,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[list[_Augmentation]]]:
    """Per sub-policy and step: the probability (0 past a sub-policy's end), the magnitude
    bin (-1 where the augmentation takes none) and the index of the augmentation among
    the distinct ones of that step (``stages[step]``, identity last for the steps past a
    sub-policy's end)."""
    subs = policy.sub_policies
    length = max(len(sub) for sub in subs)
    probabilities = np.zeros((len(subs), length), np.float32)
    bins = np.full((len(subs), length), -1, np.int32)
    stages: list[list[_Augmentation]] = []
    for step in range(length):
        distinct: list[_Augmentation] = []
        for sub in subs:
            if step < len(sub) and sub[step][0] not in distinct:
                distinct.append(sub[step][0])
        stages.append([*distinct, a.identity])
    aug_ids = np.array([[len(stage) - 1 for stage in stages]] * len(subs), np.int32)
    for k, sub in enumerate(subs):
        for step, (aug, p, mag) in enumerate(sub):
            probabilities[k, step] = p
            bins[k, step] = -1 if mag is None else mag
            aug_ids[k, step] = stages[step].index(aug)
    return probabilities, bins, aug_ids, stages


def _translations(use_shape: bool, max_abs: Any, max_rel: Any) -> list[_Augmentation]:
    return get_translations(
        use_shape, _DEFAULT_TRANSLATE_ABS, _DEFAULT_TRANSLATE_REL, max_abs, max_rel
    )


def _common() -> dict[str, _Augmentation]:
    """AutoAugment's ranges (at bin 10 the ``_MAX_LEVEL`` end of tensorflow/tpu's)."""
    return {
        "shear_x": a.shear_x.augmentation((0, 0.3), True),
        "shear_y": a.shear_y.augmentation((0, 0.3), True),
        "rotate": a.rotate.augmentation((0, 30), True),
        "brightness": a.brightness.augmentation((0.1, 1.9), False, None),
        "color": a.color.augmentation((0.1, 1.9), False, None),
        "contrast": a.contrast.augmentation((0.1, 1.9), False, None),
        "sharpness": a.sharpness.augmentation((0.1, 1.9), False, a.sharpness_kernel_shifted),
        "posterize": a.posterize.augmentation((0, 4), False, a.poster_mask_uint8),
        "solarize": a.solarize.augmentation((0, 256), False),
        "solarize_add": a.solarize_add.augmentation((0, 110), False),
        "invert": a.invert,
        "equalize": a.equalize,
        "auto_contrast": a.auto_contrast,
    }


def get_image_net_policy(
    use_shape: bool = False,
    max_translate_abs: int | None = None,
    max_translate_rel: float | None = None,
) -> Policy:
    """AutoAugment's ImageNet policy (tensorflow/tpu's ``policy_v0``), for
    :func:`apply_auto_augment`.

    Args:
        use_shape: translate by a fraction of each image's shape (``max_translate_rel``,
            default 1) rather than by pixels (``max_translate_abs``, default 250); the
            augmentations then take ``shape``.
        max_translate_abs: the largest shift in pixels, or a (height, width) pair.
        max_translate_rel: the largest shift as a fraction of the image, or a pair.
    """
    _, translate_y = _translations(use_shape, max_translate_abs, max_translate_rel)
    c = _common()
    shear_x, shear_y, rotate, color = c["shear_x"], c["shear_y"], c["rotate"], c["color"]
    posterize, solarize, solarize_add = c["posterize"], c["solarize"], c["solarize_add"]
    invert, equalize, auto_contrast = c["invert"], c["equalize"], c["auto_contrast"]
    return Policy(
        name="ImageNetPolicy",
        num_magnitude_bins=11,
        sub_policies=[
            [(equalize, 0.8, None), (shear_y, 0.8, 4)],
            [(color, 0.4, 9), (equalize, 0.6, None)],
            [(color, 0.4, 1), (rotate, 0.6, 8)],
            [(solarize, 0.8, 3), (equalize, 0.4, None)],
            [(solarize, 0.4, 2), (solarize, 0.6, 2)],
            [(color, 0.2, 0), (equalize, 0.8, None)],
            [(equalize, 0.4, None), (solarize_add, 0.8, 3)],
            [(shear_x, 0.2, 9), (rotate, 0.6, 8)],
            [(color, 0.6, 1), (equalize, 1.0, None)],
            [(invert, 0.4, None), (rotate, 0.6, 0)],
            [(equalize, 1.0, None), (shear_y, 0.6, 3)],
            [(color, 0.4, 7), (equalize, 0.6, None)],
            [(posterize, 0.4, 6), (auto_contrast, 0.4, None)],
            [(solarize, 0.6, 8), (color, 0.6, 9)],
            [(solarize, 0.2, 4), (rotate, 0.8, 9)],
            [(rotate, 1.0, 7), (translate_y, 0.8, 9)],
            [(solarize, 0.8, 4)],  # tensorflow/tpu: (ShearX, 0.0, 0) first
            [(shear_y, 0.8, 0), (color, 0.6, 4)],
            [(color, 1.0, 0), (rotate, 0.6, 2)],
            [(equalize, 0.8, None)],  # tensorflow/tpu: then (Equalize, 0.0, 8)
            [(equalize, 1.0, None), (auto_contrast, 0.6, None)],
            [(shear_y, 0.4, 7), (solarize_add, 0.6, 7)],
            [(posterize, 0.8, 2), (solarize, 0.6, 10)],
            [(solarize, 0.6, 8), (equalize, 0.6, None)],
            [(color, 0.8, 6), (rotate, 0.4, 5)],
        ],
    )


def get_reduced_cifar10_policy(
    use_shape: bool = False,
    max_translate_abs: int | None = None,
    max_translate_rel: float | None = None,
) -> Policy:
    """AutoAugment's policy found on reduced CIFAR-10, for :func:`apply_auto_augment`
    (arguments as :func:`get_image_net_policy`'s)."""
    translate_x, translate_y = _translations(use_shape, max_translate_abs, max_translate_rel)
    c = _common()
    shear_y, rotate, brightness, color = c["shear_y"], c["rotate"], c["brightness"], c["color"]
    contrast, sharpness, posterize, solarize = (
        c["contrast"],
        c["sharpness"],
        c["posterize"],
        c["solarize"],
    )
    invert, equalize, auto_contrast = c["invert"], c["equalize"], c["auto_contrast"]
    return Policy(
        name="ReducedCifar10Policy",
        num_magnitude_bins=11,
        sub_policies=[
            [(invert, 0.1, None), (contrast, 0.2, 6)],
            [(rotate, 0.7, 2), (translate_x, 0.3, 9)],
            [(sharpness, 0.8, 1), (sharpness, 0.9, 3)],
            [(shear_y, 0.5, 8), (translate_y, 0.7, 9)],
            [(auto_contrast, 0.5, None), (equalize, 0.9, None)],
            [(shear_y, 0.2, 7), (posterize, 0.3, 7)],
            [(color, 0.4, 3), (brightness, 0.6, 7)],
            [(sharpness, 0.3, 9), (brightness, 0.7, 9)],
            [(equalize, 0.6, None), (equalize, 0.5, None)],
            [(contrast, 0.6, 7), (sharpness, 0.6, 5)],
            [(color, 0.7, 7), (translate_x, 0.5, 8)],
            [(equalize, 0.3, None), (auto_contrast, 0.4, None)],
            [(translate_y, 0.4, 3), (sharpness, 0.2, 6)],
            [(brightness, 0.9, 6), (color, 0.2, 8)],
            [(solarize, 0.5, 2)],  # the paper: then (Invert, 0.0, 3)
            [(equalize, 0.2, None), (auto_contrast, 0.6, None)],
            [(equalize, 0.2, None), (equalize, 0.6, None)],
            [(color, 0.9, 9), (equalize, 0.6, None)],
            [(auto_contrast, 0.8, None), (solarize, 0.2, 8)],
            [(brightness, 0.1, 3), (color, 0.7, 0)],
            [(solarize, 0.4, 5), (auto_contrast, 0.9, None)],
            [(translate_y, 0.9, 9), (translate_y, 0.7, 9)],
            [(auto_contrast, 0.9, None), (solarize, 0.8, 3)],
            [(equalize, 0.8, None), (invert, 0.1, None)],
            [(translate_y, 0.7, 9), (auto_contrast, 0.9, None)],
        ],
    )


def get_svhn_policy(
    use_shape: bool = False,
    max_translate_abs: int | None = None,
    max_translate_rel: float | None = None,
) -> Policy:
    """AutoAugment's policy found on SVHN, for :func:`apply_auto_augment` (arguments as
    :func:`get_image_net_policy`'s)."""
    translate_x, translate_y = _translations(use_shape, max_translate_abs, max_translate_rel)
    c = _common()
    shear_x, shear_y, rotate, contrast = c["shear_x"], c["shear_y"], c["rotate"], c["contrast"]
    solarize, invert, equalize, auto_contrast = (
        c["solarize"],
        c["invert"],
        c["equalize"],
        c["auto_contrast"],
    )
    return Policy(
        name="SvhnPolicy",
        num_magnitude_bins=11,
        sub_policies=[
            [(shear_x, 0.9, 4), (invert, 0.2, None)],
            [(shear_y, 0.9, 8), (invert, 0.7, None)],
            [(equalize, 0.6, None), (solarize, 0.6, 6)],
            [(invert, 0.9, None), (equalize, 0.6, None)],
            [(equalize, 0.6, None), (rotate, 0.9, 3)],
            [(shear_x, 0.9, 4), (auto_contrast, 0.8, None)],
            [(shear_y, 0.9, 8), (invert, 0.4, None)],
            [(shear_y, 0.9, 5), (solarize, 0.2, 6)],
            [(invert, 0.9, None), (auto_contrast, 0.8, None)],
            [(equalize, 0.6, None), (rotate, 0.9, 3)],
            [(shear_x, 0.9, 4), (solarize, 0.3, 3)],
            [(shear_y, 0.8, 8), (invert, 0.7, None)],
            [(equalize, 0.9, None), (translate_y, 0.6, 6)],
            [(invert, 0.9, None), (equalize, 0.6, None)],
            [(contrast, 0.3, 3), (rotate, 0.8, 4)],
            [(invert, 0.8, None)],  # the paper: then (TranslateY, 0.0, 2)
            [(shear_y, 0.7, 6), (solarize, 0.4, 8)],
            [(invert, 0.6, None), (rotate, 0.8, 4)],
            [(shear_y, 0.3, 7), (translate_x, 0.9, 3)],
            [(shear_x, 0.1, 6), (invert, 0.6, None)],
            [(solarize, 0.7, 2), (translate_y, 0.6, 7)],
            [(shear_y, 0.8, 4), (invert, 0.8, None)],
            [(shear_x, 0.7, 9), (translate_y, 0.8, 3)],
            [(shear_y, 0.8, 5), (auto_contrast, 0.7, None)],
            [(shear_x, 0.7, 2), (invert, 0.1, None)],
        ],
    )


def get_reduced_image_net_policy() -> Policy:
    """AutoAugment's ImageNet policy as printed in the paper's appendix (torchvision's
    ``AutoAugmentPolicy.IMAGENET``), for :func:`apply_auto_augment`. No translations."""
    c = _common()
    shear_x, rotate, color, contrast = c["shear_x"], c["rotate"], c["color"], c["contrast"]
    sharpness, posterize, solarize = c["sharpness"], c["posterize"], c["solarize"]
    invert, equalize, auto_contrast = c["invert"], c["equalize"], c["auto_contrast"]
    return Policy(
        name="ReducedImageNetPolicy",
        num_magnitude_bins=11,
        sub_policies=[
            [(posterize, 0.4, 8), (rotate, 0.6, 9)],
            [(solarize, 0.6, 5), (auto_contrast, 0.6, None)],
            [(equalize, 0.8, None), (equalize, 0.6, None)],
            [(posterize, 0.6, 7), (posterize, 0.6, 6)],
            [(equalize, 0.4, None), (solarize, 0.2, 4)],
            [(equalize, 0.4, None), (rotate, 0.8, 8)],
            [(solarize, 0.6, 3), (equalize, 0.6, None)],
            [(posterize, 0.8, 5), (equalize, 1.0, None)],
            [(rotate, 0.2, 3), (solarize, 0.6, 8)],
            [(equalize, 0.6, None), (posterize, 0.4, 6)],
            [(rotate, 0.8, 8), (color, 0.4, 0)],
            [(rotate, 0.4, 9), (equalize, 0.6, None)],
            [(equalize, 0.8, None)],  # the paper: (Equalize, 0.0, 7) first
            [(invert, 0.6, None), (equalize, 1.0, None)],
            [(color, 0.6, 4), (contrast, 1.0, 8)],
            [(rotate, 0.8, 8), (color, 1.0, 2)],
            [(color, 0.8, 8), (solarize, 0.8, 7)],
            [(sharpness, 0.4, 7), (invert, 0.6, None)],
            [(shear_x, 0.6, 5), (equalize, 1.0, None)],
            [(color, 0.4, 0), (equalize, 0.6, None)],
            [(equalize, 0.4, None), (solarize, 0.2, 4)],
            [(solarize, 0.6, 5), (auto_contrast, 0.6, None)],
            [(invert, 0.6, None), (equalize, 1.0, None)],
            [(color, 0.6, 4), (contrast, 1.0, 8)],
            [(equalize, 0.8, None), (equalize, 0.6, None)],
        ],
    )
