"""NumPy/OpenCV references of the auto_aug augmentations, and a runner for them.

Each reference states the augmentation's definition directly (PIL's enhance formulas,
DALI's pixel-centre geometry), independently of the operators chute builds it from.
"""

from __future__ import annotations

import math

import cv2
import numpy as np
from scipy import ndimage

from chute import fn, pipeline_def

LUMA = np.array([0.299, 0.587, 0.114])


def run_aug(aug, images, magnitude_bin=None, num_magnitude_bins=None, device="cpu", **kwargs):
    """The augmentation applied to a batch of HWC uint8 images, as NumPy arrays."""

    @pipeline_def(
        batch_size=len(images), num_threads=2, device_id=0 if device == "gpu" else None, seed=3
    )
    def pipe():
        x = fn.external_source(source=lambda: list(images), layout="HWC")
        # argument inputs (a shape) are CPU data, as in DALI: taken before the move
        extra = {k: (v(x) if callable(v) else v) for k, v in kwargs.items()}
        if device == "gpu":
            x = x.gpu()
        mag_bin = magnitude_bin() if callable(magnitude_bin) else magnitude_bin
        return aug(x, magnitude_bin=mag_bin, num_magnitude_bins=num_magnitude_bins, **extra)

    p = pipe()
    p.build()
    (out,) = p.run()
    out = out.as_cpu()
    return [np.asarray(out.at(i)) for i in range(len(images))]


def per_sample(*values, dtype=np.int32):
    """A DataNode with one scalar per sample (an external_source of ``values``)."""
    return fn.external_source(source=lambda: [np.array(v, dtype) for v in values])


def assert_rounds(actual, exact, eps=1e-3):
    """``actual`` (uint8) is ``exact`` (float) clipped to [0, 255] and rounded (either way
    at a tie)."""
    expected = np.clip(np.asarray(exact, np.float64), 0, 255)
    diff = np.abs(actual.astype(np.float64) - expected)
    assert actual.dtype == np.uint8
    assert diff.max() <= 0.5 + eps, (diff.max(), np.argwhere(diff > 0.5 + eps)[:5])


def forward_warp_nn(image, matrix, fill):
    """Warp with a forward 2x3 matrix (input -> output points), nearest neighbour, pixel
    (x, y) covering [x, x+1) x [y, y+1): each output centre samples the input pixel its
    inverse-mapped point falls in; points outside take ``fill``, or with ``fill=None`` the
    nearest border pixel's value."""
    h, w = image.shape[:2]
    full = np.vstack([np.asarray(matrix, np.float64).reshape(2, 3), [0, 0, 1]])
    inv = np.linalg.inv(full)
    ys, xs = np.mgrid[0:h, 0:w]
    pts = np.stack([xs + 0.5, ys + 0.5, np.ones_like(xs, dtype=np.float64)], axis=-1)
    src = pts @ inv.T
    sx, sy = np.floor(src[..., 0]).astype(int), np.floor(src[..., 1]).astype(int)
    if fill is None:
        return image[np.clip(sy, 0, h - 1), np.clip(sx, 0, w - 1)]
    inside = (sx >= 0) & (sx < w) & (sy >= 0) & (sy < h)
    out = np.empty_like(image)
    out[...] = fill
    out[inside] = image[sy[inside], sx[inside]]
    return out


def shear_matrix(sx, sy):
    return [[1, sx, 0], [sy, 1, 0]]


def translation_matrix(tx, ty):
    return [[1, 0, tx], [0, 1, ty]]


def rotation_matrix(angle_deg, h, w):
    """Counter-clockwise (as displayed, y down) about the image centre, forward."""
    a = math.radians(angle_deg)
    c, s = math.cos(a), math.sin(a)
    cx, cy = w / 2, h / 2
    # a point right of the centre goes up: (dx, dy) -> (c dx + s dy, -s dx + c dy)
    return [[c, s, cx - c * cx - s * cy], [-s, c, cy + s * cx - c * cy]]


def brightness(image, factor):
    return image.astype(np.float64) * factor


def contrast(image, factor):
    """PIL's ImageEnhance.Contrast: blend with the mean of the luma image."""
    center = (image.reshape(-1, 3).astype(np.float64).mean(axis=0) * LUMA).sum()
    return center + (image.astype(np.float64) - center) * factor


