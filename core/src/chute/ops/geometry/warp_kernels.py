"""Affine warps: warp_affine and rotate, on OpenCV's warpAffine.

Coordinates follow DALI: continuous pixel coordinates with pixel ``(x, y)`` covering
``[x, x + 1) x [y, y + 1)`` (its centre at ``+0.5``), x to the right, y down. A matrix
``[[m11, m12, m13], [m21, m22, m23]]`` maps ``(x, y, 1)`` to a point; with
``inverse_map=True`` (the default) it maps output points to the input points sampled.
OpenCV puts pixel centres at whole numbers, hence the half-pixel conjugation below.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from chute.ops.geometry._border import as_hwc, cv_apply, cv_border, fill_tuple, widen_unit_extents
from chute.ops.geometry.resize_kernels import interp_name
from chute.runtime.limits import check_output

_CV_INTERP = {
    "nn": cv2.INTER_NEAREST,
    "linear": cv2.INTER_LINEAR,
    "cubic": cv2.INTER_CUBIC,
    # OpenCV's warps have no Lanczos-3; its 8-tap Lanczos-4 is the nearest kind
    "lanczos3": cv2.INTER_LANCZOS4,
    # DALI's warps sample, they do not filter: Gaussian falls back to linear there too
    "gaussian": cv2.INTER_LINEAR,
}


def as_affine(matrix: Any) -> np.ndarray:
    """Return a 2x3 float64 matrix from a 2x3, 3x3 or flat 6-element input."""
    m = np.asarray(matrix, dtype=np.float64)
    if m.size == 6:
        m = m.reshape(2, 3)
    elif m.shape == (3, 3):
        m = m[:2]
    else:
        raise ValueError(f"an affine matrix needs 6 values (2x3), got shape {m.shape}")
    if not np.isfinite(m).all():  # NaN or inf would warp every pixel to the fill value
        raise ValueError(f"argument 'matrix' must be finite, got {m.ravel().tolist()}")
    return m


def invert_affine(matrix: Any) -> np.ndarray:
    """Invert a 2x3 affine matrix."""
    m = as_affine(matrix)
    full = np.vstack([m, [0.0, 0.0, 1.0]])
    return np.linalg.inv(full)[:2]


def to_opencv(matrix: Any) -> np.ndarray:
    """Convert a DALI-convention (pixel centres at +0.5) matrix to OpenCV's (centres at 0)."""
    m = as_affine(matrix).copy()
    # x_cv = x - 0.5: M_cv(p) = M(p + 0.5) - 0.5
    m[:, 2] += m[:, :2].sum(axis=1) * 0.5 - 0.5
    return m


def resolve_border(border: str | None, fill_value: Any) -> str:
    """DALI's default: constant fill when a fill value is given, else repeat the edge."""
    if border is None:
        return "replicate" if fill_value is None else "constant"
    cv_border(border)
    return border


