"""Fused crop + mirror + normalize + layout + cast (``crop_mirror_normalize``) for HWC images.

``out = (in - mean) / std * scale + shift`` per channel, on the crop window, flipped
horizontally when ``mirror``, written as ``"CHW"`` or ``"HWC"`` in ``dtype`` (integer outputs
round half away from zero, or truncate, and saturate).

Crop window (DALI's rule): ``crop_h`` / ``crop_w`` (0 = whole extent) at anchor
``round(crop_pos_y * (H - crop_h))``, ``round(crop_pos_x * (W - crop_w))``. A window that
leaves the image is an error with ``out_of_bounds_policy="error"``; with ``"pad"`` the pixels
outside the image take ``fill_values`` (output units, one value or one per output channel);
with ``"trim_to_shape"`` the window is cut to the image. ``pad_output`` adds channels up to the
next power of two (3 -> 4), filled with ``fill_values`` (0 by default).

Speed: for uint8 input every output value is one of 256 per channel, so the whole arithmetic
and the dtype conversion are a table computed once in float64 (exactly rounded) and one
``cv2.LUT`` pass per output plane, reading the crop's uint8 planes (``cv2.flip`` and
``cv2.split``: GIL-free, cheaper than NumPy's transposing copy). ``out=`` lets the caller
hand a slot of a batch buffer so the result is written in place; ``gain_bias`` lets an
operator with constant arguments skip their per-sample conversion.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from chute.ops.image.convert_kernels import convert_saturate
from chute.runtime import native

_native_lut = native.lut_u8  # None where chute.runtime._native is not built

__all__ = ["CropWindow", "crop_mirror_normalize", "crop_window", "normalization", "output_shape"]

DTypeLike = Any
FloatOrSeq = float | Sequence[float] | np.ndarray

_TABLE_CACHE: dict[tuple, np.ndarray] = {}
_TABLE_CACHE_LOCK = threading.Lock()
_TABLE_CACHE_SIZE = 64


class CropWindow:
    """Where a crop of ``shape`` (h, w) anchored at ``anchor`` (y, x) meets the image."""

    __slots__ = ("anchor", "dst", "shape", "src")

    def __init__(self, anchor: tuple[int, int], shape: tuple[int, int], image_hw: tuple[int, int]):
        self.anchor = anchor
        self.shape = shape
        y0, x0 = max(anchor[0], 0), max(anchor[1], 0)
        y1 = min(anchor[0] + shape[0], image_hw[0])
        x1 = min(anchor[1] + shape[1], image_hw[1])
        y1, x1 = max(y1, y0), max(x1, x0)
        # Image rows/cols that are read, and where they land in the crop.
        self.src = (y0, y1, x0, x1)
        self.dst = (y0 - anchor[0], y1 - anchor[0], x0 - anchor[1], x1 - anchor[1])

    @property
    def inside(self) -> bool:
        """Whether the whole window lies in the image."""
        dy0, dy1, dx0, dx1 = self.dst
        return dy0 == 0 and dx0 == 0 and dy1 == self.shape[0] and dx1 == self.shape[1]


def _round(value: float) -> int:
    """Round half away from zero, as DALI places crops (-6.5 -> -7, as fn.crop)."""
    return int(math.copysign(math.floor(abs(value) + 0.5), value))


def crop_window(
    image_hw: tuple[int, int],
    crop_h: float = 0,
    crop_w: float = 0,
    crop_pos_x: float = 0.5,
    crop_pos_y: float = 0.5,
) -> CropWindow:
    """Return the crop window of DALI's ``crop`` arguments on an image of ``image_hw``."""
    height, width = image_hw
    ch = _round(crop_h) if crop_h else height
    cw = _round(crop_w) if crop_w else width
    if ch <= 0 or cw <= 0:
        raise ValueError(f"crop size must be positive, got {ch}x{cw}")
    # DALI's position is a float32 (0.7 is 0.69999999): 0.7 * 35 gives 24.4999996, anchor 24
    anchor = (
        _round(float(np.float32(crop_pos_y)) * (height - ch)),
        _round(float(np.float32(crop_pos_x)) * (width - cw)),
    )
    return CropWindow(anchor, (ch, cw), image_hw)


