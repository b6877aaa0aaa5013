"""Affine matrices as DALI's ``fn.transforms.*`` builds them, and point transforms.

Every builder returns a 2x3 float32 matrix ``[[a, b, tx], [c, d, ty]]`` acting on
column vectors ``(x, y, 1)``. Given an input matrix ``T``, a builder composes with it:
by default the result applies ``T`` first and the new transform after it
(``M_new @ T``); ``reverse_order=True`` gives ``T @ M_new``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


def _homogeneous(matrix: Any) -> np.ndarray:
    m = np.asarray(matrix, dtype=np.float64)
    if m.size == 6:
        m = m.reshape(2, 3)
    elif m.shape != (3, 3):
        raise ValueError(f"expected a 2x3 affine matrix, got shape {m.shape}")
    if m.shape == (2, 3):
        m = np.vstack([m, [0.0, 0.0, 1.0]])
    return m


def _finish(matrix: np.ndarray, input_matrix: Any, reverse_order: bool) -> np.ndarray:
    if input_matrix is not None:
        previous = _homogeneous(input_matrix)
        matrix = previous @ matrix if reverse_order else matrix @ previous
    return matrix[:2].astype(np.float32)


def _vec2(value: Any, name: str) -> np.ndarray:
    v = np.asarray(value, dtype=np.float64).ravel()
    if v.size == 1:
        return np.repeat(v, 2)
    if v.size != 2:
        raise ValueError(f"{name} must have 1 or 2 values (x, y), got {v.size}")
    return v


def _about(linear: np.ndarray, center: Any) -> np.ndarray:
    """Homogeneous matrix of ``linear`` applied around ``center``: c + L (p - c)."""
    m = np.eye(3)
    m[:2, :2] = linear
    if center is not None:
        c = _vec2(center, "center")
        m[:2, 2] = c - linear @ c
    return m


def translation(offset: Any, input_matrix: Any = None, reverse_order: bool = False) -> np.ndarray:
    """Translation by ``offset`` (x, y)."""
    m = np.eye(3)
    m[:2, 2] = _vec2(offset, "offset")
    return _finish(m, input_matrix, reverse_order)


def scale(
    scale: Any, center: Any = None, input_matrix: Any = None, reverse_order: bool = False
) -> np.ndarray:
    """Scaling by ``scale`` (x, y, or one value for both) about ``center`` (default origin)."""
    s = _vec2(scale, "scale")
    return _finish(_about(np.diag(s), center), input_matrix, reverse_order)


def rotation(
    angle: float, center: Any = None, input_matrix: Any = None, reverse_order: bool = False
) -> np.ndarray:
    """Rotation by ``angle`` degrees about ``center`` (default origin).

    The matrix is the mathematical ``[[cos, -sin], [sin, cos]]``, as DALI's
    ``fn.transforms.rotation``; with y pointing down it turns clockwise on screen.
    """
    a = math.radians(float(angle))
    c, s = math.cos(a), math.sin(a)
    return _finish(_about(np.array([[c, -s], [s, c]]), center), input_matrix, reverse_order)


def shear(
    shear: Any = None,
    angles: Any = None,
    center: Any = None,
    input_matrix: Any = None,
    reverse_order: bool = False,
) -> np.ndarray:
    """Shear ``[[1, sx], [sy, 1]]`` from factors ``shear`` or from ``angles`` in degrees (tan)."""
    if (shear is None) == (angles is None):
        raise ValueError("give exactly one of shear and angles")
    if shear is not None:
        sx, sy = _vec2(shear, "shear")
    else:
        ax, ay = _vec2(angles, "angles")
        if max(abs(ax), abs(ay)) >= 90.0:
            raise ValueError(f"shear angles must lie in (-90, 90), got {ax}, {ay}")
        sx, sy = math.tan(math.radians(ax)), math.tan(math.radians(ay))
    return _finish(_about(np.array([[1.0, sx], [sy, 1.0]]), center), input_matrix, reverse_order)


def _vec_n(value: np.ndarray, name: str, ndim: int) -> np.ndarray:
    if value.size == 1:
        return np.repeat(value, ndim)
    if value.size != ndim:
        raise ValueError(f"{name} must have 1 or {ndim} values, got {value.size}")
    return value


def _homogeneous_n(matrix: Any, ndim: int) -> np.ndarray:
    m = np.asarray(matrix, dtype=np.float64)
    if m.ndim == 1 and m.size == ndim * (ndim + 1):
        m = m.reshape(ndim, ndim + 1)
    if m.shape == (ndim, ndim + 1):
        m = np.vstack([m, np.eye(ndim + 1)[ndim]])
    if m.shape != (ndim + 1, ndim + 1):
        raise ValueError(f"expected a {ndim}x{ndim + 1} affine matrix, got shape {m.shape}")
    return m


def crop(
    from_start: Any = (0.0,),
    from_end: Any = (1.0,),
    to_start: Any = (0.0,),
    to_end: Any = (1.0,),
    absolute: bool = False,
    input_matrix: Any = None,
    reverse_order: bool = False,
) -> np.ndarray:
    """Map the box ``[from_start, from_end]`` onto ``[to_start, to_end]``: an (n, n+1) matrix.

    As DALI, the number of dimensions n is the longest of the four vectors (one value
    stands for all dimensions) or the input matrix's; with ``absolute``, start and end are
    swapped where start > end, so the box keeps its orientation; otherwise a reversed box
    flips.
    """
    names = ("from_start", "from_end", "to_start", "to_end")
    values = [
        np.asarray(v, dtype=np.float64).ravel() for v in (from_start, from_end, to_start, to_end)
    ]
    ndim = max(v.size for v in values)
    if input_matrix is not None:
        given = np.asarray(input_matrix)
        ndim = max(ndim, given.shape[0] if given.ndim == 2 else 2)
    f0, f1, t0, t1 = (_vec_n(v, name, ndim) for v, name in zip(values, names))
    if absolute:
        f0, f1 = np.minimum(f0, f1), np.maximum(f0, f1)
        t0, t1 = np.minimum(t0, t1), np.maximum(t0, t1)
    span = f1 - f0
    if np.any(span == 0):
        raise ValueError("from_start and from_end must differ on every axis")
    s = (t1 - t0) / span
    m = np.eye(ndim + 1)
    m[:ndim, :ndim] = np.diag(s)
    m[:ndim, ndim] = t0 - s * f0
    if input_matrix is not None:
        previous = _homogeneous_n(input_matrix, ndim)
        m = previous @ m if reverse_order else m @ previous
    return m[:ndim].astype(np.float32)


def combine(*matrices: Any, reverse_order: bool = False) -> np.ndarray:
    """Compose transforms so that the result applies them in the order listed.

    ``combine(T1, T2)`` maps p to ``T2(T1(p))``, i.e. ``T2 @ T1``; ``reverse_order``
    applies them last to first.
    """
    if len(matrices) < 2:
        raise ValueError("combine needs at least two transforms")
    result = np.eye(3)
    for m in matrices:
        h = _homogeneous(m)
        result = result @ h if reverse_order else h @ result
    return result[:2].astype(np.float32)


def coord_flip(
    coords: np.ndarray,
    layout: str = "xy",
    flip_x: bool = True,
    flip_y: bool = False,
    flip_z: bool = False,
    center_x: float = 0.5,
    center_y: float = 0.5,
    center_z: float = 0.5,
) -> np.ndarray:
    """Reflect coordinates ``v -> 2 * center - v`` on the flipped axes (DALI's ``fn.coord_flip``).

    ``coords`` is (N, D) with D = len(layout), or (N, k * D) for k points per row, such
    as boxes as two corners ("ltrb" boxes with ``layout="xy"``).
    """
    points = np.asarray(coords)
    dims = len(layout)
    if dims == 0 or points.shape[-1] % dims:
        raise ValueError(f"the last extent ({points.shape[-1]}) must be a multiple of len(layout)")
    out = np.array(points, dtype=points.dtype if points.dtype.kind == "f" else np.float32)
    view = out.reshape(-1, dims)
    settings = {"x": (flip_x, center_x), "y": (flip_y, center_y), "z": (flip_z, center_z)}
    for axis, name in enumerate(layout.lower()):
        if name not in settings:
            raise ValueError(f"layout may hold only x, y and z, got {layout!r}")
        flipped, center = settings[name]
        if flipped:
            view[:, axis] = 2.0 * center - view[:, axis]
    return out


def coord_transform(
    coords: np.ndarray,
    M: Any = None,
    T: Any = None,
    MT: Any = None,
    dtype: Any = np.float32,
) -> np.ndarray:
    """Apply ``out = M @ p + T`` to every point p (a row of ``coords``), DALI's ``fn.coord_transform``.

    ``M`` may be a scalar (uniform scale), a vector (diagonal) or an (out_dim, in_dim)
    matrix; ``T`` a scalar or a vector; ``MT`` the two side by side, (out_dim, in_dim + 1).
    """
    points = np.asarray(coords, dtype=np.float64)
    if points.ndim != 2:
        raise ValueError(f"coordinates must be (N, D), got shape {points.shape}")
    linear, shift = affine_parts(points.shape[1], M, T, MT)
    return (points @ linear.T + shift).astype(dtype)


def affine_parts(dims: int, M: Any = None, T: Any = None, MT: Any = None) -> tuple:
    """The float64 ``(linear (out_dim, dims), shift (out_dim,))`` of fn.coord_transform's
    ``M``/``T``/``MT`` arguments for points of ``dims`` coordinates, checked."""
    if MT is not None:
        if M is not None or T is not None:
            raise ValueError("MT cannot be combined with M or T")
        mt = np.asarray(MT, dtype=np.float64)
        if mt.ndim != 2:
            mt = mt.reshape(-1, dims + 1)
        if mt.shape[1] != dims + 1:
            raise ValueError(f"MT must have {dims + 1} columns, got shape {mt.shape}")
        linear, shift = mt[:, :dims], mt[:, dims]
    else:
        linear = np.eye(dims) if M is None else np.asarray(M, dtype=np.float64)
        if linear.ndim == 0 or linear.size == 1:
            linear = np.eye(dims) * float(linear.ravel()[0])
        elif linear.ndim == 1 and linear.size == dims:
            linear = np.diag(linear)
        elif linear.ndim != 2:
            linear = linear.reshape(-1, dims)
        if linear.shape[1] != dims:
            raise ValueError(f"M must have {dims} columns, got shape {linear.shape}")
        shift = np.zeros(linear.shape[0]) if T is None else np.asarray(T, dtype=np.float64).ravel()
        if shift.size == 1:
            shift = np.repeat(shift, linear.shape[0])
    if shift.size != linear.shape[0]:
        raise ValueError(f"T must have {linear.shape[0]} values, got {shift.size}")
    for name, value in (
        ("MT" if MT is not None else "M", linear),
        ("MT" if MT is not None else "T", shift),
    ):
        if not np.isfinite(value).all():  # NaN or inf would give NaN coordinates silently
            raise ValueError(f"argument {name!r} must be finite, got {value.ravel().tolist()}")
    return linear, shift
