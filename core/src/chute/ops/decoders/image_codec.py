"""CPU image decoding: format detection, header peeking, ROI and DCT-scaled decodes.

JPEG goes through libjpeg-turbo 3 (chute.ops.decoders.turbo), which decodes
only the region of interest and, for DCT-scaled decodes, at 1/2, 1/4 or 1/8
size; where that library is missing, through simplejpeg (whole image, then
cropped: the same pixels). Both release the GIL. CMYK/YCCK JPEGs and every
other format go through Pillow, and 16-bit colour PNGs through OpenCV when
16-bit output is asked for.

Conventions, chosen once for every format:

- Output is HWC. ``output_type``: RGB, BGR, GRAY (1 channel), YCbCr, or
  ANY_DATA (the source channels: gray 1, gray+alpha 2, colour 3, with alpha 4;
  palettes expand to RGB or RGBA; CMYK becomes RGB). Alpha is dropped for
  RGB, BGR, GRAY and YCbCr.
- YCbCr is ITU-R BT.601 in limited ("studio") range, Y in [16, 235], Cb/Cr in
  [16, 240], like DALI (not Pillow's full-range JFIF YCbCr).
- ``dtype`` is uint8, uint16 or float32 (float in [0, 1]). 16-bit sources
  (PNG, TIFF, PNM) keep all 16 bits when uint16 or float32 is asked; for
  uint8 they keep the high byte (``v >> 8``), which is what Pillow does for
  16-bit colour PNGs. (Pillow clips 16-bit gray to 255 instead; chute does
  not follow it there.) 8-bit sources widen to uint16 by ``v * 257``.
- ``roi=(y0, x0, y1, x1)`` is in pixels of the oriented image, end-exclusive; or a
  function of the oriented image's (height, width) returning it, called once the
  header is read (crop operators need the size, and so parse the header once).
- Truncated or corrupt data raises :class:`DecodeError` (a ``ValueError``);
  this relies on Pillow's ``ImageFile.LOAD_TRUNCATED_IMAGES`` being False
  (its default) and on simplejpeg's strict mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import cv2
import numpy as np
import simplejpeg

from chute.ops.decoders import turbo
from chute.ops.decoders.image_headers import (
    DecodeError,
    EncodedImage,
    as_buffer,
    check_pixels,
    detect_format,
    jpeg_orientation,
    png_channels,
    png_header,
    png_orientation,
)
from chute.ops.decoders.jpeg_structure import check_structure, structure_errors
from chute.ops.decoders.orientation import (
    apply_orientation,
    oriented_size,
    rect_to_oriented,
    rect_to_source,
)
from chute.ops.decoders.pillow_decode import (
    decode_pillow,
    native_channels,
    open_pillow,
    pillow_orientation,
)
from chute.ops.decoders.pixel_convert import convert_color, convert_dtype
from chute.runtime import output_pool

# Same bound as Pillow's Image.MAX_IMAGE_PIXELS: a 1 GiB RGB image.
MAX_IMAGE_PIXELS = 1024 * 1024 * 1024 // 4 // 3

OUTPUT_TYPES = ("RGB", "BGR", "GRAY", "YCbCr", "ANY_DATA")
OUTPUT_DTYPES = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.float32))

# libjpeg-turbo decodes at M/8 of full size; only M = 8, 4, 2, 1 are faster
# than a full decode (7/8, 3/4, 5/8 cost more than 1/1, measured).
_JPEG_SCALE_NUMERATORS = (1, 2, 4)


@dataclass(frozen=True)
class ScaledDecode:
    """A decoded region, possibly at a reduced scale.

    ``image`` holds the requested roi, grown outward to whole pixels of the
    reduced image; ``window`` = (y0, x0, y1, x1) says exactly where the roi
    lies in ``image`` (floats, end-exclusive edges); ``scale`` is decoded
    pixels per source pixel (1, 1/2, 1/4 or 1/8).
    """

    image: np.ndarray
    scale: float
    window: tuple[float, float, float, float]


class _Plan(NamedTuple):
    """Where to decode in the unoriented source image, and at which scale."""

    source_rect: tuple[int, int, int, int]
    numerator: int  # decode at numerator / 8 of full size


def peek_shape(data: EncodedImage, adjust_orientation: bool = True) -> tuple[int, int, int]:
    """Return (H, W, C) of the image from its header only; C is the source channel count."""
    buf = as_buffer(data)
    fmt = _detect(buf)
    if fmt == "jpeg":
        height, width, colorspace, _ = _jpeg_header(buf)
        channels = 1 if colorspace == "Gray" else 3
        orientation = jpeg_orientation(buf) if adjust_orientation else 1
    elif fmt == "png":
        # Chunk headers say it all, and Pillow would refuse huge claims here.
        try:
            height, width, _, _ = png_header(buf)
            channels = png_channels(buf)
        except ValueError as exc:
            raise DecodeError(f"png: {exc}") from None
        orientation = png_orientation(buf) if adjust_orientation else 1
    else:
        with open_pillow(buf, fmt) as image:
            width, height = image.size
            channels = native_channels(image)
            orientation = pillow_orientation(buf, fmt, image)
            if fmt == "tiff" and orientation >= 5:
                # Pillow reports TIFF sizes upright already (it turns them on load).
                width, height = height, width
            if not adjust_orientation:
                orientation = 1
    out_h, out_w = oriented_size(height, width, orientation)
    return out_h, out_w, channels


def decode(
    data: EncodedImage,
    output_type: Any = "RGB",
    dtype: Any = np.uint8,
    adjust_orientation: bool = True,
    roi: tuple[int, int, int, int] | None = None,
    max_pixels: int | None = MAX_IMAGE_PIXELS,
) -> np.ndarray:
    """Decode an encoded image (or exactly its `roi`) to an HWC array."""
    return _decode(data, output_type, dtype, adjust_orientation, roi, None, max_pixels)[0]


def decode_scaled(
    data: EncodedImage,
    min_size: tuple[int, int],
    output_type: Any = "RGB",
    dtype: Any = np.uint8,
    adjust_orientation: bool = True,
    roi: tuple[int, int, int, int] | None = None,
    max_pixels: int | None = MAX_IMAGE_PIXELS,
) -> ScaledDecode:
    """Decode `roi` at the smallest cheap scale whose roi is still at least `min_size` (h, w).

    Only JPEG is decoded at reduced scale (DCT-domain 1/2, 1/4, 1/8); other
    formats return scale 1. The caller resizes ``result.window`` afterwards.
    """
    if len(min_size) != 2 or min(min_size) < 0:
        raise ValueError(f"min_size must be (height, width) >= 0, got {min_size!r}")
    image, numerator, window = _decode(
        data, output_type, dtype, adjust_orientation, roi, min_size, max_pixels
    )
    return ScaledDecode(image=image, scale=numerator / 8, window=window)


def decode_resized(
    data: EncodedImage,
    size: tuple[int, int],
    roi: tuple[int, int, int, int] | None = None,
    output_type: Any = "RGB",
    adjust_orientation: bool = True,
    interpolation: int = cv2.INTER_LINEAR,
    max_pixels: int | None = MAX_IMAGE_PIXELS,
) -> np.ndarray:
    """Decode `roi` and resize it to `size` (h, w), using DCT scaling to skip work (uint8 out)."""
    out_h, out_w = size
    scaled = decode_scaled(data, size, output_type, np.uint8, adjust_orientation, roi, max_pixels)
    image = scaled.image
    y0, x0, y1, x1 = scaled.window
    if (y0, x0, y1, x1) == (0, 0, image.shape[0], image.shape[1]):
        resized = cv2.resize(image, (out_w, out_h), interpolation=interpolation)
    else:
        # The roi has fractional edges in the reduced image: map it exactly
        # with pixel-edge coordinates, as cv2.resize would for a whole image.
        scale_x = out_w / (x1 - x0)
        scale_y = out_h / (y1 - y0)
        matrix = np.array(
            [
                [scale_x, 0.0, scale_x * (0.5 - x0) - 0.5],
                [0.0, scale_y, scale_y * (0.5 - y0) - 0.5],
            ]
        )
        resized = cv2.warpAffine(
            image, matrix, (out_w, out_h), flags=interpolation, borderMode=cv2.BORDER_REPLICATE
        )
    if resized.ndim == 2:
        resized = resized[:, :, None]
    return resized


@dataclass
class DecodeJob:
    """One image on its way through :func:`prepare` -> (decoding) -> :func:`finish`.

    :func:`prepare` reads the header and plans the decode; a JPEG's pixels are then
    decoded by :func:`decode_jobs` (many at once, without the GIL) or by :func:`finish`.
    """

    buf: memoryview
    out_type: str
    out_dtype: np.dtype
    orientation: int
    plan: _Plan
    layout: str = "RGB"
    pixels: np.ndarray | None = None  # decoded: the plan's rect (or more), from `origin`
    origin: tuple[int, int] = (0, 0)
    own: bool = False  # `pixels` is a fresh array of its own (not a scratch buffer or a view)
    jpeg: tuple | None = None  # (height, width, pixel format, header) while still to decode


def reads_part(job: DecodeJob) -> bool:
    """Whether a JPEG job still to decode reads less than its whole image (a region: the
    entropy-coded data below it is never read)."""
    return job.jpeg is not None and tuple(job.plan.source_rect) != (0, 0, *job.jpeg[:2])


def prepare(
    data: EncodedImage,
    output_type: Any = "RGB",
    dtype: Any = np.uint8,
    adjust_orientation: bool = True,
    roi: Any = None,
    min_size: tuple[int, int] | None = None,
    max_pixels: int | None = MAX_IMAGE_PIXELS,
) -> DecodeJob:
    """Read the header and plan the decode (other formats than JPEG are decoded here)."""
    out_type = _normalize_output_type(output_type)
    out_dtype = _normalize_dtype(dtype)
    buf = as_buffer(data)
    fmt = _detect(buf)
    if fmt != "jpeg":
        native, layout, orientation = decode_pillow(
            buf, fmt, out_dtype, max_pixels, adjust_orientation
        )
        height, width = native.shape[:2]
        plan = _Plan(_plan(height, width, orientation, roi, min_size).source_rect, 8)
        return DecodeJob(buf, out_type, out_dtype, orientation, plan, layout, native)
    height, width, colorspace, header = _jpeg_header(buf)
    check_pixels(height, width, max_pixels)
    orientation = jpeg_orientation(buf) if adjust_orientation else 1
    plan = _plan(height, width, orientation, roi, min_size)
    job = DecodeJob(buf, out_type, out_dtype, orientation, plan)
    if colorspace in ("CMYK", "YCCK"):
        # libjpeg-turbo cannot turn Adobe's inverted CMYK into RGB; Pillow can.
        check_structure(buf)
        job.pixels, job.layout = decode_pillow(buf, fmt, out_dtype, max_pixels, False)[:2]
        job.plan = _Plan(plan.source_rect, 8)
    else:
        target, job.layout = _jpeg_target(out_type, colorspace)
        job.jpeg = (height, width, target, header)
    return job


def decode_jobs(jobs: list[DecodeJob]) -> list[Exception | None]:
    """Decode the JPEG pixels of `jobs`, in one call without the GIL where chute.runtime._native is built.

    Returns, per job, None or the DecodeError that job's data raised (the others are
    decoded all the same).
    """
    errors: list[Exception | None] = [None] * len(jobs)
    todo = [(k, job) for k, job in enumerate(jobs) if job.jpeg is not None]
    # the structure of all of them in one call without the GIL (see _check_structure)
    faults = structure_errors([job.buf for _, job in todo])
    for (k, job), fault in zip(todo, faults):
        if fault is not None:
            errors[k], job.jpeg = DecodeError(f"jpeg: {fault}"), None
    todo = [(k, job) for k, job in todo if errors[k] is None]
    decoder = turbo.load()
    if decoder is None:  # simplejpeg, one at a time
        for k, job in todo:
            try:
                _decode_job(job, checked=True)
            except DecodeError as exc:
                errors[k] = exc
        return errors
    regions = [(job.buf, job.jpeg[2], job.plan.numerator, _job_rect(job)) for _, job in todo]
    for (k, job), region, result in zip(todo, regions, decoder.decode_regions(regions)):
        if isinstance(result, str):
            errors[k] = DecodeError(f"jpeg: {result}")
        else:
            job.pixels, job.origin, job.own, job.jpeg = result, region[3][:2], True, None
    return errors


def finish(job: DecodeJob) -> tuple[np.ndarray, int, tuple[float, float, float, float]]:
    """(image, numerator of the scale in eighths, exact window of the roi in image)."""
    if job.jpeg is not None:
        _decode_job(job)
    native, plan, orientation = job.pixels, job.plan, job.orientation
    crop, window = _crop_scaled(native, plan, job.origin)
    image = convert_color(crop, job.layout, job.out_type)
    image = apply_orientation(image, orientation)
    window = rect_to_oriented(window, crop.shape[0], crop.shape[1], orientation)
    image = convert_dtype(image, job.out_dtype)
    # What still lies in `native` is copied out (it may be the decoder's reusable scratch
    # buffer, and a region must not keep a whole image alive), unless it is all of an
    # array of its own: a JPEG region decoded straight into its output.
    if np.may_share_memory(image, native):
        whole = job.own and image.nbytes == native.nbytes
        if not (whole and image.flags.c_contiguous):
            image = _copy_out(image)
    elif not image.flags.c_contiguous:
        image = _copy_out(image)
    return image, plan.numerator, window


def _decode(
    data: EncodedImage,
    output_type: Any,
    dtype: Any,
    adjust_orientation: bool,
    roi: Any,
    min_size: tuple[int, int] | None,
    max_pixels: int | None,
) -> tuple[np.ndarray, int, tuple[float, float, float, float]]:
    return finish(prepare(data, output_type, dtype, adjust_orientation, roi, min_size, max_pixels))


def _copy_out(image: np.ndarray) -> np.ndarray:
    """A C-contiguous copy in recycled memory (output_pool: no page faults to fill it)."""
    out = output_pool.empty(image.shape, image.dtype)
    np.copyto(out, image)
    return out


def _detect(buf: memoryview) -> str:
    try:
        return detect_format(buf)
    except ValueError as exc:
        raise DecodeError(str(exc)) from None


def _normalize_output_type(output_type: Any) -> str:
    name = getattr(output_type, "value", output_type)
    if name not in OUTPUT_TYPES:
        raise ValueError(f"output_type must be one of {', '.join(OUTPUT_TYPES)}; got {name!r}")
    return name


def _normalize_dtype(dtype: Any) -> np.dtype:
    try:
        out_dtype = np.dtype(dtype)
    except TypeError:
        out_dtype = None
    if out_dtype not in OUTPUT_DTYPES:
        names = ", ".join(d.name for d in OUTPUT_DTYPES)
        raise ValueError(f"dtype must be one of {names}; got {dtype!r}")
    return out_dtype


def _jpeg_header(buf: memoryview) -> tuple[int, int, str, turbo.JpegHeader | None]:
    """(height, width, colour space, TurboJPEG's header or None) of a JPEG.

    With libjpeg-turbo 3 loaded, the header is read by the thread's TurboJPEG handle,
    and the decode that follows on this thread reuses it instead of reading it again.
    """
    decoder = turbo.load()
    try:
        if decoder is not None:
            header = decoder.header(np.frombuffer(buf, np.uint8))
            return header.height, header.width, header.colorspace, header
        height, width, colorspace, _ = simplejpeg.decode_jpeg_header(buf)
    except Exception as exc:
        raise DecodeError(f"jpeg: {exc}") from None
    return height, width, colorspace, None


def _plan(
    height: int,
    width: int,
    orientation: int,
    roi: tuple[int, int, int, int] | None,
    min_size: tuple[int, int] | None,
) -> _Plan:
    out_h, out_w = oriented_size(height, width, orientation)
    if callable(roi):
        roi = roi(out_h, out_w)
    if roi is None:
        roi = (0, 0, out_h, out_w)
    else:
        roi = _validate_roi(roi, out_h, out_w)
    source_rect = rect_to_source(roi, height, width, orientation)
    numerator = 8
    if min_size is not None:
        min_h, min_w = min_size
        if orientation >= 5:
            min_h, min_w = min_w, min_h
        rect_h = source_rect[2] - source_rect[0]
        rect_w = source_rect[3] - source_rect[1]
        for candidate in _JPEG_SCALE_NUMERATORS:
            if rect_h * candidate >= 8 * min_h and rect_w * candidate >= 8 * min_w:
                numerator = candidate
                break
    return _Plan(source_rect, numerator)


def _validate_roi(roi: tuple[int, int, int, int], height: int, width: int) -> tuple[int, ...]:
    if len(roi) != 4:
        raise ValueError(f"roi must be (y0, x0, y1, x1), got {roi!r}")
    y0, x0, y1, x1 = (int(v) for v in roi)
    if not (0 <= y0 < y1 <= height and 0 <= x0 < x1 <= width):
        raise ValueError(
            f"roi (y0, x0, y1, x1) = {(y0, x0, y1, x1)} is empty or outside "
            f"the {height}x{width} (HxW) image"
        )
    return y0, x0, y1, x1


def _jpeg_target(out_type: str, colorspace: str) -> tuple[str, str]:
    """(TurboJPEG pixel format, layout of the pixels): libjpeg-turbo makes the output order."""
    if out_type == "GRAY" or (out_type == "ANY_DATA" and colorspace == "Gray"):
        return "GRAY", "L"
    if out_type == "BGR":
        return "BGR", "BGR"
    return "RGB", "RGB"


def _job_rect(job: DecodeJob) -> tuple[int, int, int, int]:
    """The rect of the scaled image a JPEG job decodes."""
    return _scaled_rect(job.plan.source_rect, job.plan.numerator)


def _decode_job(job: DecodeJob, checked: bool = False) -> None:
    """Decode the plan's rect of a JPEG job (or, through simplejpeg, all of it)."""
    if not checked:
        check_structure(job.buf)
    height, width, target, header = job.jpeg
    job.jpeg = None
    decoder = turbo.load()
    if decoder is None:
        job.pixels, numerator = _decode_simplejpeg(
            job.buf, height, width, target, job.plan.numerator
        )
        job.plan, job.origin, job.own = _Plan(job.plan.source_rect, numerator), (0, 0), True
        return
    rect = _job_rect(job)
    try:
        # exactly the rect, in an array of its own: nothing is copied after the decoder
        job.pixels = decoder.decode_region(
            np.frombuffer(job.buf, np.uint8), target, job.plan.numerator, rect, header
        )
    except ValueError as exc:
        raise DecodeError(f"jpeg: {exc}") from None
    job.origin, job.own = rect[:2], True


def _decode_simplejpeg(
    buf: memoryview, height: int, width: int, target: str, numerator: int
) -> tuple[np.ndarray, int]:
    min_h = -(-height * numerator // 8) if numerator < 8 else 0
    min_w = -(-width * numerator // 8) if numerator < 8 else 0
    try:
        image = simplejpeg.decode_jpeg(buf, colorspace=target, min_height=min_h, min_width=min_w)
    except Exception as exc:
        raise DecodeError(f"jpeg: {exc}") from None
    if numerator < 8:
        numerator = _actual_numerator(height, width, image.shape[0], image.shape[1])
    return image, numerator


def _actual_numerator(height: int, width: int, out_h: int, out_w: int) -> int:
    # libjpeg-turbo takes the smallest M/8 meeting the asked size; for tiny
    # images several M give the same size, and the smallest is the one used.
    for numerator in range(1, 9):
        if -(-height * numerator // 8) == out_h and -(-width * numerator // 8) == out_w:
            return numerator
    raise DecodeError(f"jpeg: unexpected scaled size {out_w}x{out_h} for {width}x{height}")


def _scaled_rect(source_rect: tuple[int, int, int, int], m: int) -> tuple[int, int, int, int]:
    # Grow the roi outward to whole pixels of the reduced image, so it is
    # never smaller than asked.
    y0, x0, y1, x1 = source_rect
    return y0 * m // 8, x0 * m // 8, -(-y1 * m // 8), -(-x1 * m // 8)


def _crop_scaled(
    native: np.ndarray, plan: _Plan, origin: tuple[int, int]
) -> tuple[np.ndarray, tuple[float, ...]]:
    """Cut the plan's rect out of `native` (which starts at `origin`) and locate the exact roi."""
    y0, x0, y1, x1 = plan.source_rect
    m = plan.numerator
    iy0, ix0, iy1, ix1 = _scaled_rect(plan.source_rect, m)
    oy, ox = origin
    crop = native[iy0 - oy : iy1 - oy, ix0 - ox : ix1 - ox]
    window = (y0 * m / 8 - iy0, x0 * m / 8 - ix0, y1 * m / 8 - iy0, x1 * m / 8 - ix0)
    return crop, window