def warp_affine(
    image: np.ndarray,
    matrix: Any,
    size: Sequence[int] | None = None,
    inverse_map: bool = True,
    interp_type: Any = "linear",
    fill_value: float | Sequence[float] | None = None,
    border: str | None = None,
) -> np.ndarray:
    """Apply an affine transform to an HWC/HW image (DALI's ``fn.warp_affine``).

    ``size`` is the output (H, W), default the input's. ``border`` defaults to
    "constant" with ``fill_value`` when one is given, else "replicate" (DALI clamps).
    """
    m = as_affine(matrix)
    forward_shift = None if inverse_map else whole_pixel_shift(m)
    if forward_shift is not None:  # the inverse of a whole-pixel shift, without inverting
        m = np.array([[1.0, 0.0, -forward_shift[0]], [0.0, 1.0, -forward_shift[1]]])
    elif not inverse_map:
        m = invert_affine(m)
    in_h, in_w = image.shape[:2]
    if size is not None:
        check_output((size[0], size[1], *image.shape[2:]), image.dtype, "size")
    out_h, out_w = (in_h, in_w) if size is None else (int(size[0]), int(size[1]))
    if out_h <= 0 or out_w <= 0:
        raise ValueError(f"output size must be positive, got {out_h}x{out_w}")
    mode = resolve_border(border, fill_value)
    shift = whole_pixel_shift(m)
    if shift is not None and mode == "constant" and interp_name(interp_type) in ("nn", "linear"):
        return shift_image(image, shift, out_h, out_w, fill_value)
    flags = _CV_INTERP[interp_name(interp_type)] | cv2.WARP_INVERSE_MAP
    cv_matrix = to_opencv(m)
    if interp_name(interp_type) == "nn":
        # DALI takes the pixel holding M (p + 0.5), computed in float32 (OpenCV would round
        # halves to even): sample those integer positions exactly
        map_x, map_y = nearest_source(m, out_h, out_w)

        def run(chunk: np.ndarray, fill: tuple) -> np.ndarray:
            return cv2.remap(
                chunk,
                map_x,
                map_y,
                cv2.INTER_NEAREST,
                borderMode=cv_border(mode),
                borderValue=fill,
            )

        return cv_apply(image, run, fill_value)

    def run(chunk: np.ndarray, fill: tuple) -> np.ndarray:
        return cv2.warpAffine(
            chunk,
            cv_matrix,
            (out_w, out_h),
            flags=flags,
            borderMode=cv_border(mode),
            borderValue=fill,
        )

    return cv_apply(widen_unit_extents(image, mode), run, fill_value)


# dtypes cv2.copyMakeBorder pads exactly with a constant (float64 fills convert exactly)
_CV_PAD_DTYPES = (np.uint8, np.int8, np.uint16, np.int16, np.float32)


def whole_pixel_shift(m: np.ndarray) -> tuple[int, int] | None:
    """The (dx, dy) of an output->input matrix that only moves by whole pixels, else None."""
    if m[0, 0] != 1 or m[0, 1] != 0 or m[1, 0] != 0 or m[1, 1] != 1:
        return None
    dx, dy = float(m[0, 2]), float(m[1, 2])
    if not (dx.is_integer() and dy.is_integer()) or max(abs(dx), abs(dy)) > 1 << 30:
        return None
    return int(dx), int(dy)


def shift_image(
    image: np.ndarray,
    shift: tuple[int, int],
    out_h: int,
    out_w: int,
    fill_value: float | Sequence[float] | None,
) -> np.ndarray:
    """Output pixel (x, y) = input pixel (x + dx, y + dy), ``fill_value`` outside: a warp by
    whole pixels with a constant border, as copies (linear and nearest-neighbour sampling
    land on the pixel centres, so they equal OpenCV's warp of the same matrix)."""
    dx, dy = shift
    hwc, squeeze = as_hwc(image)
    in_h, in_w, channels = hwc.shape
    values = fill_tuple(fill_value, channels)
    if hwc.dtype.kind in "iu":  # OpenCV rounds (half to even) and saturates the fill value
        info = np.iinfo(hwc.dtype)
        values = tuple(float(min(max(round(v), info.min), info.max)) for v in values)
    fill = np.array(values, np.float64).astype(hwc.dtype)
    y0, y1 = max(0, -dy), min(out_h, in_h - dy)
    x0, x1 = max(0, -dx), min(out_w, in_w - dx)
    if y0 < y1 and x0 < x1 and channels <= 4 and hwc.dtype.type in _CV_PAD_DTYPES:
        # the kept window, bordered with the fill by OpenCV (one pass)
        window = np.ascontiguousarray(hwc[y0 + dy : y1 + dy, x0 + dx : x1 + dx])
        value = values + (0.0,) * (4 - channels)
        out = cv2.copyMakeBorder(
            window, y0, out_h - y1, x0, out_w - x1, cv2.BORDER_CONSTANT, value=value
        ).reshape(out_h, out_w, channels)
        return out[:, :, 0] if squeeze else out
    out = np.empty((out_h, out_w, channels), hwc.dtype)
    if (fill == fill[0]).all():
        out.fill(fill[0])
    else:
        out[...] = fill
    if y0 < y1 and x0 < x1:
        out[y0:y1, x0:x1] = hwc[y0 + dy : y1 + dy, x0 + dx : x1 + dx]
    return out[:, :, 0] if squeeze else out


