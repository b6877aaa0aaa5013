"""Affine transform matrices: ``fn.transforms.rotation``, ``translation``, ``scale``, ``shear``,
``crop`` and ``combine`` (2x3 float32 per sample, for fn.warp_affine and fn.coord_transform)."""

from __future__ import annotations

from chute.ops.geometry.transform_ops import Combine, Crop, Rotation, Scale, Shear, Translation
from chute.runtime.operator import make_fn

__all__ = ["combine", "crop", "rotation", "scale", "shear", "translation"]

combine = make_fn(Combine)
crop = make_fn(Crop)
rotation = make_fn(Rotation)
scale = make_fn(Scale)
shear = make_fn(Shear)
translation = make_fn(Translation)