def color(image, factor):
    """PIL's ImageEnhance.Color: blend with the luma (grayscale) image."""
    luma = (image.astype(np.float64) * LUMA).sum(axis=-1, keepdims=True)
    return luma + (image.astype(np.float64) - luma) * factor


def sharpness(image, factor):
    """PIL's ImageEnhance.Sharpness: blend with the SMOOTH-filtered image, here with the
    border reflected (gfedcb|abcdefg) rather than kept."""
    smooth = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], np.float64) / 13
    x = image.astype(np.float64)
    blurred = np.stack(
        [ndimage.correlate(x[..., c], smooth, mode="mirror") for c in range(x.shape[-1])], -1
    )
    return blurred + (x - blurred) * factor


def posterize(image, bits):
    return image & np.uint8((0xFF << (8 - bits)) & 0xFF)


def solarize(image, threshold):
    return np.where(image < threshold, image, 255 - image).astype(np.uint8)


def solarize_add(image, shift):
    return np.where(image < 128, image.astype(int) + shift, image).astype(np.uint8)


def equalize(image):
    return np.stack([cv2.equalizeHist(image[..., c]) for c in range(image.shape[-1])], -1)


def auto_contrast(image):
    x = image.astype(np.float64)
    lo, hi = x.min(axis=(0, 1)), x.max(axis=(0, 1))
    span = hi - lo
    scale = np.where(span > 0, 255 / np.where(span > 0, span, 1), 1.0)
    return (x - np.where(span > 0, lo, 0)) * scale


def _round_half_up(x):
    return np.floor(np.clip(x, 0, 255) + 0.5).astype(np.uint8)


def _rint(x):
    """Clip to [0, 255] and round halves up, as fn.cast / fn.cast_like (DALI's rounding)."""
    return np.floor(np.clip(x, 0, 255) + 0.5).astype(np.uint8)


def _correlate(image, kernel):
    x = image.astype(np.float64)
    out = [ndimage.correlate(x[..., c], kernel, mode="mirror") for c in range(x.shape[-1])]
    return np.stack(out, -1)


# augmentation function name -> reference(image, parameter, fill) as chute rounds it
APPLY = {
    "shear_x": lambda im, p, fill: forward_warp_nn(im, shear_matrix(*p), fill),
    "shear_y": lambda im, p, fill: forward_warp_nn(im, shear_matrix(*p), fill),
    "translate_x_no_shape": lambda im, p, fill: forward_warp_nn(im, translation_matrix(*p), fill),
    "translate_y_no_shape": lambda im, p, fill: forward_warp_nn(im, translation_matrix(*p), fill),
    "rotate": lambda im, p, fill: forward_warp_nn(im, rotation_matrix(p, *im.shape[:2]), fill),
    "brightness": lambda im, p, fill: _round_half_up(brightness(im, p)),
    "contrast": lambda im, p, fill: _rint(contrast(im, p)),
    "color": lambda im, p, fill: _round_half_up(color(im, p)),
    "sharpness": lambda im, p, fill: _round_half_up(_correlate(im, p)),
    "posterize": lambda im, p, fill: im & np.uint8(p),
    "solarize": lambda im, p, fill: solarize(im, p),
    "solarize_add": lambda im, p, fill: solarize_add(im, int(p)),
    "invert": lambda im, p, fill: 255 - im,
    "equalize": lambda im, p, fill: equalize(im),
    "auto_contrast": lambda im, p, fill: _rint(auto_contrast(im)),
    "identity": lambda im, p, fill: im,
}


def param_of(aug, magnitude_bin, sign, num_magnitude_bins):
    """The parameter of ``aug`` at a bin and sign (the mapping test_magnitudes checks)."""
    if aug.mag_range is None:
        return None
    magnitude = aug._get_magnitudes(num_magnitude_bins)[magnitude_bin]
    if aug.randomly_negate and sign:
        magnitude = -magnitude
    return np.asarray(aug.mag_to_param(magnitude))


def apply_reference(image, aug, magnitude_bin, sign, num_magnitude_bins, fill=128):
    """``aug`` applied to one image by its NumPy reference."""
    param = param_of(aug, magnitude_bin, sign, num_magnitude_bins)
    return APPLY[aug.op.__name__](image, param, fill)
