"""Synthetic, photo-like test images and encoders shared by the decoder tests."""

from __future__ import annotations

import io

import cv2
import numpy as np
from PIL import Image


def photo(height: int, width: int, seed: int = 0, channels: int = 3) -> np.ndarray:
    """Smooth random colour fields plus noise: compresses like a photograph."""
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (height // 16 + 2, width // 16 + 2, channels), dtype=np.uint8)
    smooth = cv2.resize(small, (width, height), interpolation=cv2.INTER_CUBIC)
    smooth = smooth.reshape(height, width, channels).astype(np.int16)
    noise = rng.normal(0, 8, (height, width, channels))
    return np.clip(smooth + noise, 0, 255).astype(np.uint8)


def encode(image: Image.Image | np.ndarray, fmt: str, **params) -> bytes:
    """Encode with Pillow and return the bytes."""
    if isinstance(image, np.ndarray):
        image = Image.fromarray(image.squeeze(-1) if image.shape[-1] == 1 else image)
    buffer = io.BytesIO()
    image.save(buffer, fmt, **params)
    return buffer.getvalue()


def pillow_decode(data: bytes, mode: str = "RGB") -> np.ndarray:
    """The reference: Pillow's own decode, converted to `mode`, as HWC."""
    array = np.asarray(Image.open(io.BytesIO(data)).convert(mode))
    return array[:, :, None] if array.ndim == 2 else array
