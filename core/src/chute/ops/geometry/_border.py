"""Border modes, fill values and small shape helpers shared by the geometry kernels."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import cv2
import numpy as np

#: Border modes, named as OpenCV names them. With the row ``abcdefgh``:
#:
#: ============== ==================== ====================== =====================
#: chute name     extends as           OpenCV                 numpy.pad mode
#: ============== ==================== ====================== =====================
#: "constant"     ``iiiiii|abcdefgh``  ``BORDER_CONSTANT``    ``"constant"``
#: "reflect"      ``fedcba|abcdefgh``  ``BORDER_REFLECT``     ``"symmetric"``
#: "reflect_101"  ``gfedcb|abcdefgh``  ``BORDER_REFLECT_101`` ``"reflect"``
#: "replicate"    ``aaaaaa|abcdefgh``  ``BORDER_REPLICATE``   ``"edge"``
#: "wrap"         ``cdefgh|abcdefgh``  ``BORDER_WRAP``        ``"wrap"``
#: ============== ==================== ====================== =====================
#:
#: Note the trap: chute's (and OpenCV's) "reflect" repeats the edge pixel, which is
#: numpy's "symmetric"; numpy's "reflect" is chute's "reflect_101".
BORDER_MODES: dict[str, int] = {
    "constant": cv2.BORDER_CONSTANT,
    "reflect": cv2.BORDER_REFLECT,
    "reflect_101": cv2.BORDER_REFLECT_101,
    "replicate": cv2.BORDER_REPLICATE,
    "wrap": cv2.BORDER_WRAP,
}

#: numpy.pad equivalents of the border modes, for tests and small non-OpenCV paths.
NUMPY_PAD_MODES: dict[str, str] = {
    "constant": "constant",
    "reflect": "symmetric",
    "reflect_101": "reflect",
    "replicate": "edge",
    "wrap": "wrap",
}

# OpenCV's warp/remap functions take a fill value of at most 4 channels.
_CV_MAX_CHANNELS = 4
# dtypes that OpenCV's geometric functions accept natively.
_CV_DTYPES = (np.uint8, np.int8, np.uint16, np.int16, np.float32, np.float64)


def cv_border(border: str) -> int:
    """Return the OpenCV border flag for a chute border name, or raise ValueError."""
    try:
        return BORDER_MODES[border]
    except KeyError:
        raise ValueError(
            f"unknown border mode {border!r}; expected one of {sorted(BORDER_MODES)}"
        ) from None


def fill_tuple(fill_value: float | Sequence[float] | np.ndarray | None, channels: int) -> tuple:
    """Expand a scalar or per-channel fill value to one float per channel."""
    if fill_value is None:
        return (0.0,) * channels
    values = np.asarray(fill_value, dtype=np.float64).ravel()
    if values.size == 1:
        return (float(values[0]),) * channels
    if values.size != channels:
        raise ValueError(
            f"fill value has {values.size} entries but the image has {channels} channels"
        )
    return tuple(float(v) for v in values)


def as_hwc(image: np.ndarray) -> tuple[np.ndarray, bool]:
    """View a HW or HWC image as HWC; also say whether the input had no channel axis."""
    if image.ndim == 2:
        return image[:, :, None], True
    if image.ndim != 3:
        raise ValueError(f"expected an HWC (or HW) image, got shape {image.shape}")
    return image, False


def restore_channels(result: np.ndarray, channels: int, squeeze: bool) -> np.ndarray:
    """Undo OpenCV's habit of dropping a single channel axis, and the HW->HWC view."""
    if result.ndim == 2 and not squeeze:
        result = result[:, :, None]
    elif result.ndim == 3 and squeeze:
        result = result[:, :, 0]
    if not squeeze and result.shape[2] != channels:
        raise AssertionError("channel count changed")  # pragma: no cover
    return result


def widen_unit_extents(image: np.ndarray, border: str) -> np.ndarray:
    """The image with a 1-pixel height or width doubled when ``border`` is "reflect_101".

    OpenCV's warps never return on a reflect_101 border of a 1-pixel extent (seen with
    cubic interpolation, OpenCV 5.0). Doubling it samples the same values: reflect_101
    of ``[a]`` and of ``[a, a]`` is ``a`` everywhere.
    """
    if border != "reflect_101" or image.ndim < 2 or min(image.shape[:2]) != 1:
        return image
    reps = [2 if n == 1 else 1 for n in image.shape[:2]] + [1] * (image.ndim - 2)
    return np.tile(image, reps)


def channel_groups(channels: int) -> list[tuple[int, int]]:
    """Split channels into runs OpenCV warps handle alike: 1, 3 or 4 channels each.

    Two-channel images take a different path in OpenCV 5's float warps (sample
    positions quantised to 1/32 px, where 1, 3 and 4 channels interpolate exactly),
    so a pair is done as two singles to keep every channel on the same arithmetic.
    """
    groups, c0 = [], 0
    while c0 < channels:
        left = channels - c0
        size = 1 if left == 2 else min(left, _CV_MAX_CHANNELS)
        if left == 6:
            size = 3  # 3 + 3 rather than 4 + 1 + 1
        groups.append((c0, c0 + size))
        c0 += size
    return groups


def cv_apply(
    image: np.ndarray,
    op: Callable[[np.ndarray, tuple], np.ndarray],
    fill_value: float | Sequence[float] | np.ndarray | None = None,
) -> np.ndarray:
    """Run an OpenCV geometric op on an HWC/HW image of any channel count and common dtype.

    ``op(chunk, fill)`` gets an HWC array of 1, 3 or 4 channels (OpenCV's limit for
    fill values is 4) and the fill tuple for those channels; other channel counts are
    processed in groups (:func:`channel_groups`). dtypes OpenCV lacks are round-tripped through
    float64 (exact for int32 / uint32) and cast back.
    """
    hwc, squeeze = as_hwc(image)
    channels = hwc.shape[2]
    fill = fill_tuple(fill_value, channels)
    work = hwc
    if hwc.dtype.type not in _CV_DTYPES:
        work = hwc.astype(np.float64)
    groups = channel_groups(channels)
    if len(groups) == 1:
        out = op(np.ascontiguousarray(work), fill)
        out, _ = as_hwc(out) if out.ndim == 2 else (out, False)
    else:
        parts = []
        for c0, c1 in groups:
            part = op(np.ascontiguousarray(work[:, :, c0:c1]), fill[c0:c1])
            parts.append(part[:, :, None] if part.ndim == 2 else part)
        out = np.concatenate(parts, axis=2)
    if out.dtype != hwc.dtype:
        out = cast_to(out, hwc.dtype)
    return out[:, :, 0] if squeeze else out


def cast_to(values: np.ndarray, dtype: np.dtype | type) -> np.ndarray:
    """Convert to ``dtype``, rounding to nearest and saturating for integer types."""
    dtype = np.dtype(dtype)
    if values.dtype == dtype:
        return values
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        if dtype == np.uint8 and values.dtype == np.float32:
            # one native pass: OpenCV rounds to nearest and saturates
            flat = np.ascontiguousarray(values).reshape(values.shape[0], -1)
            return cv2.add(flat, 0.0, dtype=cv2.CV_8U).reshape(values.shape)
        rounded = np.rint(values) if values.dtype.kind == "f" else values
        return np.clip(rounded, info.min, info.max).astype(dtype)
    return values.astype(dtype)
