"""Batch image decoding to the GPU with nvImageCodec: hardware JPEG decoder, CUDA, CPU.

:class:`BatchDecoder` splits each batch into groups that decode at the same time, each
with its own nvImageCodec decoder and thread: the GPU's hardware JPEG engines where
present (A100, H100; share ``hw_decoder_load``), nvJPEG's CUDA decoder (the rest of the
GPU share) and, optionally, the CPU (``cpu_share``: libjpeg-turbo inside nvImageCodec or
OpenCV threads uploading from pinned memory), so that the CPU cores add to the GPU's
throughput. Samples that no GPU backend accepts (PNG, CMYK, corrupt data) are decoded
on the CPU too; a sample nothing can decode gets ``None`` and its reason in ``errors``,
the rest of the batch is unaffected.

Regions of interest (``rois``, ``(y, x, h, w)`` in pixels) are decoded by nvJPEG (the
hardware engines too, unless ``hw_roi=False``) and by nvImageCodec's libjpeg-turbo
without producing the rest of the image; the OpenCV path decodes and crops;
``DecodedBatch.windows`` says where each ROI lies in its image.
Output images are HWC ``uint8`` CuPy arrays ordered on the given CUDA stream.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from chute.gpu import nvjpeg_guard
from chute.gpu.codec_api import CodecDecoder, DeviceImage, StreamBatch, parse_batch
from chute.gpu.codec_setup import codec_options
from chute.gpu.cpu_decode import (
    cheapest_on_cpu,
    clip_roi,
    clip_rois,
    decode_and_upload,
    decode_cpu,
    decode_share,
    output_type_name,
    pinned_buffer,
    shape_from_pil,
)
from chute.gpu.runtime import device_empty, nvimgcodec_module, quick_gil_handoff, require_gpu
from chute.gpu.share_balance import ShareBalancer
from chute.runtime.tuning import DEFAULTS

__all__ = ["BatchDecoder", "DecodedBatch", "ParsedBatch", "decode_cpu"]

# Decoded images free their memory in the order of the stream they were decoded on, so
# that stream must outlive every image: each BatchDecoder decodes on a stream of its own
# that is kept here for the life of the process, and the caller's stream waits on it.
_DECODE_STREAMS: list[Any] = []


@dataclass
class ParsedBatch:
    """Encoded samples with their parsed code streams and image shapes."""

    encoded: list[Any]
    streams: StreamBatch  # handle 0 where the header did not parse
    shapes: np.ndarray  # (N, 2) int64 (height, width); 0 where unknown
    # filled when parse() was given ROIs, so that decode() finds the work done
    regions: list[Any] | None = None  # clipped (y0, x0, y1, x1) or None per sample
    windows: np.ndarray | None = None  # see DecodedBatch.windows
    errors: list[str | None] | None = None
    sub_streams: StreamBatch | None = None  # ROI code streams (or the whole stream)
    rois: list[Any] | None = None  # as requested, (y, x, h, w) or None per sample


@dataclass
class DecodedBatch:
    """Decoded images (HWC uint8 CuPy arrays or None), per-sample errors and windows.

    ``windows[i]`` is the requested ROI ``(y, x, h, w)`` in the coordinates of
    ``images[i]``: ``(0, 0, h, w)`` for an ROI decode (shifted where the ROI was clipped at
    the border), the ROI itself where the whole image was decoded (hardware group), ready
    for :func:`chute.gpu.kernels.resize_crop_mirror_normalize`. Keep the batch alive until
    the stream has run past the work that reads its images: it owns the host staging
    buffers of the CPU-decoded samples.
    """

    images: list[Any]
    errors: list[str | None]
    windows: np.ndarray
    sources: list[str]  # "hw", "cuda", "cpu" (cpu_share) or "fallback"; "" when failed
    keepalive: list[Any] = field(default_factory=list, repr=False)
    # (N, 3) int64 (height, width, channels) of each image; 0 where it failed
    shapes: np.ndarray | None = None


class BatchDecoder:
    """Decode batches of encoded images to the GPU (see the module docstring).

    Each batch is split into up to three groups decoded at the same time, each by its
    own nvImageCodec decoder on its own thread: ``cpu_share`` of the batch on the CPU
    (``cpu_backend`` "nvimgcodec": libjpeg-turbo inside nvImageCodec, ROI-aware; "turbo":
    the caller's libjpeg-turbo batch decoder (``decode``'s ``cpu_regions``: chute's CPU
    decoder, on ``cpu_threads`` native threads without the GIL, into one pinned buffer
    uploaded in one copy); or "opencv": ``cpu_decode`` per sample on our threads;
    ``cpu_share="auto"`` balances the share batch by batch from the groups' measured
    decode rates, chute.gpu.share_balance; ``cpu_pick="cost"`` gives the CPU the samples
    whose region decode is cheapest there against a whole decode on the GPU,
    chute.gpu.cpu_decode.cheapest_on_cpu, "order" the batch's first), then ``hw_decoder_load`` of
    the rest on the hardware JPEG decoder and the remainder on nvJPEG's CUDA decoder. Without a hardware decoder the
    hardware group falls through to the CUDA decoder. ``num_threads`` bounds the host
    threads of each GPU decoder (0: one per core), ``cpu_threads`` those of the CPU
    group. With ``hw_roi=False`` the hardware group decodes whole images and the
    windows locate the ROIs in them (on an H100 neither way was reliably faster: the
    runs differed by more than the two did). ``fancy_upsampling`` upsamples chroma as libjpeg does (closer to Pillow,
    slower). ``cuda_backend`` picks the non-hardware GPU group's first backend: "gpu"
    (nvJPEG's GPU Huffman decoding) or "hybrid" (Huffman on nvImageCodec's CPU threads,
    IDCT and color conversion on the GPU); ``hybrid_huffman_threshold`` is the pixel count
    above which that decoder does Huffman decoding on the GPU (None: nvImageCodec's 1,000,000;
    0 puts all of it on the GPU: on an H100, 17k img/s alone at ~0.6 ms of CPU per image,
    bench/README.md session 16). ``preallocate_batch_size`` and the width and
    height hints size the hardware decoder's resources when it is made (nvJPEG's batched
    pre-allocation; 0 leaves it to the first batches). ``allocator`` "async" gives the GPU
    decoders the CUDA driver's stream-ordered memory pool and DALI's paddings instead of
    nvJPEG's cudaMalloc / cudaFree (chute.gpu.codec_setup; opt-in, being measured).
    ``options`` is passed to nvImageCodec.
    ``switch_interval`` is the interpreter's switch interval once the decoder exists
    (Tuning.switch_interval; None leaves it).
    """

    def __init__(
        self,
        device_id: int = 0,
        *,
        hw_decoder_load: float = 0.9,
        use_hw_decoder: bool = True,
        cpu_share: float | str = 0.0,
        cpu_backend: str = "nvimgcodec",
        cpu_pick: str = "cost",
        hw_roi: bool = True,
        cpu_threads: int = 0,
        num_threads: int = 0,
        fancy_upsampling: bool = False,
        cuda_backend: str = "gpu",
        hybrid_huffman_threshold: int | None = None,
        preallocate_batch_size: int = 0,
        preallocate_width_hint: int = 0,
        preallocate_height_hint: int = 0,
        allocator: str = "default",
        options: str = "",
        switch_interval: float | None = DEFAULTS.switch_interval,
    ) -> None:
        self._cupy = require_gpu("BatchDecoder", codec=True, device_id=device_id)
        nvimgcodec_module()
        nvjpeg_guard.warn_once()  # another library's libnvjpeg keeps JPEGs off the GPU
        self._balancer = ShareBalancer() if cpu_share == "auto" else None
        if self._balancer is not None:
            if cpu_backend == "opencv":
                raise ValueError(
                    "cpu_share='auto' balances the 'nvimgcodec' and 'turbo' CPU groups"
                )
            cpu_share = self._balancer.share()
        elif isinstance(cpu_share, str):
            raise ValueError(f"cpu_share must be a number in [0, 1] or 'auto'; got {cpu_share!r}")
        if not 0.0 <= cpu_share <= 1.0 or not 0.0 <= hw_decoder_load <= 1.0:
            raise ValueError("cpu_share and hw_decoder_load must be in [0, 1]")
        if cuda_backend not in ("gpu", "hybrid"):
            raise ValueError(f"cuda_backend must be 'gpu' or 'hybrid'; got {cuda_backend!r}")
        if cpu_backend not in ("nvimgcodec", "opencv", "turbo"):
            raise ValueError(
                f"cpu_backend must be 'nvimgcodec', 'turbo' or 'opencv'; got {cpu_backend!r}"
            )
        if cpu_pick not in ("cost", "order"):
            raise ValueError(f"cpu_pick must be 'cost' or 'order'; got {cpu_pick!r}")
        self.device_id = device_id
        self.cpu_share = cpu_share
        self.cpu_pick = cpu_pick
        self.hw_decoder_load = hw_decoder_load if use_hw_decoder else 0.0
        self.cpu_backend = cpu_backend
        self.cpu_threads = cpu_threads or min(16, os.cpu_count() or 4)  # the "turbo" group's
        self.hw_roi = hw_roi
        opts = codec_options(
            fancy_upsampling,
            options,
            hybrid_huffman_threshold=hybrid_huffman_threshold,
            preallocate_batch_size=preallocate_batch_size,
            preallocate_width_hint=preallocate_width_hint,
            preallocate_height_hint=preallocate_height_hint,
        )

        def make(backend_kinds: list[str], threads: int) -> CodecDecoder:
            backends = [(k, 1.0) for k in backend_kinds]
            return CodecDecoder(
                device_id,
                backends,
                threads,
                opts,
                host=backend_kinds == ["cpu"],
                allocator=allocator,
            )

        # "hybrid": Huffman decoding on CPU threads, the rest on the GPU (what suits
        # ImageNet-sized images); "gpu": Huffman decoding on the GPU too
        cuda = ["gpu", "hybrid"]
        if cuda_backend == "hybrid":
            cuda.reverse()
        # group name -> (decoder, the thread that runs its decode calls). A decoder serves
        # one call at a time, and a thread that does nothing else takes the GIL back
        # soonest when a call returns (see chute.gpu.runtime.quick_gil_handoff).
        self._groups: dict[str, tuple[Any, ThreadPoolExecutor]] = {}
        kinds = {"hw": ["hw", *cuda], "cuda": cuda, "cpu": ["cpu"]}
        wanted = {
            "hw": self.hw_decoder_load > 0,
            "cuda": self.hw_decoder_load < 1,
            "cpu": cpu_share > 0 and cpu_backend == "nvimgcodec",
        }
        for name in (k for k, on in wanted.items() if on):
            threads = cpu_threads if name == "cpu" else num_threads
            runner = ThreadPoolExecutor(1, thread_name_prefix=f"chute-decode-{name}")
            self._groups[name] = (make(kinds[name], threads), runner)
        quick_gil_handoff(switch_interval)
        workers = (
            cpu_threads or (os.cpu_count() or 4) if cpu_share > 0 and cpu_backend == "opencv" else 2
        )
        # OpenCV share and the per-sample fallback; the group threads only wait on nvImageCodec
        self._pool = ThreadPoolExecutor(workers, thread_name_prefix="chute-jpeg-cpu")
        # the groups after a lane's first (cuda, the CPU share) wait here: two or three lanes
        # share one decoder (Tuning.max_decoders), and a group queued behind another lane's
        # CPU share would hold its lane's next hardware decode back
        self._group_pool = ThreadPoolExecutor(8, thread_name_prefix="chute-jpeg-group")
        with self._cupy.cuda.Device(device_id):
            self._stream = self._cupy.cuda.Stream(non_blocking=True)
        _DECODE_STREAMS.append(self._stream)

    def _pools(self) -> list[ThreadPoolExecutor]:
        groups = getattr(self, "_groups", {})
        pools = [getattr(self, "_group_pool", None), getattr(self, "_pool", None)]
        return [p for p in pools if p is not None] + [runner for _, runner in groups.values()]

    def close(self) -> None:
        """Release the worker threads (the nvImageCodec decoders go with the object)."""
        for pool in self._pools():
            pool.shutdown(wait=True)

    def __del__(self) -> None:
        # join the threads that used the decoders before the decoders are destroyed
        for pool in self._pools():
            with contextlib.suppress(RuntimeError):  # collected on one of its own threads
                pool.shutdown(wait=True)

    def parse(self, encoded: Sequence[Any], rois: Sequence[Any] | None = None) -> ParsedBatch:
        """Parse the headers of a batch: code streams and (height, width) per sample.

        With ``rois``, also clip them to the images and prepare the ROI code streams, so
        that this host work can run on another thread than :meth:`decode`.
        """
        streams = parse_batch(encoded)
        shapes = streams.shapes.copy()
        for i in np.flatnonzero(streams.handles == 0).tolist():
            shapes[i] = shape_from_pil(encoded[i])
        parsed = ParsedBatch(list(encoded), streams, shapes)
        if rois is not None:
            self.prepare(parsed, rois)
        return parsed

    def prepare(self, parsed: ParsedBatch, rois: Sequence[Any] | None) -> None:
        """Clip the ROIs, compute the windows and build the ROI code streams of a batch.

        Host work that :meth:`decode` does itself when not done ahead (e.g. on a thread
        that also draws the random crop windows from the parsed shapes).
        """
        n = len(parsed.encoded)
        if rois is not None and len(rois) != n:
            raise ValueError(f"got {len(rois)} ROIs for {n} samples")
        errors: list[str | None] = [None] * n
        windows = np.zeros((n, 4), np.float32)
        if rois is not None and n and all(r is not None for r in rois):
            regions = clip_rois(parsed.shapes, rois, windows, errors)
        else:
            regions = []
            for i in range(n):
                h, w = (int(v) for v in parsed.shapes[i])
                roi = None if rois is None else rois[i]
                region = None
                try:
                    region = clip_roi(roi, h, w) if h and w else None
                except ValueError as e:
                    errors[i] = str(e)
                regions.append(region)
                if region is not None:
                    ry, rx, rh, rw = (float(v) for v in roi)
                    windows[i] = (ry - region[0], rx - region[1], rh, rw)
        subs = parsed.streams.sub_streams(regions)
        parsed.rois = None if rois is None else list(rois)
        parsed.regions, parsed.windows, parsed.errors, parsed.sub_streams = (
            regions,
            windows,
            errors,
            subs,
        )

    def split(self, n: int) -> dict[str, int]:
        """Return how many of ``n`` samples each group (cpu, hw, cuda) decodes."""
        share = self._balancer.share() if self._balancer is not None else self.cpu_share
        n_cpu = round(share * n)
        n_hw = round(self.hw_decoder_load * (n - n_cpu)) if "hw" in self._groups else 0
        return {"cpu": n_cpu, "hw": n_hw, "cuda": n - n_cpu - n_hw}

    def decode(
        self,
        batch: Sequence[Any] | ParsedBatch,
        rois: Sequence[Any] | None = None,
        output_type: Any = "RGB",
        stream: Any = None,
        as_cupy: bool = True,
        on_stream: bool = False,
        reject: dict[int, str] | None = None,
        cpu_decode: Any = None,
        cpu_regions: Any = None,
    ) -> DecodedBatch:
        """Decode a batch (encoded bytes or a ParsedBatch), each sample cropped to its ROI.

        With ``as_cupy=False`` the GPU-decoded images stay :class:`DeviceImage` views of
        the batch's buffer (``__cuda_array_interface__``), which the kernels in
        :mod:`chute.gpu.kernels` take as they are: this saves ~15 us per sample.
        With ``on_stream=True`` the decoders work on ``stream`` itself instead of this
        decoder's own stream (no event hand-off; two decoders given two streams overlap);
        the caller then keeps ``stream`` alive as long as any image, since image memory
        is freed in its order. ``reject`` maps samples the caller refused (after
        :meth:`parse`: a structure fault, a size above its pixel limit) to the reason: they
        are neither decoded nor allocated for. ``cpu_decode(data, roi, out_type)`` decodes
        the samples no GPU backend takes (default: OpenCV, then Pillow).
        ``cpu_regions(items, threads)`` is the "turbo" CPU group's decoder: items
        ``(data, out, pixel_format, 8, y0, x0)`` (chute.runtime._native.jpeg_decode_batch's),
        per item None or the reason it was not decoded (that sample then goes to
        ``cpu_decode``); without it the group's samples go to ``cpu_decode``.
        """
        cupy = self._cupy
        out_type = output_type_name(output_type)
        parsed = batch if isinstance(batch, ParsedBatch) else self.parse(batch)
        if parsed.regions is None or rois is not None:
            self.prepare(parsed, rois)
        n = len(parsed.encoded)
        regions = parsed.regions
        with cupy.cuda.Device(self.device_id):
            user_stream = stream or cupy.cuda.get_current_stream()
            if not (on_stream and stream is not None):
                stream = self._stream
            result = DecodedBatch([None] * n, list(parsed.errors), parsed.windows.copy(), [""] * n)
            for i, why in (reject or {}).items():
                result.errors[i] = why
            shapes = result.shapes = np.zeros((n, 3), np.int64)

            parsed_ok = (parsed.streams.handles != 0).tolist()
            todo = [i for i in range(n) if result.errors[i] is None and parsed_ok[i]]
            fallback = [i for i in range(n) if result.errors[i] is None and not parsed_ok[i]]
            counts = self.split(len(todo))
            if counts["cpu"] and self.cpu_pick == "cost" and regions is not None:
                cpu = cheapest_on_cpu(parsed.shapes, regions, todo, counts["cpu"])
                taken = set(cpu)
                rest = [i for i in todo if i not in taken]
            else:
                cpu, rest = todo[: counts["cpu"]], todo[counts["cpu"] :]
            groups = {"cpu": cpu, "hw": rest[: counts["hw"]], "cuda": rest[counts["hw"] :]}
            futures: dict[int, Future] = {}
            if self.cpu_backend == "opencv":
                for i in groups.pop("cpu"):
                    futures[i] = self._submit_cpu(
                        parsed.encoded[i], regions[i], out_type, stream, cpu_decode
                    )
            turbo = groups.pop("cpu") if self.cpu_backend == "turbo" else []
            named = [(name, idx) for name, idx in groups.items() if idx]
            # every group but the first runs on a pool thread; the first on this one
            jobs = (
                [
                    (
                        "cpu",
                        self._group_pool.submit(
                            self._decode_turbo, parsed, turbo, out_type, stream, cpu_regions
                        ),
                    )
                ]
                if turbo
                else []
            )
            jobs += [
                (
                    name,
                    self._group_pool.submit(
                        self._decode_group, name, parsed, idx, out_type, stream
                    ),
                )
                for name, idx in named[1:]
            ]
            try:
                done = [
                    (g, self._decode_group(g, parsed, idx, out_type, stream))
                    for g, idx in named[:1]
                ]
                done += [(name, job.result()) for name, job in jobs]
            finally:
                wait([job for _, job in jobs])  # never leave a decoder busy behind an error
            for name, (decoded, keep) in done:
                result.keepalive.extend(keep)
                for i, img in decoded:
                    if img is None:
                        fallback.append(i)
                        continue
                    shapes[i] = img.shape
                    if as_cupy:
                        img = cupy.asarray(img)
                    result.images[i] = img
                    result.sources[i] = name
                    if name == "hw" and not self.hw_roi and regions[i] is not None:
                        # a whole image: the window is the ROI in image coordinates
                        result.windows[i] = tuple(float(v) for v in parsed.rois[i])
            futures.update(
                {
                    i: self._submit_cpu(parsed.encoded[i], regions[i], out_type, stream, cpu_decode)
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
                shapes[i] = img.shape
                result.keepalive.append(host)
                result.sources[i] = "fallback" if i in fallback_set else "cpu"
            if stream is not user_stream:
                done_event = cupy.cuda.Event(disable_timing=True)
                done_event.record(stream)
                user_stream.wait_event(done_event)
            for i, img in enumerate(result.images):
                if img is not None and regions[i] is None:
                    result.windows[i] = (0, 0, shapes[i, 0], shapes[i, 1])  # after EXIF rotation
        return result

    def _decode_group(
        self,
        name: str,
        parsed: ParsedBatch,
        idx: list[int],
        out_type: str,
        stream: Any,
    ) -> tuple[list[tuple[int, Any]], list[Any]]:
        """Decode samples ``idx`` with the group's decoder into one buffer; None where rejected.

        Returns the (index, image) pairs and what must live as long as the images' use on
        ``stream``: the CPU group decodes into pinned memory, uploaded in one copy.
        """
        decoder, runner = self._groups[name]
        whole = name == "hw" and not self.hw_roi
        streams = parsed.streams if whole else parsed.sub_streams
        cupy = self._cupy
        on_host = name == "cpu"

        def allocate(nbytes: int) -> Any:
            if on_host:
                return pinned_buffer(nbytes)
            with cupy.cuda.Device(self.device_id), stream:
                return device_empty(cupy, nbytes, np.uint8)

        # Only the decode itself runs on the decoder's thread: describing the images before
        # and freeing the descriptions after overlap with another lane's decode.
        job = decoder.prepare(streams, idx, out_type, allocate, stream.ptr)
        statuses = None
        running = runner.submit(_timed, decoder.run, job)
        try:
            statuses, seconds = running.result()
            if self._balancer is not None:  # the decode call's own time, queueing excluded
                self._balancer.record(name, len(idx), seconds)
        finally:
            wait([running])  # never free the descriptions under a running decode
            images, buffer = decoder.finish(job, statuses)
        keep: list[Any] = []
        if on_host and buffer is not None:
            with cupy.cuda.Device(self.device_id):
                device = device_empty(cupy, buffer.size, np.uint8)
                device.set(buffer, stream=stream)
            shift = device.data.ptr - buffer.ctypes.data
            images = [
                None if img is None else DeviceImage(device, img.ptr + shift, img.shape)
                for img in images
            ]
            keep.append(buffer)  # pinned memory read by the copy
        return list(zip(idx, images)), keep

    def _decode_turbo(
        self, parsed: ParsedBatch, idx: list[int], out_type: str, stream: Any, cpu_regions: Any
    ) -> tuple[list[tuple[int, Any]], list[Any]]:
        """The "turbo" CPU group (chute.gpu.cpu_decode.decode_share), its time recorded."""
        start = time.perf_counter()
        with self._cupy.cuda.Device(self.device_id):
            out = decode_share(
                self._cupy, parsed, idx, out_type, stream, cpu_regions, self.cpu_threads
            )
        if self._balancer is not None:
            self._balancer.record("cpu", len(idx), time.perf_counter() - start)
        return out

    def _submit_cpu(
        self, data: Any, region: Any, out_type: str, stream: Any, decode: Any = None
    ) -> Future:
        roi = (
            None
            if region is None
            else (region[0], region[1], region[2] - region[0], region[3] - region[1])
        )
        return self._pool.submit(
            decode_and_upload,
            self._cupy,
            self.device_id,
            data,
            roi,
            out_type,
            stream,
            decode,
        )


def _timed(call: Any, *args: Any) -> tuple[Any, float]:
    """``call(*args)`` and the seconds it took (on the decoder's own thread)."""
    start = time.perf_counter()
    out = call(*args)
    return out, time.perf_counter() - start
