"""Batch image decoding to the GPU with nvImageCodec: hardware JPEG decoder, CUDA, CPU.

:class:`BatchDecoder` hands a whole batch to nvImageCodec, which sends a share
(``hw_decoder_load``) to the GPU's hardware JPEG engines where present (A100, H100)
and the rest to nvJPEG's CUDA decoder. Optionally a share of the batch (``cpu_share``)
is decoded at the same time by ``cpu_workers`` threads with OpenCV (libjpeg-turbo) and
uploaded from pinned memory, so that the CPU cores add to the GPU's throughput.
Samples that no GPU backend accepts (PNG, CMYK, corrupt data) are decoded on the CPU
too; a sample nothing can decode gets ``None`` and its reason in ``errors``, the rest
of the batch is unaffected.

Regions of interest (``rois``, ``(y, x, h, w)`` in pixels) are decoded by nvJPEG
without producing the rest of the image; the CPU path decodes the whole image and
crops. Output images are HWC ``uint8`` CuPy arrays ordered on the given CUDA stream.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chute.gpu.runtime import nvimgcodec_module, require_gpu

__all__ = ["BatchDecoder", "DecodedBatch", "ParsedBatch", "decode_batch", "decode_cpu"]

_OUTPUT_TYPES = ("RGB", "BGR", "GRAY")


@dataclass
class ParsedBatch:
    """Encoded samples with their parsed nvImageCodec code streams and image shapes."""

    encoded: list[Any]
    streams: list[Any]  # nvimgcodec.CodeStream, or None where the header did not parse
    shapes: np.ndarray  # (N, 2) int64 (height, width); 0 where unknown


@dataclass
class DecodedBatch:
    """Decoded images (HWC uint8 CuPy arrays or None), per-sample errors and windows.

    ``windows[i]`` is the requested ROI ``(y, x, h, w)`` in the coordinates of
    ``images[i]`` (``(0, 0, h, w)`` unless the ROI was clipped at the image border), ready
    for :func:`chute.gpu.kernels.resize_crop_mirror_normalize`. Keep the batch alive until
    the stream has run past the work that reads its images: it owns the host staging
    buffers of the CPU-decoded samples.
    """

    images: list[Any]
    errors: list[str | None]
    windows: np.ndarray
    sources: list[str]  # "gpu", "cpu" (cpu_share) or "fallback"; "" when failed
    keepalive: list[Any] = field(default_factory=list, repr=False)


def _output_type(output_type: Any) -> str:
    name = str(getattr(output_type, "name", output_type)).upper()
    if name not in _OUTPUT_TYPES:
        raise ValueError(
            f"output_type must be one of {', '.join(_OUTPUT_TYPES)}; got {output_type!r}"
        )
    return name


def _clip_roi(roi: Any, h: int, w: int) -> tuple[int, int, int, int] | None:
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

    output_type = _output_type(output_type)
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
    region = _clip_roi(roi, img.shape[0], img.shape[1])
    if region is not None:
        y0, x0, y1, x1 = region
        img = img[y0:y1, x0:x1]
    return img


class BatchDecoder:
    """Decode batches of encoded images to the GPU (see the module docstring).

    ``hw_decoder_load`` is the share of the GPU part that goes to the hardware JPEG
    decoder (the rest to nvJPEG's CUDA decoder); ``cpu_share`` of each batch goes to
    ``cpu_workers`` OpenCV threads instead; ``num_threads`` bounds nvImageCodec's own
    host threads (0: one per core). ``fancy_upsampling`` makes nvJPEG upsample chroma as
    libjpeg does (closer to Pillow, slower). ``options`` is passed to nvImageCodec.
    """

    def __init__(
        self,
        device_id: int = 0,
        *,
        hw_decoder_load: float = 0.9,
        use_hw_decoder: bool = True,
        use_cuda_decoder: bool = True,
        cpu_share: float = 0.0,
        cpu_workers: int = 0,
        num_threads: int = 0,
        fancy_upsampling: bool = False,
        options: str = "",
    ) -> None:
        self._cupy = require_gpu("BatchDecoder", codec=True, device_id=device_id)
        nv = nvimgcodec_module()
        if not 0.0 <= cpu_share <= 1.0 or not 0.0 <= hw_decoder_load <= 1.0:
            raise ValueError("cpu_share and hw_decoder_load must be in [0, 1]")
        if cpu_share > 0 and cpu_workers <= 0:
            raise ValueError("cpu_share > 0 needs cpu_workers > 0")
        self.device_id = device_id
        self.cpu_share = cpu_share
        backends = []
        if use_hw_decoder:
            backends.append(nv.Backend(nv.BackendKind.HW_GPU_ONLY, load_hint=hw_decoder_load))
        if use_cuda_decoder:
            backends.append(nv.Backend(nv.BackendKind.GPU_ONLY, load_hint=1.0))
            backends.append(nv.Backend(nv.BackendKind.HYBRID_CPU_GPU, load_hint=1.0))
        if not backends:
            raise ValueError("enable at least one of use_hw_decoder, use_cuda_decoder")
        opts = " ".join(
            x for x in (":fancy_upsampling=1" if fancy_upsampling else "", options) if x
        )
        self._decoder = nv.Decoder(
            device_id=device_id, max_num_cpu_threads=num_threads, backends=backends, options=opts
        )
        self._params = {
            "RGB": nv.DecodeParams(
                color_spec=nv.ColorSpec.SRGB, sample_format=nv.SampleFormat.I_RGB
            ),
            "BGR": nv.DecodeParams(
                color_spec=nv.ColorSpec.SRGB, sample_format=nv.SampleFormat.I_BGR
            ),
            "GRAY": nv.DecodeParams(
                color_spec=nv.ColorSpec.GRAY, sample_format=nv.SampleFormat.I_Y
            ),
        }
        self._nv = nv
        # the CPU share and the fallback share one pool; fallback alone needs few threads
        self._pool = ThreadPoolExecutor(max(cpu_workers, 2), thread_name_prefix="chute-jpeg-cpu")
        self._lock = threading.Lock()

    def close(self) -> None:
        """Release the worker threads (the nvImageCodec decoder goes with the object)."""
        self._pool.shutdown(wait=True)

    def parse(self, encoded: Sequence[Any]) -> ParsedBatch:
        """Parse the headers of a batch: code streams and (height, width) per sample."""
        streams: list[Any] = []
        shapes = np.zeros((len(encoded), 2), np.int64)
        for i, data in enumerate(encoded):
            try:
                cs = self._nv.CodeStream(data)
                shapes[i] = cs.height, cs.width
            except Exception:
                cs = None
                shapes[i] = _shape_from_pil(data)
            streams.append(cs)
        return ParsedBatch(list(encoded), streams, shapes)

    def decode(
        self,
        batch: Sequence[Any] | ParsedBatch,
        rois: Sequence[Any] | None = None,
        output_type: Any = "RGB",
        stream: Any = None,
    ) -> DecodedBatch:
        """Decode a batch (encoded bytes or a ParsedBatch), each sample cropped to its ROI."""
        cupy = self._cupy
        out_type = _output_type(output_type)
        parsed = batch if isinstance(batch, ParsedBatch) else self.parse(batch)
        n = len(parsed.encoded)
        if rois is not None and len(rois) != n:
            raise ValueError(f"got {len(rois)} ROIs for {n} samples")
        with cupy.cuda.Device(self.device_id):
            stream = stream or cupy.cuda.get_current_stream()
            result = DecodedBatch([None] * n, [None] * n, np.zeros((n, 4), np.float32), [""] * n)
            regions: list[tuple[int, int, int, int] | None] = []
            for i in range(n):
                h, w = (int(v) for v in parsed.shapes[i])
                roi = None if rois is None else rois[i]
                region = None
                try:
                    region = _clip_roi(roi, h, w) if h and w else None
                except ValueError as e:
                    result.errors[i] = str(e)
                regions.append(region)
                if region is not None:
                    ry, rx, rh, rw = (float(v) for v in roi)
                    result.windows[i] = (ry - region[0], rx - region[1], rh, rw)

            todo = [i for i in range(n) if result.errors[i] is None]
            n_cpu = round(self.cpu_share * len(todo))
            cpu_idx = todo[len(todo) - n_cpu :] if n_cpu else []
            gpu_idx = [i for i in todo[: len(todo) - n_cpu] if parsed.streams[i] is not None]
            fallback = [i for i in todo[: len(todo) - n_cpu] if parsed.streams[i] is None]
            futures = {
                i: self._submit_cpu(parsed.encoded[i], regions[i], out_type, stream)
                for i in cpu_idx
            }

            fallback += self._decode_gpu(parsed, gpu_idx, regions, out_type, stream, result)
            futures.update(
                {
                    i: self._submit_cpu(parsed.encoded[i], regions[i], out_type, stream)
                    for i in fallback
                }
            )
            fallback_set = set(fallback)
            for i, fut in futures.items():
                try:
                    img, host = fut.result()
                except Exception as e:  # a sample nothing can decode: report, keep the batch
                    result.errors[i] = f"{type(e).__name__}: {e}"
                    continue
                result.images[i] = img
                result.keepalive.append(host)
                result.sources[i] = "fallback" if i in fallback_set else "cpu"
            for i, img in enumerate(result.images):
                if img is not None and regions[i] is None:
                    result.windows[i] = (0, 0, img.shape[0], img.shape[1])
        return result

    def _decode_gpu(
        self,
        parsed: ParsedBatch,
        idx: list[int],
        regions: list[Any],
        out_type: str,
        stream: Any,
        result: DecodedBatch,
    ) -> list[int]:
        """Decode samples ``idx`` with nvImageCodec into ``result``; return the rejected ones."""
        if not idx:
            return []
        nv, cupy = self._nv, self._cupy
        srcs = []
        for i in idx:
            cs, region = parsed.streams[i], regions[i]
            srcs.append(cs if region is None else cs.get_sub_code_stream(region=nv.Region(*region)))
        params = self._params[out_type]
        with self._lock:
            try:
                images = self._decoder.decode(srcs, params=params, cuda_stream=stream.ptr)
            except Exception:
                # one bad stream can fail the whole call: retry one by one to isolate it
                images = []
                for src in srcs:
                    try:
                        images.append(
                            self._decoder.decode(src, params=params, cuda_stream=stream.ptr)
                        )
                    except Exception:
                        images.append(None)
        rejected = []
        with stream:
            for i, img in zip(idx, images):
                if img is None:
                    rejected.append(i)
                    continue
                arr = cupy.from_dlpack(img)
                result.images[i] = arr if arr.ndim == 3 else arr[..., None]
                result.sources[i] = "gpu"
        return rejected

    def _submit_cpu(self, data: Any, region: Any, out_type: str, stream: Any) -> Future:
        roi = (
            None
            if region is None
            else (region[0], region[1], region[2] - region[0], region[3] - region[1])
        )
        return self._pool.submit(
            _decode_and_upload, self._cupy, self.device_id, data, roi, out_type, stream
        )


def _decode_and_upload(
    cupy: Any, device_id: int, data: Any, roi: Any, out_type: str, stream: Any
) -> tuple[Any, Any]:
    """Decode on this CPU thread, stage in pinned memory, upload asynchronously on stream."""
    import cupyx

    img = decode_cpu(data, roi, out_type)
    host = cupyx.empty_pinned(img.shape, np.uint8)
    np.copyto(host, img)
    with cupy.cuda.Device(device_id):
        dev = cupy.empty(img.shape, np.uint8)
        dev.set(host, stream=stream)
    return dev, host


def _shape_from_pil(data: Any) -> tuple[int, int]:
    from PIL import Image

    try:
        with Image.open(io.BytesIO(bytes(memoryview(data)))) as im:
            return im.height, im.width
    except Exception:
        return 0, 0


_decoders: dict[tuple, BatchDecoder] = {}
_decoders_lock = threading.Lock()


def decode_batch(
    encoded: Sequence[Any],
    rois: Sequence[Any] | None = None,
    output_type: Any = "RGB",
    device_id: int = 0,
    stream: Any = None,
    hw_decoder_load: float = 0.9,
) -> DecodedBatch:
    """Decode a batch with a cached :class:`BatchDecoder` for (device_id, hw_decoder_load)."""
    key = (device_id, hw_decoder_load)
    with _decoders_lock:
        decoder = _decoders.get(key)
        if decoder is None:
            decoder = _decoders[key] = BatchDecoder(device_id, hw_decoder_load=hw_decoder_load)
    return decoder.decode(encoded, rois, output_type, stream)
