"""A NumPy sampler: what a warp computes at given points, written out tap by tap.

Reference of the remap / warp_perspective tests: exact positions (OpenCV 5 quantises no
position on these paths), nearest neighbour rounding halves to even, bilinear and Keys
cubic (a = -0.75) taps, each tap extended by the border mode on its own.
"""

from __future__ import annotations

import numpy as np


def border_index(i: np.ndarray, n: int, border: str) -> np.ndarray:
    """Index ``i`` mapped onto [0, n) by the border mode; -1 outside with "constant"."""
    if border == "constant":
        return np.where((i >= 0) & (i < n), i, -1)
    if border == "replicate":
        return np.clip(i, 0, n - 1)
    if border == "wrap":
        return np.mod(i, n)
    if border == "reflect":  # fedcba|abcdef
        r = np.mod(i, 2 * n)
        return np.where(r < n, r, 2 * n - 1 - r)
    if n == 1:  # reflect_101: gfedcb|abcdef
        return np.zeros_like(i)
    r = np.mod(i, 2 * n - 2)
    return np.where(r < n, r, 2 * n - 2 - r)


def _tap(img: np.ndarray, y: np.ndarray, x: np.ndarray, border: str, fill: np.ndarray):
    h, w, _ = img.shape
    by, bx = border_index(y, h, border), border_index(x, w, border)
    out = img[np.clip(by, 0, h - 1), np.clip(bx, 0, w - 1)].astype(np.float64)
    out[(by < 0) | (bx < 0)] = fill
    return out


def _cubic(t: np.ndarray) -> list[np.ndarray]:
    a = -0.75
    u, v = t + 1, 1 - t
    k0 = ((a * u - 5 * a) * u + 8 * a) * u - 4 * a
    k1 = ((a + 2) * t - (a + 3)) * t * t + 1
    k2 = ((a + 2) * v - (a + 3)) * v * v + 1
    return [k0, k1, k2, 1 - k0 - k1 - k2]


def sample(
    image: np.ndarray,
    sx: np.ndarray,
    sy: np.ndarray,
    interp: str,
    border: str = "constant",
    fill=0.0,
) -> np.ndarray:
    """float64 (H, W, C) values of ``image`` (HW or HWC) at points (sx, sy) (pixel centres at
    integers)."""
    img = image if image.ndim == 3 else image[:, :, None]
    fill = np.broadcast_to(np.asarray(fill, np.float64), (img.shape[2],))
    if interp == "nn":
        return _tap(img, np.rint(sy).astype(int), np.rint(sx).astype(int), border, fill)
    x0, y0 = np.floor(sx).astype(int), np.floor(sy).astype(int)
    tx, ty = (sx - x0)[..., None], (sy - y0)[..., None]
    if interp == "linear":
        r0 = _tap(img, y0, x0, border, fill) * (1 - tx) + _tap(img, y0, x0 + 1, border, fill) * tx
        r1 = _tap(img, y0 + 1, x0, border, fill) * (1 - tx)
        r1 = r1 + _tap(img, y0 + 1, x0 + 1, border, fill) * tx
        return r0 * (1 - ty) + r1 * ty
    kx, ky = _cubic(tx), _cubic(ty)
    acc = np.zeros((*sx.shape, img.shape[2]))
    for j in range(4):
        row = sum(kx[i] * _tap(img, y0 - 1 + j, x0 - 1 + i, border, fill) for i in range(4))
        acc += ky[j] * row
    return acc


def perspective_points(m: np.ndarray, out_h: int, out_w: int) -> tuple[np.ndarray, np.ndarray]:
    """The input points an output->input 3x3 matrix (pixel centres at integers) reads."""
    y, x = np.mgrid[0:out_h, 0:out_w].astype(np.float64)
    xs = m[0, 0] * x + m[0, 1] * y + m[0, 2]
    ys = m[1, 0] * x + m[1, 1] * y + m[1, 2]
    ws = m[2, 0] * x + m[2, 1] * y + m[2, 2]
    return xs / ws, ys / ws


def as_dtype(values: np.ndarray, dtype) -> np.ndarray:
    """Round half to even and saturate into an integer dtype; float dtypes as they are."""
    dt = np.dtype(dtype)
    if dt.kind == "f":
        return values.astype(dt)
    info = np.iinfo(dt)
    return np.clip(np.rint(values), info.min, info.max).astype(dt)
