"""Samples as the image kernels take them: HW / HWC images, frame by frame, channels last.

``map_images`` runs a kernel on each image of a sample whose layout is HW, HWC, CHW, FHW,
FHWC or FCHW (or, without a layout, HW / HWC / FHWC by rank) and reassembles the result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["map_images"]


def map_images(
    image: np.ndarray, layout: str | None, run: Callable[[np.ndarray, int | None], Any], op: str
) -> np.ndarray:
    """Apply ``run(image, frame_index)`` to each HW / HWC image of ``image``; frame_index is
    None for a single image."""
    layout = layout or {2: "HW", 3: "HWC", 4: "FHWC"}.get(image.ndim, "")
    if len(layout) != image.ndim or layout.lstrip("F") not in ("HW", "HWC", "CHW"):
        raise ValueError(
            f"{op}: expected HW, HWC, CHW, FHW, FHWC or FCHW samples, got shape {image.shape}"
            f" with layout {layout!r}"
        )
    frames = layout.startswith("F")
    planar = layout.endswith("CHW")

    def one(img: np.ndarray, f: int | None) -> np.ndarray:
        if planar:
            return np.ascontiguousarray(np.moveaxis(run(np.moveaxis(img, 0, -1), f), -1, 0))
        return run(img, f)

    if frames:
        if len(image) == 0:
            return image.copy()
        return np.stack([one(frame, f) for f, frame in enumerate(image)])
    return one(image, None)
