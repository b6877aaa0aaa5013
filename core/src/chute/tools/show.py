"""chute.show_batch: an image grid of a batch, with captions, written to a PNG."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def _to_hwc_uint8(sample: np.ndarray, layout: str, mean: Any, std: Any) -> np.ndarray:
    x = np.asarray(sample, dtype=np.float32)
    if layout.startswith("C") or (
        x.ndim == 3 and x.shape[0] in (1, 3) and x.shape[-1] not in (1, 3)
    ):
        x = x.transpose(1, 2, 0)
    if std is not None:
        x = x * np.asarray(std, np.float32)
    if mean is not None:
        x = x + np.asarray(mean, np.float32)
    if x.ndim == 2:
        x = x[..., None]
    if x.shape[-1] == 1:
        x = np.repeat(x, 3, axis=-1)
    return np.clip(x, 0, 255).astype(np.uint8)


def show_batch(
    batch: Any,
    path: str,
    captions: Sequence[str] | None = None,
    columns: int = 8,
    mean: Sequence[float] | None = None,
    std: Sequence[float] | None = None,
    max_images: int = 32,
) -> str:
    """Write the first ``max_images`` samples of ``batch`` as a grid PNG at ``path``.

    ``batch`` is a TensorList (CPU or GPU) or a sequence of arrays; normalized
    images are brought back to pixels with ``mean``/``std``; ``captions`` (for
    example class names) are drawn under each image.
    """
    from PIL import Image, ImageDraw

    if hasattr(batch, "as_cpu"):
        batch = batch.as_cpu()
    layout = batch.layout() if hasattr(batch, "layout") else ""
    samples = [
        batch.at(i) if hasattr(batch, "at") else batch[i]
        for i in range(min(len(batch), max_images))
    ]
    tiles = [_to_hwc_uint8(s, layout, mean, std) for s in samples]
    th = max(t.shape[0] for t in tiles)
    tw = max(t.shape[1] for t in tiles)
    caption_h = 14 if captions else 0
    cols = min(columns, len(tiles))
    rows = -(-len(tiles) // cols)
    grid = Image.new("RGB", (cols * (tw + 4), rows * (th + caption_h + 4)), (255, 255, 255))
    draw = ImageDraw.Draw(grid)
    for k, tile in enumerate(tiles):
        x, y = (k % cols) * (tw + 4) + 2, (k // cols) * (th + caption_h + 4) + 2
        grid.paste(Image.fromarray(tile), (x, y))
        if captions:
            draw.text((x + 2, y + th + 1), str(captions[k])[:30], fill=(0, 0, 0))
    grid.save(path)
    return path
