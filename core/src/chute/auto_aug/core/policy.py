"""Policy: AutoAugment's list of sub-policies, each a short sequence of augmentations."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from chute.auto_aug.core._augmentation import Augmentation

SubPolicy = Sequence[tuple[Augmentation, float, "int | None"]]


class Policy:
    """An AutoAugment policy (https://arxiv.org/abs/1805.09501).

    Each sample takes one sub-policy, chosen uniformly at random; the sub-policy's
    ``(augmentation, probability, magnitude_bin)`` steps then run in order, each with
    its probability.

    Args:
        name: the policy's name, for display.
        num_magnitude_bins: how many bins the augmentations' magnitude ranges are cut into.
        sub_policies: a list of sequences of ``(augmentation, probability, magnitude_bin)``;
            ``magnitude_bin`` is None for augmentations without a ``mag_range``.
    """

    def __init__(self, name: str, num_magnitude_bins: int, sub_policies: Sequence[SubPolicy]):
        if isinstance(num_magnitude_bins, bool) or not isinstance(num_magnitude_bins, int):
            raise TypeError(f"The `num_magnitude_bins` must be an int, got {num_magnitude_bins!r}.")
        if num_magnitude_bins < 1:
            raise ValueError(
                f"The `num_magnitude_bins` must be a positive integer, got {num_magnitude_bins}."
            )
        if not isinstance(sub_policies, (list, tuple)):
            raise TypeError(
                f"The `sub_policies` must be a list or tuple, got {type(sub_policies).__name__}."
            )
        self.name = name
        self.num_magnitude_bins = num_magnitude_bins
        for sub_policy in sub_policies:
            if not isinstance(sub_policy, (list, tuple)):
                raise TypeError(f"Each sub-policy must be a list or tuple, got {sub_policy!r}.")
            for step in sub_policy:
                self._check_step(step)
        self.sub_policies = _with_unique_names(sub_policies)

    def _check_step(self, step: Any) -> None:
        if not isinstance(step, (list, tuple)) or len(step) != 3:
            raise TypeError(
                "Each step of a sub-policy is a triple (augmentation, probability, "
                f"magnitude_bin), got {step!r}."
            )
        aug, p, mag = step
        if not isinstance(aug, Augmentation):
            raise TypeError(
                f"The steps of a sub-policy take Augmentations, got {aug!r}; was the function "
                "decorated with `@augmentation`?"
            )
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0 <= p <= 1:
            raise ValueError(
                f"The probability of a step must be a number in [0, 1], got {p!r} for `{aug.name}`."
            )
        if p == 0:
            warnings.warn(
                f"The augmentation `{aug.name}` has probability 0 in a sub-policy of "
                f"`{self.name}`.",
                stacklevel=3,
            )
        if mag is None:
            if aug.mag_range is not None:
                raise ValueError(
                    f"The augmentation `{aug.name}` has a `mag_range`, so its step in policy "
                    f"`{self.name}` needs a magnitude bin, got None."
                )
            return
        if aug.mag_range is None:
            warnings.warn(
                f"The magnitude bin {mag} of `{aug.name}` in policy `{self.name}` is ignored: "
                "the augmentation takes no magnitude (no `mag_range`); give None instead.",
                stacklevel=3,
            )
        if (
            isinstance(mag, bool)
            or not isinstance(mag, int)
            or not 0 <= mag < self.num_magnitude_bins
        ):
            raise ValueError(
                f"The magnitude bin of a step must be an int in [0, {self.num_magnitude_bins - 1}], "
                f"got {mag!r} for `{aug.name}`."
            )

    @property
    def augmentations(self) -> dict[str, Augmentation]:
        """The policy's augmentations by name, sorted by name."""
        augs = {aug for sub_policy in self.sub_policies for aug, _, _ in sub_policy}
        return {aug.name: aug for aug in sorted(augs, key=lambda a: a.name)}

    def __repr__(self) -> str:
        subs = ",\n\t".join(
            repr([(aug.name, p, mag) for aug, p, mag in sub]) for sub in self.sub_policies
        )
        augs = ",\n\t".join(f"'{name}': {aug!r}" for name, aug in self.augmentations.items())
        subs_sep = "\n\t" if subs else ""
        augs_sep = "\n\t" if augs else ""
        return (
            f"Policy(name={self.name!r}, num_magnitude_bins={self.num_magnitude_bins!r}, "
            f"sub_policies=[{subs_sep}{subs}], augmentations={{{augs_sep}{augs}}})"
        )


def _with_unique_names(sub_policies: Sequence[SubPolicy]) -> tuple[tuple, ...]:
    """The sub-policies as tuples; where two distinct augmentations share a name, every
    augmentation is renamed ``<k>__<name>`` (k in order of first use) so that each name
    says which one it is."""
    in_order: list[Augmentation] = []
    for sub_policy in sub_policies:
        for aug, _, _ in sub_policy:
            if aug not in in_order:
                in_order.append(aug)
    if len({aug.name for aug in in_order}) == len(in_order):
        return tuple(tuple(sub_policy) for sub_policy in sub_policies)
    width = len(str(len(in_order) - 1))
    renamed = {
        aug: aug.augmentation(name=f"{str(k).zfill(width)}__{aug.name}")
        for k, aug in enumerate(in_order)
    }
    return tuple(
        tuple((renamed[aug], p, mag) for aug, p, mag in sub_policy) for sub_policy in sub_policies
    )
