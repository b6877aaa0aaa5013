"""GPU backend of fn.readers.video_resize: frames decoded on the CPU, resized on the GPU.

The reader's decode threads decode each sequence with PyAV, as on the CPU; then the
frames of the whole batch are uploaded (one copy per sequence, into one buffer where
the sequences' frames share a size) and resized in one
launch of the batched resampling kernel that fn.resize's GPU backend uses
(chute.gpu.kernels.resize_batch), with fn.resize's size rules
(chute.ops.geometry.resize_gpu.output_sizes). Every output is on the GPU.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.gpu.kernels import resize_batch
from chute.gpu.runtime import require_gpu
from chute.graph.node import OpNode
from chute.ops.geometry.resize_gpu import output_sizes
from chute.ops.geometry.resize_ops import size_kwargs
from chute.ops.video.reader import VideoSource
from chute.runtime.limits import check_output
from chute.runtime.operator import ArgView
from chute.types import to_dtype

__all__ = ["GpuFrameResize", "GpuVideoResizeSource"]

_INTERP = {"nn": "nn", "linear": "linear", "cubic": "cubic"}  # others: linear, as fn.resize


class GpuFrameResize:
    """Resizes every frame of a batch of FHWC sequences on the GPU, in one kernel launch."""

    def __init__(self, node: OpNode, device_id: int):
        self.cp = require_gpu(f"{node.label}(device='gpu')", device_id=device_id)
        self.device_id = device_id
        with self.cp.cuda.Device(device_id):
            self.stream = self.cp.cuda.Stream(non_blocking=True)
        args = ArgView(node.schema, node.args, {})
        self.size = size_kwargs(args)
        self.interp = _INTERP.get(str(args["interp_type"] or "linear"), "linear")
        self.antialias = bool(args["antialias"])
        self.dtype = to_dtype(args["dtype"]) if args["dtype"] is not None else None
        self.roi = (args["roi_start"], args["roi_end"], bool(args["roi_relative"]))

    def _window(self, h: int, w: int) -> tuple[float, float, float, float]:
        """The (y, x, h, w) region of a frame that is resized (the whole frame without a ROI)."""
        start, end, relative = self.roi
        if start is None:
            return (0.0, 0.0, float(h), float(w))
        if relative:
            start, end = (start[0] * h, start[1] * w), (end[0] * h, end[1] * w)
        return (start[0], start[1], end[0] - start[0], end[1] - start[1])

    def __call__(self, videos: list[np.ndarray]) -> list[Any]:
        """The sequences resized, as device arrays (F, h, w, C) in the order given."""
        cp = self.cp
        full = [k for k, v in enumerate(videos) if v.ndim == 4 and min(v.shape[:3]) > 0]
        skipped = set(range(len(videos))) - set(full)
        out: list[Any] = [None] * len(videos)
        with cp.cuda.Device(self.device_id), self.stream:
            for k, v in enumerate(videos):
                if k in skipped:  # a skipped sample's empty placeholder
                    out[k] = cp.asarray(v.astype(self.dtype or v.dtype, copy=False))
            if full:
                self._resize(videos, full, out)
        self.stream.synchronize()
        return out

    def _resize(self, videos: list[np.ndarray], full: list[int], out: list[Any]) -> None:
        cp = self.cp
        host = [np.ascontiguousarray(videos[k]) for k in full]
        counts = [int(v.shape[0]) for v in host]
        if len({v.shape[1:] for v in host}) == 1:  # one (frames, H, W, C) buffer, filled in place
            frames = cp.empty((sum(counts), *host[0].shape[1:]), host[0].dtype)
            first = 0
            for v, n in zip(host, counts):
                frames[first : first + n].set(v, stream=self.stream)
                first += n
        else:  # frames of different sizes: the kernel takes a list of HWC views
            uploads = [cp.asarray(v) for v in host]
            frames = [frame for u in uploads for frame in u]
        hw = np.array([v.shape[1:3] for v in host], np.int64)
        sizes = output_sizes(hw, self.size)  # one size per sequence: its frames share it
        channels = int(host[0].shape[3])
        dtype = self.dtype or np.dtype(host[0].dtype)
        for k, size in zip(full, sizes.tolist()):
            try:  # each frame within the output limit, before the batch is allocated
                check_output((*size, channels), dtype, "size")
            except ValueError as exc:
                raise ValueError(f"sample {k}: {exc}") from None
        frame_sizes = np.repeat(sizes, counts, axis=0)
        windows = None
        if self.roi[0] is not None:
            windows = np.array(
                [self._window(int(h), int(w)) for (h, w), n in zip(hw, counts) for _ in range(n)],
                np.float32,
            )
        uniform = bool(np.all(sizes == sizes[0]))
        resized = resize_batch(
            frames,
            tuple(int(v) for v in sizes[0]) if uniform else frame_sizes,
            interp=self.interp,
            antialias=self.antialias,
            windows=windows,
            dtype=dtype,
            stream=self.stream,
        )
        first = 0
        for k, size, n in zip(full, sizes.tolist(), counts):
            if uniform:  # a dense (frames, h, w, C) array: each sequence is a slice
                out[k] = resized[first : first + n]
            else:  # one buffer, the frames of a sequence one after the other
                out[k] = cp.ndarray((n, *size, channels), dtype, memptr=resized[first].data)
            first += n

    def upload(self, samples: list[np.ndarray]) -> list[Any]:
        """Host samples (labels, frame numbers, timestamps) on the GPU."""
        cp = self.cp
        with cp.cuda.Device(self.device_id), self.stream:
            moved = [cp.asarray(s) for s in samples]
        self.stream.synchronize()
        return moved


class GpuVideoResizeSource(VideoSource):
    """The video reader decoding on the CPU and resizing each batch's frames on the GPU."""

    def __init__(self, *args: Any, device_id: int = 0, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.resizer = GpuFrameResize(self.node, device_id)

    def next_batch(self, batch_size: int, epoch: int, iteration: int):
        outputs, meta = super().next_batch(batch_size, epoch, iteration)
        moved = []
        for name, samples in zip(self.outputs, outputs):
            moved.append(self.resizer(samples) if name == "video" else self.resizer.upload(samples))
        return moved, meta
