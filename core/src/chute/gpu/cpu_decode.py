"""CPU decoding beside the GPU decoders: fallback samples, ROI clipping, output types.

What :class:`chute.gpu.jpeg.BatchDecoder` does on host threads: decode the samples no
GPU backend takes (OpenCV, then Pillow), stage them in pinned memory and upload them
on the batch's stream.
"""

from __future__ import annotations

import io
from typing import Any

import numpy as np

__all__ = ["clip_roi", "decode_and_upload", "decode_cpu", "output_type_name", "shape_from_pil"]

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
    import cupyx

    img = (decode or decode_cpu)(data, roi, out_type)
    host = cupyx.empty_pinned(img.shape, np.uint8)
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
