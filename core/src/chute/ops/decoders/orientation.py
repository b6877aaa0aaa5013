"""EXIF orientation (1..8): applying it to pixels and mapping rectangles through it.

Orientation o says how the stored (source) pixels must be flipped/rotated to
show the image upright: 2 mirror left-right, 3 rotate 180, 4 mirror
top-bottom, 5 transpose, 6 rotate 90 clockwise, 7 transverse, 8 rotate 90
counter-clockwise. Orientations 5..8 swap height and width.

Rectangles are (y0, x0, y1, x1) in pixel-edge coordinates (end-exclusive),
so the same formulas serve integer pixel rois and fractional windows.
"""

from __future__ import annotations

import cv2
import numpy as np


def oriented_size(height: int, width: int, orientation: int) -> tuple[int, int]:
    """Return (height, width) of a height x width source shown with `orientation`."""
    return (width, height) if orientation >= 5 else (height, width)


def apply_orientation(image: np.ndarray, orientation: int) -> np.ndarray:
    """Flip/rotate an HWC image stored with EXIF `orientation` so that it shows upright."""
    if orientation <= 1 or orientation > 8:
        return image
    channels = image.shape[2]
    source = np.ascontiguousarray(image)
    if orientation == 2:
        out = cv2.flip(source, 1)
    elif orientation == 3:
        out = cv2.rotate(source, cv2.ROTATE_180)
    elif orientation == 4:
        out = cv2.flip(source, 0)
    elif orientation == 5:
        out = cv2.transpose(source)
    elif orientation == 6:
        out = cv2.rotate(source, cv2.ROTATE_90_CLOCKWISE)
    elif orientation == 7:
        out = cv2.rotate(cv2.transpose(source), cv2.ROTATE_180)
    else:
        out = cv2.rotate(source, cv2.ROTATE_90_COUNTERCLOCKWISE)
    # OpenCV drops a trailing channel axis of length 1.
    return out.reshape(out.shape[0], out.shape[1], channels)


def _point_to_source(y: float, x: float, height: int, width: int, orientation: int) -> tuple:
    # (y, x) in the upright image -> (y, x) in the stored image of height x width.
    if orientation == 2:
        return y, width - x
    if orientation == 3:
        return height - y, width - x
    if orientation == 4:
        return height - y, x
    if orientation == 5:
        return x, y
    if orientation == 6:
        return height - x, y
    if orientation == 7:
        return height - x, width - y
    if orientation == 8:
        return x, width - y
    return y, x


def _point_to_oriented(y: float, x: float, height: int, width: int, orientation: int) -> tuple:
    # Inverse of _point_to_source; height x width is still the stored size.
    if orientation == 6:
        return x, height - y
    if orientation == 8:
        return width - x, y
    if orientation == 7:
        return width - x, height - y
    # 1..5 are their own inverses.
    return _point_to_source(y, x, height, width, orientation)


def rect_to_source(rect: tuple, height: int, width: int, orientation: int) -> tuple:
    """Map a rectangle of the upright image into the stored height x width image."""
    y0, x0, y1, x1 = rect
    ay, ax = _point_to_source(y0, x0, height, width, orientation)
    by, bx = _point_to_source(y1, x1, height, width, orientation)
    return min(ay, by), min(ax, bx), max(ay, by), max(ax, bx)


def rect_to_oriented(rect: tuple, height: int, width: int, orientation: int) -> tuple:
    """Map a rectangle of the stored height x width image into the upright image."""
    y0, x0, y1, x1 = rect
    ay, ax = _point_to_oriented(y0, x0, height, width, orientation)
    by, bx = _point_to_oriented(y1, x1, height, width, orientation)
    return min(ay, by), min(ax, bx), max(ay, by), max(ax, bx)
