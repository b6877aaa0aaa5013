"""GPU backend of the auto_aug point operation: one table per (image, channel), built on
the host by the CPU's functions (so the tables are the CPU's), one lookup launch per batch.

contrast, auto_contrast and equalize read the images' per-channel histograms, counted on
the device in one launch and copied back (``n * C * 256`` counts); their means and ranges
come from the histograms exactly (:func:`~chute.ops.auto_aug.point_kernels.stats_from_histograms`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.ops.auto_aug.point_kernels import NEEDS_STATS, point_luts, stats_from_histograms
from chute.ops.image.distortion_gpu import lut_batch

__all__ = ["point_batch"]


def point_batch(inputs: list, args: Any, ctx: Any) -> Any:
    """The batch's point operation on the GPU: tables on the host, one lookup launch."""
    kind = args["kind"]
    params = [float(p) for p in args.column("param")]

    def make_luts(hist: np.ndarray | None, images: Any) -> np.ndarray:
        per_image = np.asarray(images.per_image(params), np.float64)
        stats = stats_from_histograms(kind, hist) if hist is not None else {}
        return point_luts(kind, per_image, stats, images.channels)

    return lut_batch(inputs, ctx, f"the {kind} augmentation", make_luts, kind in NEEDS_STATS)
