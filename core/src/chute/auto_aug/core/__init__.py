"""Building blocks of automatic augmentation policies (``nvidia.dali.auto_aug.core``).

``@augmentation`` turns a function of chute operators into an augmentation with a
magnitude range; ``signed_bin`` draws the random signs of magnitudes once for a batch;
``select`` applies to each sample the augmentation its index picks (only to the
samples that picked it); ``Policy`` describes an AutoAugment policy; ``record_choices`` (chute's own) lets a
pipeline return the random choices the policies made for each sample.
"""

from __future__ import annotations

from chute.auto_aug.core._augmentation import Augmentation as _Augmentation
from chute.auto_aug.core._augmentation import signed_bin
from chute.auto_aug.core._select import select
from chute.auto_aug.core.choices import record_choices
from chute.auto_aug.core.decorator import augmentation
from chute.auto_aug.core.policy import Policy

__all__ = ["Policy", "_Augmentation", "augmentation", "record_choices", "select", "signed_bin"]