def nearest_source(m: np.ndarray, out_h: int, out_w: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer source (x, y) maps (float32) of an output->input affine ``m``, DALI's NN rule.

    As DALI's CPU warp: each row starts at ``M (0.5, y + 0.5)`` and steps by the matrix's
    first column in a running float32 sum; the source pixel is the floor.
    """
    f32 = np.float32
    mm = m.astype(f32)
    y = np.arange(out_h, dtype=f32)[:, None] + f32(0.5)
    maps = []
    for row in range(2):
        steps = np.empty((out_h, max(out_w, 1)), dtype=f32)
        steps[:] = mm[row, 0]
        steps[:, :1] = (mm[row, 0] * f32(0.5) + mm[row, 1] * y) + mm[row, 2]
        maps.append(np.floor(np.cumsum(steps, axis=1, dtype=f32))[:, :out_w])
    src_x, src_y = maps
    # far outside the image either way: keep the maps inside int range for OpenCV
    limit = f32(1 << 20)
    return np.clip(src_x, -limit, limit).astype(f32), np.clip(src_y, -limit, limit).astype(f32)


def rotated_canvas_size(in_h: int, in_w: int, angle: float) -> tuple[int, int]:
    """Return the (H, W) that holds an image rotated by ``angle`` degrees, as DALI sizes it.

    The bounding box is rounded up (with a 0.01 px tolerance); each extent is then
    bumped by one if needed to keep the parity of the input extent it mostly comes
    from, which keeps the centre on the pixel grid and avoids blurring small angles.
    """
    radians = math.radians(angle)
    c, s = abs(math.cos(radians)), abs(math.sin(radians))
    eps = 1e-2
    out_w = math.ceil(c * in_w + s * in_h - eps)
    out_h = math.ceil(c * in_h + s * in_w - eps)
    own = s < c
    if abs(s - c) < 1e-9:
        # exactly 45 degrees off an axis: DALI 2.4 swaps the parities at 45 and 315 (mod 360)
        # and keeps them at 135 and 225 (its float rounding; measured, not derived)
        own = round(angle % 360.0) in (135, 225)
    parity_w, parity_h = (in_w % 2, in_h % 2) if own else (in_h % 2, in_w % 2)
    out_w += (out_w % 2) ^ parity_w
    out_h += (out_h % 2) ^ parity_h
    return out_h, out_w


def rotation_matrix(in_h: int, in_w: int, out_h: int, out_w: int, angle: float) -> np.ndarray:
    """Output->input matrix of a counter-clockwise rotation by ``angle`` degrees about the centres."""
    radians = math.radians(angle)
    c, s = math.cos(radians), math.sin(radians)
    # with y pointing down, a counter-clockwise turn on screen reads the input at R(+a)
    rot = np.array([[c, -s], [s, c]])
    out_center = np.array([out_w * 0.5, out_h * 0.5])
    in_center = np.array([in_w * 0.5, in_h * 0.5])
    return np.hstack([rot, (in_center - rot @ out_center)[:, None]])


def rotate(
    image: np.ndarray,
    angle: float,
    keep_size: bool = False,
    size: Sequence[int] | None = None,
    interp_type: Any = "linear",
    fill_value: float | Sequence[float] | None = None,
    border: str | None = None,
) -> np.ndarray:
    """Rotate an HWC/HW image counter-clockwise by ``angle`` degrees (DALI's ``fn.rotate``).

    The output is ``size`` (H, W) if given, else the input's size with ``keep_size``,
    else the rotated bounding box (:func:`rotated_canvas_size`); centres stay aligned.
    """
    in_h, in_w = image.shape[:2]
    if size is not None:
        out_h, out_w = int(size[0]), int(size[1])
    elif keep_size:
        out_h, out_w = in_h, in_w
    else:
        out_h, out_w = rotated_canvas_size(in_h, in_w, angle)
    matrix = rotation_matrix(in_h, in_w, out_h, out_w, angle)
    return warp_affine(image, matrix, (out_h, out_w), True, interp_type, fill_value, border)
