"""Perspective warps and remaps: fn.experimental.warp_perspective and fn.experimental.remap.

Both sample an image at points computed per output pixel, with OpenCV's samplers
(``cv2.warpPerspective`` and ``cv2.remap``): pixel centres at whole numbers there. DALI's
``pixel_origin="corner"`` (the default of both operators) puts the centre of pixel
``(x, y)`` at ``(x + 0.5, y + 0.5)`` instead, so a corner-origin matrix is conjugated by a
half-pixel shift, ``M_cv = T(-0.5) M T(+0.5)``, and corner-origin maps are moved by
-0.5 before sampling. ``"center"`` takes matrices and maps as OpenCV does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from chute.ops.geometry._border import cv_apply, cv_border, widen_unit_extents
from chute.ops.geometry.resize_kernels import interp_name

__all__ = [
    "DTYPES",
    "INTERP",
    "PIXEL_ORIGINS",
    "as_perspective",
    "check_dtype",
    "interp_kind",
    "opencv_perspective",
    "perspective_size",
    "remap",
    "shifted_maps",
    "warp_perspective",
]

#: Input types of both operators (DALI's list).
DTYPES = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.int16), np.dtype(np.float32))
#: Interpolations both operators offer -> OpenCV's flags.
INTERP = {"nn": cv2.INTER_NEAREST, "linear": cv2.INTER_LINEAR, "cubic": cv2.INTER_CUBIC}
PIXEL_ORIGINS = ("corner", "center")


def check_dtype(op: str, dtype: Any) -> np.dtype:
    """The input dtype if the operator takes it, else a TypeError naming the operator."""
    dt = np.dtype(dtype)
    if dt not in DTYPES:
        raise TypeError(f"{op}: takes uint8, uint16, int16 or float32 images, got {dt.name}")
    return dt


def interp_kind(op: str, interp: Any, arg: str) -> str:
    """The interpolation's name if the operators offer it (nn, linear, cubic), else a ValueError."""
    name = interp_name(interp)
    if name not in INTERP:
        raise ValueError(
            f"{op}: argument '{arg}' got {name!r}; accepted: INTERP_NN, INTERP_LINEAR, INTERP_CUBIC"
        )
    return name


def as_perspective(op: str, matrix: Any, sample: int | None = None) -> np.ndarray:
    """A 3x3 float64 matrix from 9 values (flat or 3x3), as float32 like DALI reads it."""
    where = "" if sample is None else f" of sample {sample}"
    m = np.asarray(matrix)
    if m.size != 9:
        raise ValueError(
            f"{op}: argument 'matrix'{where} needs 9 values (a 3x3 matrix), got shape {m.shape}"
        )
    m = m.astype(np.float32).astype(np.float64).reshape(3, 3)
    if not np.isfinite(m).all():
        raise ValueError(f"{op}: argument 'matrix'{where} must be finite, got {m.ravel().tolist()}")
    return m


_SHIFT = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [0.0, 0.0, 1.0]])
_SHIFT_BACK = np.array([[1.0, 0.0, -0.5], [0.0, 1.0, -0.5], [0.0, 0.0, 1.0]])


