"""CPU kernels of fn.filter, fn.laplacian, fn.experimental.median_blur / dilate / erode.

Images are HW or HWC (channels last, any count); the operators split FHWC sequences into
frames. Everything is computed in float32 (as DALI does) and converted to the output type
by rounding half away from zero and saturating.

Border names (DALI's first, chute's aliases second; ``v`` is the fill value)::

    "constant"                    vvvv|abcdef|vvvv
    "clamp" / "replicate"         aaaa|abcdef|ffff
    "reflect_1001" / "reflect"    dcba|abcdef|fedc
    "reflect_101"                 edcb|abcdef|edcb
    "wrap"                        cdef|abcdef|abcd

``filter`` computes a correlation (the filter is not flipped): with anchor ``(ay, ax)``,
``out[y, x] = sum filter[i, j] * in[y + i - ay, x + j - ax]``; mode "valid" keeps only the
outputs whose window lies inside the image (``H - kh + 1`` by ``W - kw + 1``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from chute.ops.image.convert_kernels import convert_saturate

__all__ = [
    "FILTER_BORDERS",
    "MORPH_BORDERS",
    "as_pair",
    "derivative_window",
    "filter2d",
    "laplacian",
    "laplacian_kernel",
    "laplacian_windows",
    "median_blur",
    "morphology",
    "pad_image",
    "smoothing_window",
]

#: chute's and DALI's border names -> np.pad modes.
FILTER_BORDERS = {
    "reflect_101": "reflect",
    "reflect_1001": "symmetric",
    "reflect": "symmetric",
    "clamp": "edge",
    "replicate": "edge",
    "wrap": "wrap",
    "constant": "constant",
}
#: np.pad modes -> OpenCV's borders (pad_image's fast path), and the dtypes it takes there.
_CV_BORDERS = {
    "reflect": cv2.BORDER_REFLECT_101,
    "symmetric": cv2.BORDER_REFLECT,
    "edge": cv2.BORDER_REPLICATE,
    "wrap": cv2.BORDER_WRAP,
    "constant": cv2.BORDER_CONSTANT,
}
_CV_PAD_DTYPES = (np.dtype(np.uint8), np.dtype(np.float32), np.dtype(np.float64))
#: Border modes of the morphology operators (CV-CUDA's names).
MORPH_BORDERS = ("constant", "replicate", "reflect", "reflect_101", "wrap")

_MAX_WINDOW = 23


def as_pair(value: Any, what: str) -> tuple[int, int]:
    """(first, second) of an int argument given as one value or two."""
    flat = np.asarray(value).ravel()
    if flat.size == 1:
        return int(flat[0]), int(flat[0])
    if flat.size == 2:
        return int(flat[0]), int(flat[1])
    raise ValueError(f"argument '{what}' takes one value or two, got {flat.size}")


def _cv_pads(image: np.ndarray, top: int, bottom: int, left: int, right: int, mode: str) -> bool:
    """Whether cv2.copyMakeBorder gives np.pad's result: pads shorter than the image, a
    dtype OpenCV takes, and a constant fill only on float images of up to 4 channels
    (np.pad truncates the fill to an integer image's type, OpenCV rounds it)."""
    h, w = image.shape[:2]
    if image.dtype not in _CV_PAD_DTYPES or image.ndim not in (2, 3):
        return False
    if max(top, bottom) >= h or max(left, right) >= w:
        return False
    if mode == "constant":
        return image.dtype.kind == "f" and (image.ndim == 2 or image.shape[2] <= 4)
    return True


def pad_image(
    image: np.ndarray, pads: tuple[tuple[int, int], tuple[int, int]], border: str, fill: float
) -> np.ndarray:
    """``image`` (HW or HWC) extended by ``pads`` ((top, bottom), (left, right)) per ``border``."""
    mode = FILTER_BORDERS[border]
    full = pads + ((0, 0),) * (image.ndim - 2)
    (top, bottom), (left, right) = pads
    h, w = image.shape[:2]
    if _cv_pads(image, top, bottom, left, right, mode):
        # OpenCV pads as np.pad does there (a copy), several times faster
        value = (fill,) * 4 if mode == "constant" else None
        src = np.ascontiguousarray(image)
        out = cv2.copyMakeBorder(src, top, bottom, left, right, _CV_BORDERS[mode], value=value)
        return out.reshape((h + top + bottom, w + left + right, *image.shape[2:]))
    if mode == "constant":
        return np.pad(image, full, mode="constant", constant_values=fill)
    return np.pad(image, full, mode=mode)


def _to_output(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if values.dtype == dtype:
        return np.ascontiguousarray(values)
    return convert_saturate(values, dtype, overwrite=True)


def filter2d(
    image: np.ndarray,
    kernel: np.ndarray,
    anchor: Sequence[int] = (-1, -1),
    border: str = "reflect_101",
    fill_value: float = 0.0,
    mode: str = "same",
    dtype: Any = None,
) -> np.ndarray:
    """Correlate an HW / HWC image with a 2-D ``kernel`` (see the module's docstring)."""
    image = np.asarray(image)
    kernel = np.asarray(kernel, np.float32)
    if kernel.ndim != 2 or kernel.size == 0:
        raise ValueError(f"the filter must be a non-empty 2-D array, got shape {kernel.shape}")
    if image.ndim not in (2, 3):
        raise ValueError(f"expected an HW or HWC image, got shape {image.shape}")
    if border not in FILTER_BORDERS:
        raise ValueError(f"border must be one of {sorted(FILTER_BORDERS)}, got {border!r}")
    out_dtype = image.dtype if dtype is None else np.dtype(dtype)
    kh, kw = kernel.shape
    h, w = image.shape[:2]
    if mode == "same" and _exact_in_uint8(image, kernel, border, fill_value, out_dtype):
        ay, ax = _anchor(anchor, kh, kw)
        out = cv2.filter2D(image, -1, kernel, anchor=(ax, ay), borderType=_CV_FILTER[border])
        return out.reshape(image.shape)
    work = image.astype(np.float32, copy=False)
    if mode == "valid":
        if kh > h or kw > w:
            raise ValueError(
                f"mode='valid' needs a filter no larger than the image: filter {kh}x{kw}, "
                f"image {h}x{w}"
            )
        padded, out_h, out_w = work, h - kh + 1, w - kw + 1
    elif mode == "same":
        ay, ax = _anchor(anchor, kh, kw)
        pads = ((ay, kh - 1 - ay), (ax, kw - 1 - ax))
        if _pads_exactly(image.dtype, border, fill_value):
            # pad the narrow integers, then widen: the same values, a quarter of the copying
            padded = pad_image(image, pads, border, fill_value).astype(np.float32)
        else:
            padded = pad_image(work, pads, border, fill_value)
        out_h, out_w = h, w
    else:
        raise ValueError(f"mode must be 'same' or 'valid', got {mode!r}")
    # with anchor (0, 0) every window of the first out_h x out_w outputs is inside `padded`
    out = _correlate(np.ascontiguousarray(padded), kernel)[:out_h, :out_w]
    return _to_output(out.reshape((out_h, out_w, *image.shape[2:])), out_dtype)


#: the borders OpenCV's filter2D takes itself (no wrap; constant only with a 0 fill)
_CV_FILTER = {
    "reflect_101": cv2.BORDER_REFLECT_101,
    "reflect_1001": cv2.BORDER_REFLECT,
    "reflect": cv2.BORDER_REFLECT,
    "clamp": cv2.BORDER_REPLICATE,
    "replicate": cv2.BORDER_REPLICATE,
    "constant": cv2.BORDER_CONSTANT,
}


def _exact_in_uint8(
    image: np.ndarray, kernel: np.ndarray, border: str, fill: float, out_dtype: np.dtype
) -> bool:
    """Whether OpenCV's uint8 -> uint8 filter gives exactly this module's result: uint8 in
    and out, a border it handles, an integer-valued kernel whose sums stay exact in float
    (every output is then an integer: no rounding to differ on) and small enough that
    OpenCV filters directly rather than through a DFT. Sharpening and edge kernels are
    like that; on a 480x640 RGB image ~0.5 ms instead of ~6."""
    if image.dtype != np.uint8 or out_dtype != np.uint8 or border not in _CV_FILTER:
        return False
    if (border == "constant" and fill != 0) or (image.ndim == 3 and image.shape[2] > 4):
        return False
    if kernel.size >= 50 or not np.array_equal(kernel, np.round(kernel)):
        return False
    return float(np.abs(kernel).sum()) * 255 < 2**24


def _pads_exactly(dtype: np.dtype, border: str, fill: float) -> bool:
    """Whether padding an integer image of ``dtype`` before widening it to float32 gives
    the values that padding the float32 image does (a constant fill the type holds)."""
    if dtype.kind not in "iu" or dtype.itemsize > 2:
        return False
    if FILTER_BORDERS[border] != "constant":
        return True
    info = np.iinfo(dtype)
    return float(fill).is_integer() and info.min <= fill <= info.max


def _correlate(padded: np.ndarray, kernel: np.ndarray) -> np.ndarray:
    if padded.ndim == 3 and padded.shape[2] > 4:
        planes = [
            _correlate(np.ascontiguousarray(padded[..., c]), kernel) for c in range(padded.shape[2])
        ]
        return np.stack(planes, axis=-1)
    out = cv2.filter2D(padded, cv2.CV_32F, kernel, anchor=(0, 0), borderType=cv2.BORDER_CONSTANT)
    return out.reshape(padded.shape)


def _anchor(anchor: Sequence[int], kh: int, kw: int) -> tuple[int, int]:
    ay, ax = as_pair(anchor, "anchor")
    ay = kh // 2 if ay == -1 else ay
    ax = kw // 2 if ax == -1 else ax
    if not (0 <= ay < kh and 0 <= ax < kw):
        raise ValueError(
            f"argument 'anchor' must be -1 or inside the filter ({kh}x{kw}), got {tuple(anchor)}"
        )
    return ay, ax


# ---- laplacian ---------------------------------------------------------------------------
def smoothing_window(size: int) -> np.ndarray:
    """Binomial smoothing window of odd ``size`` (1 -> [1], 3 -> [1, 2, 1])."""
    window = np.ones(1, np.float64)
    for _ in range(size - 1):
        window = np.convolve(window, [1.0, 1.0])
    return window


def derivative_window(size: int) -> np.ndarray:
    """Second-derivative window of odd ``size`` >= 3: [1, -2, 1] smoothed binomially."""
    return np.convolve(smoothing_window(size - 2), [1.0, -2.0, 1.0])


def laplacian_windows(
    window_size: Any, smoothing_size: Any, scale: Any, normalized: bool
) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """(window along H, window along W, factor) of each partial derivative (d2/dy2, d2/dx2)."""
    wins = as_pair(window_size, "window_size")
    smooth = wins if smoothing_size is None else as_pair(smoothing_size, "smoothing_size")
    for w in wins:
        if w % 2 == 0 or not 3 <= w <= _MAX_WINDOW:
            raise ValueError(f"argument 'window_size' must be odd and in [3, 23], got {w}")
    for s in smooth:
        if s % 2 == 0 or not 1 <= s <= _MAX_WINDOW:
            raise ValueError(f"argument 'smoothing_size' must be odd and in [1, 23], got {s}")
    scales = np.asarray(scale, np.float64).ravel()
    if scales.size not in (1, 2):
        raise ValueError(f"argument 'scale' takes one value or one per axis, got {scales.size}")
    scales = np.broadcast_to(scales, (2,))
    parts = []
    for axis in range(2):
        windows = [
            derivative_window(wins[a]) if a == axis else smoothing_window(smooth[a])
            for a in range(2)
        ]
        factor = float(scales[axis])
        if normalized:
            # the binomial parts sum to 2**(size - 1) (derivative: 2**(size - 3) around [1,-2,1])
            exponent = sum(len(w) for w in windows) - 2 - 2
            factor = 2.0**-exponent
        parts.append((windows[0], windows[1], factor))
    return parts


def laplacian_kernel(parts: list[tuple[np.ndarray, np.ndarray, float]]) -> np.ndarray:
    """The one 2-D kernel of a sum of separable partial derivatives (the GPU backend's)."""
    kh = max(len(p[0]) for p in parts)
    kw = max(len(p[1]) for p in parts)
    kernel = np.zeros((kh, kw), np.float64)
    for wy, wx, factor in parts:
        oy, ox = (kh - len(wy)) // 2, (kw - len(wx)) // 2
        kernel[oy : oy + len(wy), ox : ox + len(wx)] += factor * np.outer(wy, wx)
    return kernel


def laplacian(
    image: np.ndarray,
    window_size: Any = 3,
    smoothing_size: Any = None,
    scale: Any = 1.0,
    normalized_kernel: bool = False,
    dtype: Any = None,
) -> np.ndarray:
    """Laplacian of an HW / HWC image: sum of separable second derivatives, reflect_101 border."""
    image = np.asarray(image)
    if image.ndim not in (2, 3):
        raise ValueError(f"expected an HW or HWC image, got shape {image.shape}")
    out_dtype = image.dtype if dtype is None else np.dtype(dtype)
    parts = laplacian_windows(window_size, smoothing_size, scale, normalized_kernel)
    work = np.ascontiguousarray(image, np.float32)
    planes = [work] if work.ndim == 2 or work.shape[2] <= 4 else list(np.moveaxis(work, 2, 0))
    results = []
    for plane in planes:
        plane = np.ascontiguousarray(plane)
        total = np.zeros(plane.shape, np.float32)
        for wy, wx, factor in parts:
            d = cv2.sepFilter2D(
                plane,
                cv2.CV_32F,
                wx.astype(np.float32),
                wy.astype(np.float32),
                borderType=cv2.BORDER_REFLECT_101,
            )
            total += np.float32(factor) * d.reshape(plane.shape)
        results.append(total)
    out = results[0] if len(results) == 1 else np.stack(results, axis=-1)
    return _to_output(out, out_dtype)


# ---- median and morphology ---------------------------------------------------------------
def median_blur(image: np.ndarray, window_size: Any = (3, 3)) -> np.ndarray:
    """Median of each (W, H) window around each pixel, per channel; replicated border."""
    image = np.asarray(image)
    if image.ndim not in (2, 3):
        raise ValueError(f"expected an HW or HWC image, got shape {image.shape}")
    ww, wh = as_pair(window_size, "window_size")
    if ww < 1 or wh < 1 or ww % 2 == 0 or wh % 2 == 0:
        raise ValueError(f"argument 'window_size' must be odd and positive, got {(ww, wh)}")
    if ww == wh and (
        (image.dtype == np.uint8 and (image.ndim == 2 or image.shape[2] in (1, 3, 4)))
        or (ww <= 5 and image.dtype in (np.uint16, np.float32) and image.ndim == 2)
    ):
        if ww == 1:
            return image.copy()
        return cv2.medianBlur(np.ascontiguousarray(image), ww).reshape(image.shape)
    from scipy import ndimage

    size = (wh, ww) + ((1,) if image.ndim == 3 else ())
    return ndimage.median_filter(image, size=size, mode="nearest")


def morphology(
    image: np.ndarray,
    op: str,
    mask_size: Any = (3, 3),
    anchor: Any = (-1, -1),
    iterations: int = 1,
    border_mode: str = "constant",
) -> np.ndarray:
    """Dilate (max) or erode (min) over a (W, H) rectangle at ``anchor`` (x, y), ``iterations`` times.

    With border "constant", pixels outside the image take no part (OpenCV's default value).
    """
    image = np.asarray(image)
    if image.ndim not in (2, 3):
        raise ValueError(f"expected an HW or HWC image, got shape {image.shape}")
    mw, mh = as_pair(mask_size, "mask_size")
    if mw < 1 or mh < 1:
        raise ValueError(f"argument 'mask_size' must be positive, got {(mw, mh)}")
    axx, ayy = as_pair(anchor, "anchor")
    axx = mw // 2 if axx == -1 else axx
    ayy = mh // 2 if ayy == -1 else ayy
    if not (0 <= axx < mw and 0 <= ayy < mh):
        raise ValueError(f"argument 'anchor' must be -1 or inside the mask, got {(axx, ayy)}")
    if iterations < 1:
        raise ValueError(f"argument 'iterations' must be at least 1, got {iterations}")
    if border_mode not in MORPH_BORDERS:
        raise ValueError(f"border_mode must be one of {MORPH_BORDERS}, got {border_mode!r}")
    # a rectangle applied k times is one rectangle k * (size - 1) + 1 wide (as OpenCV does)
    ew, eh = iterations * (mw - 1) + 1, iterations * (mh - 1) + 1
    ex, ey = iterations * axx, iterations * ayy
    reduce = np.maximum if op == "dilate" else np.minimum
    if border_mode == "constant":
        if image.dtype.kind == "f":
            neutral = -np.inf if op == "dilate" else np.inf
        else:
            info = np.iinfo(image.dtype)
            neutral = info.min if op == "dilate" else info.max
        padded = np.pad(
            image,
            ((ey, eh - 1 - ey), (ex, ew - 1 - ex)) + ((0, 0),) * (image.ndim - 2),
            mode="constant",
            constant_values=neutral,
        )
    else:
        alias = {"replicate": "clamp", "reflect": "reflect_1001"}.get(border_mode, border_mode)
        padded = pad_image(image, ((ey, eh - 1 - ey), (ex, ew - 1 - ex)), alias, 0.0)
    h, w = image.shape[:2]
    if padded.ndim == 2 or padded.shape[2] <= 4:
        cv_op = cv2.dilate if op == "dilate" else cv2.erode
        kernel = np.ones((eh, ew), np.uint8)
        if padded.dtype in (np.uint8, np.uint16, np.int16, np.float32, np.float64):
            out = cv_op(
                np.ascontiguousarray(padded),
                kernel,
                anchor=(0, 0),
                borderType=cv2.BORDER_REPLICATE,
            )
            return np.ascontiguousarray(out.reshape(padded.shape)[:h, :w])
    # separable running extremum (any dtype or channel count)
    rows = padded[0:h]
    for i in range(1, eh):
        rows = reduce(rows, padded[i : i + h])
    out = rows[:, 0:w]
    for j in range(1, ew):
        out = reduce(out, rows[:, j : j + w])
    return np.ascontiguousarray(out)
