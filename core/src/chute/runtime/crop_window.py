"""Crop windows for the cropping decoders: random (Inception-style), anchored, sliced.

Every function returns (y0, x0, crop_h, crop_w) in pixels of the (oriented)
image, which the decoders turn into ``roi = (y0, x0, y0 + crop_h, x0 + crop_w)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from chute.runtime import native

CropWindow = tuple[int, int, int, int]

# compiled where a C compiler with 128-bit integers built chute.runtime._native
_native_window = native.random_crop_window


class RandomStream(Protocol):
    """What the sampler draws from: a ``numpy.random.Generator`` or a philox.SampleStream."""

    def uniform(self, low: float, high: float) -> float: ...

    def integers(self, low: int, high: int) -> int: ...


def random_crop_window(
    height: int,
    width: int,
    area: tuple[float, float] = (0.08, 1.0),
    aspect_ratio: tuple[float, float] = (3 / 4, 4 / 3),
    num_attempts: int = 10,
    rng: RandomStream | None = None,
) -> CropWindow:
    """Draw a random crop covering a uniform fraction of the area with log-uniform aspect ratio.

    The distribution is that of the Inception / RandomResizedCrop sampler:
    up to ``num_attempts`` draws of (area fraction ~ U(area), aspect w/h ~
    exp(U(log aspect_ratio))); the first that fits is placed uniformly.
    If none fits, the whole image is taken, narrowed to the aspect-ratio
    range and centred (:func:`centre_crop_window`).
    """
    if height <= 0 or width <= 0:
        raise ValueError(f"image size must be positive, got {height}x{width} (HxW)")
    if not (0 < area[0] <= area[1]):
        raise ValueError(f"area must be 0 < min <= max, got {area!r}")
    if not (0 < aspect_ratio[0] <= aspect_ratio[1]):
        raise ValueError(f"aspect_ratio must be 0 < min <= max, got {aspect_ratio!r}")
    if rng is None:
        rng = np.random.default_rng()
    image_area = height * width
    log_min, log_max = math.log(aspect_ratio[0]), math.log(aspect_ratio[1])
    for _ in range(num_attempts):
        target_area = image_area * rng.uniform(area[0], area[1])
        aspect = math.exp(rng.uniform(log_min, log_max))
        # Python's round (half to even) on purpose: the reference sampler uses it.
        crop_w = round(math.sqrt(target_area * aspect))
        crop_h = round(math.sqrt(target_area / aspect))
        if 0 < crop_w <= width and 0 < crop_h <= height:
            y0 = int(rng.integers(0, height - crop_h + 1))
            x0 = int(rng.integers(0, width - crop_w + 1))
            return y0, x0, crop_h, crop_w
    return centre_crop_window(height, width, aspect_ratio)


def stream_crop_window(
    height: int,
    width: int,
    area: tuple[float, float],
    aspect_ratio: tuple[float, float],
    num_attempts: int,
    key: tuple[int, int],
    counter: tuple[int, int, int, int],
) -> CropWindow:
    """:func:`random_crop_window` drawing from the Philox stream (key, counter).

    The numbers of ``philox.SampleStream(key, counter)``; drawn in C where chute.runtime._native
    is built (~0.4 us instead of ~8 us holding the GIL, a cost every decoding thread
    waits for).
    """
    if _native_window is None:
        from chute.runtime.philox import SampleStream

        stream = SampleStream(key, counter)
        return random_crop_window(height, width, area, aspect_ratio, num_attempts, stream)
    window = _native_window(height, width, *area, *aspect_ratio, num_attempts, *key, *counter)
    return centre_crop_window(height, width, aspect_ratio) if window is None else window


def centre_crop_window(height: int, width: int, aspect_ratio: tuple[float, float]) -> CropWindow:
    """The random sampler's fallback: the whole image narrowed to the aspect range, centred."""
    image_aspect = width / height
    if image_aspect < aspect_ratio[0]:
        crop_w = width
        crop_h = round(crop_w / aspect_ratio[0])
    elif image_aspect > aspect_ratio[1]:
        crop_h = height
        crop_w = round(crop_h * aspect_ratio[1])
    else:
        crop_h, crop_w = height, width
    crop_h, crop_w = max(1, min(crop_h, height)), max(1, min(crop_w, width))
    return (height - crop_h) // 2, (width - crop_w) // 2, crop_h, crop_w