def _out_channels(channels: int, pad_output: bool) -> int:
    return 1 << (channels - 1).bit_length() if pad_output else channels


def output_shape(
    crop_hw: tuple[int, int], channels: int, output_layout: str = "CHW", pad_output: bool = False
) -> tuple[int, int, int]:
    """Return the output shape for a crop of ``crop_hw`` with ``channels`` input channels."""
    c_out = _out_channels(channels, pad_output)
    if output_layout == "CHW":
        return (c_out, *crop_hw)
    if output_layout == "HWC":
        return (*crop_hw, c_out)
    raise ValueError(f"output_layout must be 'CHW' or 'HWC', got {output_layout!r}")


def _per_channel(value: FloatOrSeq, channels: int, name: str) -> np.ndarray:
    flat = np.asarray(value, dtype=np.float64).ravel()
    if flat.size == 1:
        return np.full(channels, flat[0])
    if flat.size != channels:
        raise ValueError(f"{name} has {flat.size} values, the image has {channels} channels")
    return flat


def _fill_vector(fill_values: FloatOrSeq, channels: int, c_out: int, dtype: np.dtype) -> np.ndarray:
    flat = np.asarray(fill_values, dtype=np.float64).ravel()
    if flat.size == 1:
        full = np.full(c_out, flat[0])
    elif flat.size == c_out:
        full = flat
    elif flat.size == channels:
        full = np.concatenate([flat, np.zeros(c_out - channels)])
    else:
        raise ValueError(f"fill_values has {flat.size} values, expected 1, {channels} or {c_out}")
    return convert_saturate(full, dtype)


def _uint8_tables(gain: np.ndarray, bias: np.ndarray, dtype: np.dtype, rounding: str) -> np.ndarray:
    """(channels, 256) tables of ``x * gain + bias`` in ``dtype`` (cached); row c[None] is
    channel c's ``cv2.LUT`` table."""
    key = (gain.tobytes(), bias.tobytes(), dtype.str, rounding)
    tables = _TABLE_CACHE.get(key)
    if tables is not None:
        return tables
    values = np.arange(256, dtype=np.float64)[:, None] * gain + bias
    converted = convert_saturate(values, dtype, rounding=rounding)
    if dtype == np.float16:
        converted = converted.view(np.int16)  # OpenCV 4.x LUTs have no float16; same bits
    tables = np.ascontiguousarray(converted.T)
    with _TABLE_CACHE_LOCK:
        if len(_TABLE_CACHE) >= _TABLE_CACHE_SIZE:
            _TABLE_CACHE.pop(next(iter(_TABLE_CACHE)))
        _TABLE_CACHE[key] = tables
    return tables


def _lut_into(src: np.ndarray, table: np.ndarray, dst: np.ndarray) -> None:
    """``dst[...] = table[src]``, in place when OpenCV can wrap ``dst``."""
    try:
        res = cv2.LUT(src, table, dst=dst)
    except cv2.error:
        # dst is a view OpenCV cannot wrap (e.g. 3 of 4 interleaved channels).
        res = cv2.LUT(src, table)
    if res is not dst:  # OpenCV hands back dst itself when it wrote in place
        dst[...] = res.reshape(dst.shape)


