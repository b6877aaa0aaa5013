"""CPU decoding beside the GPU decoders: fallback samples, ROI clipping, output types.

What :class:`chute.gpu.jpeg.BatchDecoder` does on host threads: decode the samples no
GPU backend takes (OpenCV, then Pillow), stage them in pinned memory and upload them
on the batch's stream; and the "turbo" CPU share of a batch (:func:`decode_share`).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import numpy as np

from chute.gpu.codec_api import DeviceImage
from chute.gpu.runtime import device_empty

__all__ = [
    "clip_roi",
    "clip_rois",
    "decode_and_upload",
    "decode_cpu",
    "decode_share",
    "output_type_name",
    "pinned_buffer",
    "pinned_size",
    "shape_from_pil",
]

OUTPUT_TYPES = ("RGB", "BGR", "GRAY")


def output_type_name(output_type: Any) -> str:
    """ "RGB", "BGR" or "GRAY" from a types.DALIImageType or a string; ValueError otherwise."""
    name = str(getattr(output_type, "name", output_type)).upper()
    if name not in OUTPUT_TYPES:
        raise ValueError(
            f"output_type must be one of {', '.join(OUTPUT_TYPES)}; got {output_type!r}"
        )
    return name


def clip_roi(roi: Any, h: int, w: int) -> tuple[int, int, int, int] | None:
    """Return the ROI clipped to the image as (y0, x0, y1, x1), or None for the full image."""
    if roi is None:
        return None
    y, x, rh, rw = (round(float(v)) for v in roi)
    y0, x0, y1, x1 = max(y, 0), max(x, 0), min(y + rh, h), min(x + rw, w)
    if y1 <= y0 or x1 <= x0:
        raise ValueError(f"ROI {tuple(roi)} does not overlap the {h}x{w} image")
    return y0, x0, y1, x1


def clip_rois(
    shapes: np.ndarray, rois: Sequence[Any], windows: np.ndarray, errors: list[str | None]
) -> list[Any]:
    """:func:`clip_roi` for a whole batch of ROIs at once (``shapes`` (N, 2), 0 where unknown).

    Fills ``windows`` (N, 4: the ROI relative to its clipped region) and ``errors`` (an ROI
    that misses its image); returns the regions (None where there is none).
    """
    roi = np.asarray(rois, np.float64).reshape(-1, 4)
    y, x, rh, rw = np.rint(roi).astype(np.int64).T  # round() halves to even, as rint
    h, w = shapes[:, 0].astype(np.int64), shapes[:, 1].astype(np.int64)
    y0, x0 = np.maximum(y, 0), np.maximum(x, 0)
    y1, x1 = np.minimum(y + rh, h), np.minimum(x + rw, w)
    known = (h > 0) & (w > 0)
    empty = known & ((y1 <= y0) | (x1 <= x0))
    for i in np.flatnonzero(empty).tolist():
        errors[i] = f"ROI {tuple(rois[i])} does not overlap the {int(h[i])}x{int(w[i])} image"
    keep = known & ~empty
    windows[:, 0], windows[:, 1] = roi[:, 0] - y0, roi[:, 1] - x0
    windows[:, 2], windows[:, 3] = roi[:, 2], roi[:, 3]
    windows[~keep] = 0
    boxes = np.stack([y0, x0, y1, x1], axis=1).tolist()
    return [tuple(b) if k else None for b, k in zip(boxes, keep.tolist())]


def cheapest_on_cpu(
    shapes: np.ndarray, regions: Sequence[Any], idx: Sequence[int], n: int
) -> list[int]:
    """The ``n`` samples of ``idx`` whose CPU decode saves the GPU decoders most, in ``idx`` order.

    A region decode with libjpeg-turbo entropy-decodes every row down to the region's
    bottom (full width) and transforms only the region, so it costs about
    ``y1 * w + area`` pixel-steps, against ``2 * h * w`` for the whole image, which is
    what the hardware decoder spends whatever the region. The samples with the lowest
    ratio (small windows near the top) go to the CPU; ties keep the batch order.
    """
    if n <= 0:
        return []
    if n >= len(idx):
        return list(idx)
    rows = np.asarray(idx, np.int64)
    h = shapes[rows, 0].astype(np.float64)
    w = shapes[rows, 1].astype(np.float64)
    box = np.array(
        [regions[i] if regions[i] is not None else (0, 0, 0, 0) for i in idx], np.float64
    ).reshape(-1, 4)
    whole = np.array([regions[i] is None for i in idx])
    y0, x0, y1, x1 = box.T
    full = np.maximum(2.0 * h * w, 1.0)
    ratio = np.where(whole, 1.0, (y1 * w + (y1 - y0) * (x1 - x0)) / full)
    pick = np.sort(np.argsort(ratio, kind="stable")[:n])
    return rows[pick].tolist()


def decode_cpu(data: Any, roi: Any = None, output_type: str = "RGB") -> np.ndarray:
    """Decode one encoded image on the CPU (OpenCV, then Pillow) to HWC uint8, cropped to roi."""
    import cv2

    output_type = output_type_name(output_type)
    buf = np.frombuffer(memoryview(data), np.uint8) if not isinstance(data, np.ndarray) else data
    img = None
    try:
        flag = cv2.IMREAD_GRAYSCALE if output_type == "GRAY" else cv2.IMREAD_COLOR
        img = cv2.imdecode(buf, flag)
    except cv2.error:
        img = None
    if img is None:
        from PIL import Image, ImageOps

        with Image.open(io.BytesIO(buf.tobytes())) as pil:
            pil = ImageOps.exif_transpose(pil)
            img = np.asarray(pil.convert("L" if output_type == "GRAY" else "RGB"))
        if output_type == "BGR":
            img = img[..., ::-1]
    elif output_type == "RGB":
        img = img[..., ::-1]
    if img.ndim == 2:
        img = img[..., None]
    region = clip_roi(roi, img.shape[0], img.shape[1])
    if region is not None:
        y0, x0, y1, x1 = region
        img = img[y0:y1, x0:x1]
    return img


_MIN_PINNED = 1 << 16


def pinned_size(nbytes: int) -> int:
    """The size a pinned staging buffer of ``nbytes`` is allocated at: the next power of
    two, at least 64 KiB."""
    return max(_MIN_PINNED, 1 << max(0, nbytes - 1).bit_length())


def pinned_buffer(nbytes: int) -> np.ndarray:
    """``nbytes`` of pinned host memory (uint8) from CuPy's pinned pool.

    The pool hands a freed block only to a request of the same size, so staging
    buffers of a different size every batch (a CPU share's images, a fallback image)
    each went to cudaHostAlloc — slow, serialising, and every size kept by the pool
    afterwards. Sizes are rounded up to :func:`pinned_size`: a handful of sizes, reused.
    """
    import cupyx

    return cupyx.empty_pinned(pinned_size(nbytes), np.uint8)[:nbytes]


def decode_and_upload(
    cupy: Any,
    device_id: int,
    data: Any,
    roi: Any,
    out_type: str,
    stream: Any,
    decode: Any = None,
) -> tuple[Any, Any]:
    """Decode on this CPU thread, stage in pinned memory, upload asynchronously on stream.

    ``decode(data, roi, out_type)`` (default :func:`decode_cpu`) is the CPU decoder: the
    image operators pass chute's own, so that a file refused on the CPU is refused here.
    """

    img = (decode or decode_cpu)(data, roi, out_type)
    host = pinned_buffer(img.nbytes).reshape(img.shape)
    np.copyto(host, img)
    with cupy.cuda.Device(device_id):
        dev = cupy.empty(img.shape, np.uint8)
        dev.set(host, stream=stream)
    return dev, host


def shape_from_pil(data: Any) -> tuple[int, int]:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(bytes(memoryview(data)))) as im:
            return im.height, im.width
    except Exception:
        return 0, 0


_TURBO_FORMATS = {"RGB": 0, "BGR": 1}  # TurboJPEG's pixel formats


def _is_jpeg(data: Any) -> bool:
    try:
        view = memoryview(data).cast("B")
    except TypeError:  # a strided buffer: left to the per-sample path
        return False
    return view[:3].tobytes() == b"\xff\xd8\xff"


def decode_share(
    cupy: Any,
    parsed: Any,
    idx: list[int],
    out_type: str,
    stream: Any,
    cpu_regions: Any,
    threads: int,
) -> tuple[list[tuple[int, Any]], list[Any]]:
    """Samples ``idx`` of a parsed batch by ``cpu_regions`` into one pinned buffer, uploaded
    in one copy on ``stream`` (on the current device).

    JPEGs without EXIF orientation only, for RGB and BGR output; every other sample, and
    any the batch call did not decode, comes back None (decoded by the caller's per-sample
    CPU path, whose rules decide). Returns (index, image) pairs and the pinned buffer the
    upload reads.
    """
    fmt = _TURBO_FORMATS.get(out_type)
    out: dict[int, Any] = dict.fromkeys(idx)
    streams, regions = parsed.streams, parsed.regions
    take = []
    if fmt is not None and cpu_regions is not None:
        for i in idx:
            if streams.rotated[i] or streams.flipped[i] or not _is_jpeg(parsed.encoded[i]):
                continue
            region = regions[i]
            if region is None:
                y0, x0, (h, w) = 0, 0, streams.shapes[i].tolist()
            else:
                y0, x0, y1, x1 = region
                h, w = y1 - y0, x1 - x0
            if h > 0 and w > 0:
                take.append((i, y0, x0, h, w))
    if not take:
        return list(out.items()), []
    sizes = np.array([h * w * 3 for *_, h, w in take], np.int64)
    offsets = np.zeros(len(take) + 1, np.int64)
    np.cumsum((sizes + 255) // 256 * 256, out=offsets[1:])
    host = pinned_buffer(int(offsets[-1]))
    items = [
        (parsed.encoded[i], host[o : o + h * w * 3].reshape(h, w, 3), fmt, 8, y0, x0)
        for (i, y0, x0, h, w), o in zip(take, offsets.tolist())
    ]
    errors = cpu_regions(items, threads)
    device = device_empty(cupy, host.size, np.uint8)
    device.set(host, stream=stream)
    base = device.data.ptr
    for (i, _, _, h, w), o, error in zip(take, offsets.tolist(), errors):
        if error is None:
            out[i] = DeviceImage(device, base + o, (h, w, 3))
    return list(out.items()), [host]
