"""CPU kernels of the auto_aug point operations: each one 256-entry table per channel.

Every point augmentation of AutoAugment / RandAugment on uint8 images maps each value
through a table that depends on the sample's parameter and, for some, on per-channel
statistics of the image (the channel means for contrast, the range for auto_contrast, the
histogram for equalize). The tables are built here with the very NumPy operations (types,
order and rounding) that the augmentations' operator graphs used, applied to the 256
possible values instead of to every pixel, so the outputs are equal to theirs; one
``cv2.LUT`` pass then applies them.

Tables come in a batch, ``(n, C, 256)`` uint8, from per-sample parameters ``(n,)`` and
statistics (see :func:`stats_from_histograms`); the GPU backend builds them with the same
functions from histograms it counts on the device.
"""

from __future__ import annotations

import functools

import cv2
import numpy as np

from chute.ops.image.distortion_kernels import equalize_lut
from chute.ops.tensor_ops import convert

__all__ = [
    "KINDS",
    "NEEDS_STATS",
    "apply_point",
    "point_luts",
    "sample_stats",
    "stats_from_histograms",
]

# kind -> what its parameter is
KINDS = {
    "posterize": "the uint8 mask of the bits kept",
    "solarize": "the threshold: values at or above it are inverted",
    "solarize_add": "the shift added to values below 128",
    "invert": "unused",
    "contrast": "the PIL enhance factor (1 keeps the image)",
    "auto_contrast": "unused",
    "equalize": "unused",
}
# kinds whose tables depend on the image: which statistics they read
NEEDS_STATS = {"contrast": "mean", "auto_contrast": "range", "equalize": "histogram"}

# the luma weights of PIL's ImageEnhance.Contrast (ITU-R 601-2)
LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)
_U8 = np.dtype(np.uint8)
_VALUES_U8 = np.arange(256, dtype=np.uint8)
_VALUES_F32 = np.arange(256, dtype=np.float32)


def sample_stats(kind: str, image: np.ndarray) -> dict[str, np.ndarray]:
    """The per-channel statistics ``kind`` needs of one HWC uint8 image, as a batch of one.

    Means are float64 sums over the pixel count, cast to float32 (exact sums, as
    ``fn.reductions.mean``); ranges are the channels' uint8 minimum and maximum.
    """
    need = NEEDS_STATS.get(kind)
    channels = image.shape[2]
    if need is None:
        return {}
    if need == "histogram":
        src = np.ascontiguousarray(image)
        if src.size // channels >= 1 << 24:  # calcHist counts in float32: exact below 2**24
            flat_px = src.reshape(-1, channels)
            hist = np.stack([np.bincount(flat_px[:, c], minlength=256) for c in range(channels)])
            return {"hist": hist.astype(np.int64)[None]}
        hist = np.stack(
            [cv2.calcHist([src], [c], None, [256], [0, 256]).reshape(-1) for c in range(channels)]
        )
        return {"hist": hist.astype(np.int64)[None]}
    # one row of pixels: cv2.sumElems of an N x 1 image is ~100x slower (per-row overhead)
    flat = image.reshape(1, -1, channels) if image.flags.c_contiguous else None
    if need == "mean":
        if flat is not None and channels <= 4:
            totals = np.array(cv2.sumElems(flat)[:channels], np.float64)
        else:
            totals = image.reshape(-1, channels).sum(axis=0, dtype=np.float64)
        count = image.size // channels
        return {"mean": (totals / count).astype(np.float32)[None]}
    planes = cv2.split(np.ascontiguousarray(image))
    ranges = [cv2.minMaxLoc(plane)[:2] for plane in planes]
    lo = np.array([r[0] for r in ranges], np.uint8)
    hi = np.array([r[1] for r in ranges], np.uint8)
    return {"lo": lo[None], "hi": hi[None]}


def stats_from_histograms(kind: str, hist: np.ndarray) -> dict[str, np.ndarray]:
    """:func:`sample_stats` of a batch from its per-channel histograms ``(n, C, 256)``.

    Equal to them: the sums of uint8 values are exact integers in float64 either way.
    """
    need = NEEDS_STATS.get(kind)
    hist = np.asarray(hist, np.int64)
    if need is None:
        return {}
    if need == "histogram":
        return {"hist": hist}
    if need == "mean":
        totals = (hist * np.arange(256, dtype=np.int64)).sum(axis=2).astype(np.float64)
        count = hist[:, :1].sum(axis=2).astype(np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):  # an empty image: no pixel reads it
            return {"mean": (totals / count).astype(np.float32)}
    occupied = hist > 0
    lo = np.argmax(occupied, axis=2).astype(np.uint8)
    hi = (255 - np.argmax(occupied[:, :, ::-1], axis=2)).astype(np.uint8)
    return {"lo": lo, "hi": hi}


