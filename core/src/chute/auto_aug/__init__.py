"""Automatic augmentation policies: AutoAugment, RandAugment, TrivialAugment (DALI's
``nvidia.dali.auto_aug``, ported by changing the import).

    from chute import pipeline_def, fn, types
    from chute.auto_aug import rand_augment

    @pipeline_def(enable_conditionals=True)
    def training_pipe(...):
        ...
        images = rand_augment.rand_augment(images, shape=shapes, n=2, m=9)

Each sample gets its own random choice of augmentations; the batch is split among them
(chute.pipeline's per-sample conditionals) so that each augmentation runs only on the
samples that chose it. The choices come from chute's random operators: the same seed
gives the same augmentations.
"""

from __future__ import annotations

from chute.auto_aug import augmentations, core  # isort: skip  (the policies import them)
from chute.auto_aug import auto_augment, rand_augment, trivial_augment

__all__ = ["augmentations", "auto_augment", "core", "rand_augment", "trivial_augment"]
