"""The .npy file format: headers, regions of interest, and reading only what they need.

A .npy file is ``\\x93NUMPY``, a version (1.0: 2-byte header length; 2.0 and
3.0: 4-byte), a Python dict literal (``descr``, ``fortran_order``, ``shape``)
padded with spaces, then the data. Errors name the byte offset of what is wrong.
"""

from __future__ import annotations

import ast
import struct
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["NpyHeader", "parse_header", "read_array", "roi_window"]

MAGIC = b"\x93NUMPY"
_KINDS = "biufc"  # bool, signed, unsigned, float, complex


@dataclass(frozen=True)
class NpyHeader:
    """What a .npy header says, and where the data starts."""

    dtype: np.dtype
    shape: tuple[int, ...]
    fortran_order: bool
    data_offset: int

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize


def parse_header(read: Callable[[int, int], bytes]) -> NpyHeader:
    """Parse a .npy header; ``read(offset, size)`` gives the file's bytes (fewer at its end)."""
    head = read(0, 12)
    if head[:6] != MAGIC:
        raise ValueError(f"not a .npy file: bytes at offset 0 are {head[:6]!r}, not {MAGIC!r}")
    if len(head) < 10:
        raise ValueError(f"truncated .npy header: the file ends at offset {len(head)}")
    major = head[6]
    if major == 1:
        (length,), start = struct.unpack_from("<H", head, 8), 10
    elif major in (2, 3) and len(head) >= 12:
        (length,), start = struct.unpack_from("<I", head, 8), 12
    else:
        raise ValueError(f"unsupported .npy version {major}.{head[7]} at offset 6")
    text = read(start, length)
    if len(text) < length:
        raise ValueError(
            f"truncated .npy header at offset {start}: {length} bytes announced, "
            f"the file holds {len(text)}"
        )
    try:
        fields = ast.literal_eval(text.decode("utf-8" if major == 3 else "latin1"))
        descr, fortran, shape = fields["descr"], fields["fortran_order"], fields["shape"]
        if not isinstance(shape, tuple) or not all(isinstance(d, int) and d >= 0 for d in shape):
            raise ValueError(f"bad shape {shape!r}")
        if not isinstance(fortran, bool):
            raise ValueError(f"bad fortran_order {fortran!r}")
        dtype = np.dtype(descr)
    except (ValueError, SyntaxError, TypeError, KeyError) as exc:
        raise ValueError(f"malformed .npy header at offset {start}: {exc}") from None
    if dtype.kind not in _KINDS or dtype.fields is not None or dtype.subdtype is not None:
        raise ValueError(
            f"unsupported .npy dtype {descr!r} in the header at offset {start} "
            "(numbers and bools only)"
        )
    return NpyHeader(dtype, tuple(shape), fortran, start + length)


def _llround(x: float) -> int:
    # C's llround: halves away from zero (DALI's slice arguments)
    return int(np.sign(x) * np.floor(abs(x) + 0.5))


