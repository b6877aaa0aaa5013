"""Test images of the GPU geometry tests: smooth content, and tolerances that follow it."""

from __future__ import annotations

import math

import cv2
import numpy as np


def smooth(h: int, w: int, c: int = 3, seed: int = 0, dtype=np.uint8) -> np.ndarray:
    """Smooth random content (gradients of a few levels per pixel), HWC or HW (c=0)."""
    rng = np.random.default_rng(seed)
    img = cv2.GaussianBlur(rng.uniform(0, 255, (h, w, max(c, 1))), (0, 0), 2.0)
    img = img.reshape(h, w, max(c, 1))
    img = (img - img.min()) * (250 / max(np.ptp(img), 1e-6)) + 2
    img = img if dtype == np.float32 else np.rint(img)
    img = img.astype(dtype)
    return img[:, :, 0] if c == 0 else img


def batch(sizes: list, c: int = 3, dtype=np.uint8) -> list[np.ndarray]:
    return [smooth(h, w, c, i, dtype) for i, (h, w) in enumerate(sizes)]


def gradient(image: np.ndarray) -> float:
    x = image.astype(np.float64)
    return max(np.abs(np.diff(x, axis=a)).max() for a in (0, 1))


def bordered(image: np.ndarray, fill=None, border: str | None = None) -> np.ndarray:
    """The image with one pixel of its border around it: what a sampler sees at the edges.

    ``border`` None or "constant" pads with ``fill`` (a scalar or one value per channel;
    0 when None); the other modes as numpy.pad does them.
    """
    modes = {"reflect": "symmetric", "reflect_101": "reflect", "replicate": "edge", "wrap": "wrap"}
    x = image.astype(np.float64)
    x = x[:, :, None] if x.ndim == 2 else x
    if border in modes:
        return np.pad(x, ((1, 1), (1, 1), (0, 0)), mode=modes[border])
    values = np.broadcast_to(np.asarray(0.0 if fill is None else fill, np.float64), (x.shape[2],))
    return np.stack(
        [np.pad(x[:, :, c], 1, constant_values=v) for c, v in enumerate(values)], axis=-1
    )


def warp_tolerance(image: np.ndarray, fill=None, border: str | None = None) -> float:
    """Error bound of a bilinear warp against an exact sampler.

    OpenCV quantises sample positions to 1/32 px, so the error is at most the steepest
    step the sampler can meet / 32 (steps into the border included: which SIMD path
    OpenCV takes decides where the quantised positions fall), plus rounding.
    """
    step = gradient(bordered(image, fill, border))
    return step / 32 + (1.0 if image.dtype == np.uint8 else 1e-3)


def random_matrices(n: int, seed: int = 0) -> np.ndarray:
    """Random 2x3 affine matrices near rotations (angle, scale, shear, shift) per sample."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        a, s = rng.uniform(-0.6, 0.6), rng.uniform(0.7, 1.3)
        out.append(
            [
                [s * math.cos(a), -s * math.sin(a) + rng.uniform(-0.2, 0.2), rng.uniform(-9, 9)],
                [s * math.sin(a), s * math.cos(a), rng.uniform(-9, 9)],
            ]
        )
    return np.asarray(out)