def _matmul_f32(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """3x3 product in float32, each entry summed left to right (a fixed-size C++ loop's order)."""
    a32, b32 = np.asarray(a, np.float32), np.asarray(b, np.float32)
    out = a32[:, 0:1] * b32[0:1, :]
    out = out + a32[:, 1:2] * b32[1:2, :]
    return out + a32[:, 2:3] * b32[2:3, :]


def opencv_perspective(matrix: np.ndarray, pixel_origin: str, inverse_map: bool) -> np.ndarray:
    """The output->input 3x3 matrix in OpenCV's coordinates (pixel centres at integers).

    ``matrix`` maps output to input points (``inverse_map``) or input to output points;
    with ``pixel_origin="corner"`` its coordinates put pixel centres at +0.5. The
    conjugation commutes with the inversion, so either order gives the same matrix.
    """
    m = np.asarray(matrix, np.float64).reshape(3, 3)
    if pixel_origin == "corner":
        # in float32 arithmetic, as DALI converts its float32 matrices
        m = _matmul_f32(_SHIFT_BACK, _matmul_f32(m, _SHIFT)).astype(np.float64)
    if not inverse_map:
        try:
            m = np.linalg.inv(m)
        except np.linalg.LinAlgError:
            m = np.zeros((3, 3))  # what OpenCV's own inversion gives a singular forward map
    return m


def perspective_size(size: Any, in_hw: tuple[int, int]) -> tuple[int, int]:
    """The output (H, W): ``size`` rounded (halves away from zero) and at least 1, else the
    input's."""
    if size is None or np.size(size) == 0:
        return int(in_hw[0]), int(in_hw[1])
    values = np.asarray(size, np.float64).ravel()
    if values.size != 2:
        raise ValueError(f"size takes 2 values (H, W), got {values.size}")
    h, w = (int(np.sign(v) * np.floor(abs(v) + 0.5)) for v in values)
    return max(h, 1), max(w, 1)


def warp_perspective(
    image: np.ndarray,
    matrix: np.ndarray,
    out_hw: tuple[int, int],
    interp: int = cv2.INTER_LINEAR,
    border: str = "constant",
    fill_value: Sequence[float] | float | None = None,
) -> np.ndarray:
    """Warp an HW / HWC image by an output->input 3x3 ``matrix`` in OpenCV's coordinates.

    ``interp`` is an OpenCV interpolation flag; ``fill_value`` (one value or one per
    channel, 0 when None) fills points outside the input with ``border="constant"``.
    """
    out_h, out_w = out_hw
    flags = interp | cv2.WARP_INVERSE_MAP
    mode = cv_border(border)

    def run(chunk: np.ndarray, fill: tuple) -> np.ndarray:
        return cv2.warpPerspective(
            chunk, matrix, (out_w, out_h), flags=flags, borderMode=mode, borderValue=fill
        )

    if image.shape[0] == 0 or image.shape[1] == 0:
        return _outside(image, out_hw, fill_value if border == "constant" else None)
    return cv_apply(widen_unit_extents(image, border), run, fill_value)


def _outside(image: np.ndarray, out_hw: tuple[int, int], fill: Any) -> np.ndarray:
    """The output of a warp of an empty image: every point is outside (fill, or 0)."""
    shape = (*out_hw, *image.shape[2:])
    out = np.zeros(shape, image.dtype)
    if fill is not None:
        out[...] = np.asarray(fill, np.float64).astype(image.dtype)
    return out


def shifted_maps(mapx: np.ndarray, mapy: np.ndarray, pixel_origin: str):
    """float32 (H, W) maps in OpenCV's coordinates: corner-origin maps move by -0.5."""
    mx = np.asarray(mapx, np.float32)
    my = np.asarray(mapy, np.float32)
    if mx.ndim == 3:
        mx = mx[:, :, 0]
    if my.ndim == 3:
        my = my[:, :, 0]
    if pixel_origin == "corner":
        mx = mx - np.float32(0.5)
        my = my - np.float32(0.5)
    return np.ascontiguousarray(mx), np.ascontiguousarray(my)


def remap(
    image: np.ndarray, mapx: np.ndarray, mapy: np.ndarray, interp: int = cv2.INTER_LINEAR
) -> np.ndarray:
    """``out[y, x] = image[mapy[y, x], mapx[y, x]]`` for HW / HWC images, OpenCV's
    coordinates (float32 (H, W) maps); points outside read 0. The output has the maps' size."""
    if image.shape[0] == 0 or image.shape[1] == 0:
        return _outside(image, mapx.shape[:2], None)

    def run(chunk: np.ndarray, fill: tuple) -> np.ndarray:
        return cv2.remap(
            chunk, mapx, mapy, interp, borderMode=cv2.BORDER_CONSTANT, borderValue=fill
        )

    return cv_apply(image, run, 0.0)