def roi_window(
    shape: tuple[int, ...], roi: dict[str, tuple | None], axes: tuple[int, ...]
) -> tuple[list[int], list[int]] | None:
    """(anchor, window shape) of the region of interest, as DALI's named slice arguments give it.

    ``roi`` holds roi_start / rel_roi_start / roi_end / rel_roi_end / roi_shape /
    rel_roi_shape (None where not given); ``axes`` the axes they refer to (() = all).
    None when no region is asked for.
    """
    if all(v is None for v in roi.values()):
        return None
    ndim = len(shape)
    axes = tuple(axes) or tuple(range(ndim))
    for a in axes:
        if not -ndim <= a < ndim:
            raise ValueError(f"roi_axes {list(axes)} do not fit an array of {ndim} dims")
    anchor, window = [0] * ndim, list(shape)
    for key, values in roi.items():
        if values is not None and len(values) != len(axes):
            raise ValueError(
                f"{key} has {len(values)} values for {len(axes)} axes (shape {list(shape)})"
            )
    for i, a in enumerate(axes):
        a %= ndim
        extent = shape[a]
        start = 0.0
        if roi["roi_start"] is not None:
            start = float(roi["roi_start"][i])
        elif roi["rel_roi_start"] is not None:
            start = roi["rel_roi_start"][i] * extent
        end = float(extent)
        if roi["roi_end"] is not None:
            end = float(roi["roi_end"][i])
        elif roi["rel_roi_end"] is not None:
            end = roi["rel_roi_end"][i] * extent
        elif roi["roi_shape"] is not None:
            end = start + roi["roi_shape"][i]
        elif roi["rel_roi_shape"] is not None:
            rel_start = roi["rel_roi_start"][i] if roi["rel_roi_start"] is not None else None
            if rel_start is not None:  # one multiplication: less rounding error (as DALI)
                end = (rel_start + roi["rel_roi_shape"][i]) * extent
            else:
                end = start + roi["rel_roi_shape"][i] * extent
        if end < start:
            raise ValueError(
                f"region of interest ends ({end}) before it starts ({start}) on axis {a}"
            )
        anchor[a] = _llround(start)
        window[a] = _llround(end) - anchor[a]
    return anchor, window


def read_array(
    header: NpyHeader,
    read: Callable[[int, int], np.ndarray],
    window: tuple[list[int], list[int]] | None = None,
    policy: str = "error",
    fill_value: float = 0.0,
) -> np.ndarray:
    """The array (C order, native byte order), or its region ``window`` = (anchor, shape).

    ``read(offset, size)`` returns the file's bytes as uint8. C-order files are read
    only over the rows (outermost axis) the region covers. ``policy``: "error" (a
    region out of the array's bounds raises), "trim_to_shape" (cut to the bounds) or
    "pad" (filled with ``fill_value`` where out of bounds).
    """
    shape, dtype = header.shape, header.dtype
    if window is None:
        lo, hi = [0] * len(shape), list(shape)
    else:
        anchor, size = window
        lo = [max(a, 0) for a in anchor]
        hi = [min(a + s, d) for a, s, d in zip(anchor, size, shape)]
        hi = [max(h, low) for h, low in zip(hi, lo)]
        outside = any(a < 0 or a + s > d for a, s, d in zip(anchor, size, shape))
        if outside and policy == "error":
            raise ValueError(
                f"region of interest [{anchor}, {[a + s for a, s in zip(anchor, size)]}) is out "
                f"of the bounds of shape {list(shape)} (out_of_bounds_policy='error')"
            )
    row = int(np.prod(shape[1:], dtype=np.int64)) * dtype.itemsize
    if shape and not header.fortran_order:
        first, last = (lo[0], hi[0]) if window is not None else (0, shape[0])
        offset, nbytes, outer = header.data_offset + first * row, (last - first) * row, last - first
    else:
        offset, nbytes, outer = header.data_offset, header.nbytes, None
    data = read(offset, nbytes)
    if len(data) < nbytes:
        raise ValueError(
            f"truncated .npy data at offset {offset}: {nbytes} bytes needed, "
            f"the file holds {len(data)}"
        )
    if outer is not None:
        array = data[:nbytes].view(dtype).reshape((outer, *shape[1:]))
        index = (slice(0, outer), *(slice(a, b) for a, b in zip(lo[1:], hi[1:])))
    else:
        array = np.ndarray(shape, dtype, buffer=data[:nbytes], order="F")
        index = tuple(slice(a, b) for a, b in zip(lo, hi))
    array = array[index] if window is not None else array
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    if not dtype.isnative:
        array = array.astype(dtype.newbyteorder("="))
    if window is not None and policy == "pad":
        anchor, size = window
        out = np.full(size, np.array(fill_value).astype(array.dtype), array.dtype)
        place = tuple(slice(low - a, h - a) for low, h, a in zip(lo, hi, anchor))
        out[place] = array
        return out
    return array