def crop_window_from_anchor(
    height: int,
    width: int,
    crop_h: int,
    crop_w: int,
    pos_x: float = 0.5,
    pos_y: float = 0.5,
) -> CropWindow:
    """Place a crop_h x crop_w window at relative position (pos_x, pos_y) in [0, 1], DALI crop_pos style.

    The anchor is ``round(pos * (size - crop))`` per axis (halves round up),
    so 0 is the top/left edge, 1 the bottom/right edge and 0.5 the centre.
    A crop larger than the image gives a negative anchor; the decoders reject it.
    """
    if crop_h <= 0 or crop_w <= 0:
        raise ValueError(f"crop size must be positive, got {crop_h}x{crop_w} (HxW)")
    if not (0.0 <= pos_x <= 1.0 and 0.0 <= pos_y <= 1.0):
        raise ValueError(f"crop_pos_x and crop_pos_y must lie in [0, 1], got {pos_x}, {pos_y}")
    # DALI's position is a float32 (0.7 is 0.69999999): 0.7 * 35 gives 24.4999996, anchor 24
    y0 = math.floor(float(np.float32(pos_y)) * (height - crop_h) + 0.5)
    x0 = math.floor(float(np.float32(pos_x)) * (width - crop_w) + 0.5)
    return y0, x0, crop_h, crop_w


def slice_window(
    height: int,
    width: int,
    rel_start: Sequence[float] | None = None,
    rel_shape: Sequence[float] | None = None,
    start: Sequence[int] | None = None,
    shape: Sequence[int] | None = None,
    axis_names: str = "WH",
    rel_end: Sequence[float] | None = None,
    end: Sequence[int] | None = None,
    out_of_bounds_policy: str = "error",
) -> CropWindow:
    """Turn DALI slice arguments into a crop window.

    ``start``/``shape``/``end`` are absolute pixels, ``rel_start``/``rel_shape``/
    ``rel_end`` fractions of the image size; all list values in ``axis_names`` order
    ("WH" by default, as in DALI's image_slice: x first). Relative ends are
    rounded, and the shape is end - start, so that adjacent relative slices
    tile the image without gaps. Missing start means 0, missing shape means
    up to the image end. ``out_of_bounds_policy``: "error" or "trim_to_shape".
    """
    if start is not None and rel_start is not None:
        raise ValueError("give start or rel_start, not both")
    extents_given = [
        n
        for n, v in [("shape", shape), ("rel_shape", rel_shape), ("end", end), ("rel_end", rel_end)]
        if v is not None
    ]
    if len(extents_given) > 1:
        raise ValueError(f"give one of shape, rel_shape, end, rel_end, not {extents_given}")
    if sorted(axis_names) != ["H", "W"]:
        raise ValueError(f"axis_names must be 'WH' or 'HW', got {axis_names!r}")
    if out_of_bounds_policy not in ("error", "trim_to_shape"):
        raise ValueError(
            f"out_of_bounds_policy must be 'error' or 'trim_to_shape', got {out_of_bounds_policy!r}"
        )
    extent = {"H": height, "W": width}
    begin: dict[str, int] = {}
    stop: dict[str, int] = {}
    for index, axis in enumerate(axis_names):
        size = extent[axis]
        if rel_start is not None:
            rel_begin = float(_axis_value(rel_start, index, "rel_start"))
            begin[axis] = math.floor(rel_begin * size + 0.5)
        else:
            rel_begin = None
            begin[axis] = int(_axis_value(start, index, "start")) if start is not None else 0
        if rel_shape is not None:
            rel_extent = float(_axis_value(rel_shape, index, "rel_shape"))
            if rel_begin is not None:
                stop[axis] = math.floor((rel_begin + rel_extent) * size + 0.5)
            else:
                stop[axis] = begin[axis] + math.floor(rel_extent * size + 0.5)
        elif shape is not None:
            stop[axis] = begin[axis] + int(_axis_value(shape, index, "shape"))
        elif rel_end is not None:
            stop[axis] = math.floor(float(_axis_value(rel_end, index, "rel_end")) * size + 0.5)
        elif end is not None:
            stop[axis] = int(_axis_value(end, index, "end"))
        else:
            stop[axis] = size
        if out_of_bounds_policy == "trim_to_shape":
            begin[axis] = min(max(begin[axis], 0), size)
            stop[axis] = min(max(stop[axis], begin[axis]), size)
        if stop[axis] <= begin[axis]:
            raise ValueError(f"slice along {axis} is empty: [{begin[axis]}, {stop[axis]})")
        if begin[axis] < 0 or stop[axis] > size:
            raise ValueError(
                f"slice along {axis} [{begin[axis]}, {stop[axis]}) is outside the image "
                f"(size {size}); use out_of_bounds_policy='trim_to_shape'"
            )
    return begin["H"], begin["W"], stop["H"] - begin["H"], stop["W"] - begin["W"]


def _axis_value(values: Sequence, index: int, name: str) -> float:
    values = np.asarray(values).reshape(-1)
    if values.size != 2:
        raise ValueError(f"{name} must have 2 values (one per axis), got {values.size}")
    return values[index]