def _crop_uint8(
    crop: np.ndarray,
    dst: np.ndarray,
    gain: np.ndarray,
    bias: np.ndarray,
    chw: bool,
    rounding: str,
    mirror: bool = False,
) -> None:
    """Normalize a uint8 HWC crop view, flipped when ``mirror``, into ``dst`` (CHW or HWC)."""
    channels = crop.shape[2]
    tables = _uint8_tables(gain, bias, dst.dtype, rounding)
    dst_bits = dst.view(np.int16) if dst.dtype == np.float16 else dst
    if _native_lut is not None and crop.strides[1:] == (channels, 1):
        # one pass, one GIL release (OpenCV's way below releases it five times)
        _native_lut(crop, tables, dst_bits if chw else dst_bits.transpose(2, 0, 1), mirror)
        return
    if chw:
        planes = _uint8_planes(crop, mirror)
        for c in range(channels):
            _lut_into(planes[c], tables[c : c + 1], dst_bits[c])
        return
    if mirror:
        # OpenCV cannot read negative strides; flip (which drops a lone channel axis) instead.
        crop = cv2.flip(crop, 1).reshape(crop.shape)
    if channels == 1:
        _lut_into(crop[:, :, 0], tables[:1], dst_bits[:, :, 0])
    elif channels <= 4:
        _lut_into(crop, np.ascontiguousarray(tables.T).reshape(1, 256, channels), dst_bits)
    else:
        for c in range(channels):
            _lut_into(np.ascontiguousarray(crop[:, :, c]), tables[c : c + 1], dst_bits[:, :, c])


def _uint8_planes(crop: np.ndarray, mirror: bool) -> Sequence[np.ndarray]:
    """The channel planes of a uint8 HWC crop, flipped horizontally when ``mirror``.

    OpenCV's flip and split release the GIL and beat NumPy's strided transposing copy;
    a view OpenCV cannot read (pixels not contiguous within a row) takes NumPy's way.
    """
    channels = crop.shape[2]
    readable = crop.strides[0] > 0 and crop.strides[1:] == (channels, 1)
    if channels == 1 and readable:
        plane = crop[:, :, 0]
        return [cv2.flip(plane, 1) if mirror else plane]
    if not readable or channels > 4:
        src = crop[:, ::-1] if mirror else crop
        planes = np.empty((channels, crop.shape[0], crop.shape[1]), dtype=np.uint8)
        np.copyto(planes, src.transpose(2, 0, 1))
        return planes
    src = cv2.flip(crop, 1) if mirror else crop
    return cv2.split(src)


def _crop_generic(
    crop: np.ndarray, dst: np.ndarray, gain: np.ndarray, bias: np.ndarray, chw: bool, rounding: str
) -> None:
    """Normalize a crop view of any numeric dtype into ``dst`` with NumPy arithmetic."""
    work_dtype = np.float64 if crop.dtype == np.float64 else np.float32
    src = crop.transpose(2, 0, 1) if chw else crop
    shape = (-1, 1, 1) if chw else (1, 1, -1)
    g = gain.astype(work_dtype).reshape(shape)
    b = bias.astype(work_dtype).reshape(shape)
    if dst.dtype == work_dtype:
        np.multiply(src, g, out=dst, casting="unsafe")
        dst += b
        return
    tmp = np.multiply(src, g, dtype=work_dtype)
    tmp += b
    convert_saturate(tmp, dst.dtype, rounding=rounding, out=dst, overwrite=True)