def point_luts(
    kind: str, params: np.ndarray, stats: dict[str, np.ndarray], channels: int
) -> np.ndarray:
    """The ``(n, C, 256)`` uint8 tables of ``kind`` for per-sample ``params`` ``(n,)``."""
    params = np.asarray(params)
    n = len(params)
    if kind == "posterize":
        masks = params.astype(np.int64).astype(np.uint8)
        luts = _VALUES_U8[None, :] & masks[:, None]
    elif kind == "solarize":
        # uint8 < float32 compares in float32, as the graph's `data < threshold`
        below = _VALUES_U8[None, :] < params.astype(np.float32)[:, None]
        luts = np.where(below, _VALUES_U8, np.uint8(255) - _VALUES_U8)
    elif kind == "solarize_add":
        shifts = params.astype(np.int64).astype(np.uint8)
        below = _VALUES_U8 < 128
        luts = np.where(below, _VALUES_U8[None, :] + shifts[:, None], _VALUES_U8[None, :])
    elif kind == "invert":
        luts = np.broadcast_to(np.uint8(255) - _VALUES_U8, (n, 256))
    elif kind == "contrast":
        return _contrast_luts(params.astype(np.float32), stats["mean"])
    elif kind == "auto_contrast":
        return _auto_contrast_luts(stats["lo"], stats["hi"])
    elif kind == "equalize":
        hist = stats["hist"]
        return np.stack([[equalize_lut(h) for h in sample] for sample in hist]).reshape(n, -1, 256)
    else:
        raise ValueError(f"unknown point operation {kind!r}; known: {', '.join(KINDS)}")
    luts = np.asarray(luts, np.uint8)
    return np.ascontiguousarray(np.broadcast_to(luts[:, None, :], (n, channels, 256)))


def _contrast_luts(factors: np.ndarray, means: np.ndarray) -> np.ndarray:
    """``center + (v - center) * factor`` rounded (half away from zero) and saturated, with
    ``center = sum(mean_c * LUMA_c)`` in float32: the graph's operations, on 256 values."""
    means = np.asarray(means, np.float32)
    if means.shape[1] != 3:
        raise ValueError(f"contrast takes RGB images (3 channels), got {means.shape[1]}")
    centers = np.sum(means * LUMA, axis=1, dtype=np.float32)  # (n,)
    centers = centers[:, None]
    values = (_VALUES_F32[None, :] - centers) * factors[:, None]
    lut = convert(centers + values, _U8)  # (n, 256): one table for every channel
    return np.ascontiguousarray(np.broadcast_to(lut[:, None, :], (len(lut), 3, 256)))


def _auto_contrast_luts(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Each channel stretched from [lo, hi] to [0, 255] (a channel with one value kept):
    ``(v - lo) * float32(255 / span)``, rounded half away from zero and saturated."""
    lo = np.asarray(lo, np.uint8)
    span = np.asarray(hi, np.uint8) - lo
    stretch = span > 0
    divisor = (span + (~stretch) * np.uint8(255)).astype(np.uint8).astype(np.float32)
    scale = np.float32(255) / divisor  # (n, C)
    shifted = _VALUES_U8[None, None, :] - (lo * stretch).astype(np.uint8)[:, :, None]
    return convert(shifted.astype(np.uint8) * scale[:, :, None], _U8)


def apply_point(image: np.ndarray, kind: str, param: float) -> np.ndarray:
    """One HWC (or HW) uint8 image through the ``kind`` table of its parameter; a sequence
    (FHWC) frame by frame, each with its own statistics."""
    image = np.asarray(image)
    if image.dtype != np.uint8:
        raise TypeError(f"the {kind} augmentation takes uint8 images, got {image.dtype}")
    if image.ndim == 4:
        out = np.empty_like(image)
        for f, frame in enumerate(image):
            out[f] = apply_point(frame, kind, param)
        return out
    squeeze = image.ndim == 2
    hwc = image[:, :, None] if squeeze else image
    if hwc.ndim != 3:
        raise ValueError(
            f"the {kind} augmentation takes HWC, HW or FHWC images, got shape {image.shape}"
        )
    channels = hwc.shape[2]
    if hwc.size == 0:
        return image.copy()
    if kind == "equalize" and hwc.size // channels < 1 << 24:
        # OpenCV's own equalizeHist per channel: the rule of equalize_lut, in one C++ call each
        planes = [cv2.equalizeHist(plane) for plane in cv2.split(np.ascontiguousarray(hwc))]
        out = cv2.merge(planes).reshape(hwc.shape)
        return out[:, :, 0] if squeeze else out
    if kind in NEEDS_STATS:
        luts = point_luts(kind, np.array([param]), sample_stats(kind, hwc), channels)[0]
    else:
        luts = _fixed_luts(kind, float(param), channels)
    out = lut_channels(hwc, luts)
    return out[:, :, 0] if squeeze else out


@functools.lru_cache(maxsize=256)
def _fixed_luts(kind: str, param: float, channels: int) -> np.ndarray:
    """The tables of a kind that reads no statistics: one per parameter, kept (read-only)."""
    luts = point_luts(kind, np.array([param]), {}, channels)[0]
    luts.setflags(write=False)
    return luts


def lut_channels(image: np.ndarray, luts: np.ndarray) -> np.ndarray:
    """Look each value of channel c of an HWC uint8 image up in ``luts[c]`` (256 entries)."""
    channels = image.shape[2]
    src = np.ascontiguousarray(image)
    same = bool((luts == luts[:1]).all())
    if same or channels == 1:
        flat = src.reshape(src.shape[0], -1)
        return cv2.LUT(flat, luts[0]).reshape(image.shape)
    if channels <= 4 and channels != 2:
        # a multi-channel table: channel c of the image reads channel c of the table
        table = np.ascontiguousarray(luts.T.reshape(256, 1, channels))
        return cv2.LUT(src, table).reshape(image.shape)
    out = np.empty_like(src)
    for c in range(channels):
        out[:, :, c] = cv2.LUT(np.ascontiguousarray(src[:, :, c]), luts[c]).reshape(src.shape[:2])
    return out