def normalization(
    mean: FloatOrSeq, std: FloatOrSeq, scale: float, shift: float, channels: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per-channel ``(gain, bias)`` with ``out = in * gain + bias``; checks ``std``."""
    std_values = _per_channel(std, channels, "std")
    if not np.all(np.isfinite(std_values)) or np.any(std_values == 0):
        # A zero std would silently fill the output with inf/nan.
        raise ValueError(f"std must be finite and nonzero per channel, got {std_values.tolist()}")
    gain = float(scale) / std_values
    bias = float(shift) - _per_channel(mean, channels, "mean") * gain
    return gain, bias


def crop_mirror_normalize(
    image: np.ndarray,
    *,
    crop: Sequence[float] | None = None,
    crop_h: float = 0,
    crop_w: float = 0,
    crop_pos_x: float = 0.5,
    crop_pos_y: float = 0.5,
    mirror: bool = False,
    mean: FloatOrSeq = 0.0,
    std: FloatOrSeq = 1.0,
    scale: float = 1.0,
    shift: float = 0.0,
    dtype: DTypeLike = np.float32,
    output_layout: str = "CHW",
    pad_output: bool = False,
    fill_values: FloatOrSeq = 0.0,
    out_of_bounds_policy: str = "error",
    rounding: str = "round",
    out: np.ndarray | None = None,
    gain_bias: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray:
    """Crop, optionally flip, normalize, lay out and cast one HWC image (see module doc).

    ``gain_bias``: :func:`normalization` of (mean, std, scale, shift) for this channel
    count, computed once by a caller whose arguments are constant; then those four are
    not read.
    """
    image = np.asarray(image)
    if image.ndim == 2:
        image = image[:, :, None]
    if image.ndim != 3:
        raise ValueError(f"crop_mirror_normalize expects an HWC image, got shape {image.shape}")
    if out_of_bounds_policy not in ("error", "pad", "trim_to_shape"):
        raise ValueError(
            f"out_of_bounds_policy must be 'error', 'pad' or 'trim_to_shape', "
            f"got {out_of_bounds_policy!r}"
        )
    if crop is not None:
        if crop_h or crop_w:
            raise ValueError("give either crop or crop_h/crop_w, not both")
        crop_h, crop_w = (float(v) for v in crop)
    out_dtype = np.dtype(dtype)
    height, width, channels = image.shape
    window = crop_window((height, width), crop_h, crop_w, crop_pos_x, crop_pos_y)
    if not window.inside:
        if out_of_bounds_policy == "error":
            raise ValueError(
                f"crop window {window.shape} at {window.anchor} leaves the {height}x{width} image; "
                "set out_of_bounds_policy='pad' or 'trim_to_shape'"
            )
        if out_of_bounds_policy == "trim_to_shape":
            y0, y1, x0, x1 = window.src
            window = CropWindow((y0, x0), (y1 - y0, x1 - x0), (height, width))
    chw = output_layout == "CHW"
    shape = output_shape(window.shape, channels, output_layout, pad_output)
    if out is None:
        out = np.empty(shape, dtype=out_dtype)
    elif out.shape != shape or out.dtype != out_dtype:
        raise ValueError(f"out is {out.shape} {out.dtype}, expected {shape} {out_dtype}")

    if gain_bias is None:
        gain_bias = normalization(mean, std, scale, shift, channels)
    gain, bias = gain_bias
    cw = window.shape[1]
    sy0, sy1, sx0, sx1 = window.src
    dy0, dy1, dx0, dx1 = window.dst
    if mirror:
        dx0, dx1 = cw - dx1, cw - dx0  # the in-image block moves with the flip
    src = image[sy0:sy1, sx0:sx1]
    dst = out[:channels, dy0:dy1, dx0:dx1] if chw else out[dy0:dy1, dx0:dx1, :channels]

    c_out = shape[0] if chw else shape[2]
    needs_fill = not window.inside or c_out > channels
    if needs_fill:
        fill = _fill_vector(fill_values, channels, c_out, out_dtype)
        _fill_border(out, fill, (dy0, dy1, dx0, dx1), channels, chw)
    if src.size:
        if image.dtype == np.uint8:
            _crop_uint8(src, dst, gain, bias, chw, rounding, mirror)
        else:
            _crop_generic(src[:, ::-1] if mirror else src, dst, gain, bias, chw, rounding)
    return out


def _fill_border(
    out: np.ndarray, fill: np.ndarray, block: tuple[int, int, int, int], channels: int, chw: bool
) -> None:
    """Write ``fill`` around ``block`` (dy0, dy1, dx0, dx1) and into the padded channels."""
    dy0, dy1, dx0, dx1 = block
    view = out if chw else np.moveaxis(out, 2, 0)  # channel-first view either way
    for c in range(view.shape[0]):
        plane = view[c]
        if c >= channels:
            plane[...] = fill[c]
            continue
        plane[:dy0] = fill[c]
        plane[dy1:] = fill[c]
        plane[dy0:dy1, :dx0] = fill[c]
        plane[dy0:dy1, dx1:] = fill[c]
