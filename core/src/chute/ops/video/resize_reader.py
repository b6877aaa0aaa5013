"""fn.readers.video_resize: the video reader whose frames come out resized, as fn.resize would.

Every argument of ``fn.readers.video`` and every argument of ``fn.resize`` (as
constants): each decoded frame of a sequence is resized with the resize operator's
CPU kernel (the same size rules, regions and filters), on the reader's decode threads.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import NO_HINTS, NodeHints
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.geometry import resize_kernels
from chute.ops.geometry.resize_ops import RESIZE_ARGS, check_resize_args
from chute.ops.video.reader import VideoReader, VideoSource, _list_videos
from chute.runtime.registry import register

_SIZE_WAYS = ("resize_x", "resize_y", "size", "resize_shorter", "resize_longer")
_RESIZE_NAMES = tuple(a.name for a in RESIZE_ARGS)


@register(legacy=("video_reader_resize",), ops_aliases=("readers.VideoReaderResize",))
class VideoResizeReader(VideoReader):
    """Reads sequences of frames from video files and resizes every frame (FHWC).

    Takes ``fn.readers.video``'s arguments (files, labels, sequences, shards,
    frame numbers, timestamps, padding) and ``fn.resize``'s (``resize_x`` /
    ``resize_y``, ``size``, ``resize_shorter``, ``resize_longer``, ``mode``,
    ``max_size``, ``roi_start`` / ``roi_end``, ``interp_type``, ``antialias``,
    ``dtype``, ...), constants here. Padding frames (``pad_mode="constant"``) are
    resized like the others. Frames are decoded by PyAV and resized on the CPU, or
    with ``device="gpu"`` on the GPU (fn.resize's GPU kernel; outputs on the GPU).
    """

    schema = Schema(
        name="readers.video_resize",
        devices=("cpu", "gpu"),
        num_outputs=4,
        args=(
            *(a for a in VideoReader.schema.args if a.name not in _RESIZE_NAMES),
            *(dataclasses.replace(a, per_sample=False) for a in RESIZE_ARGS),
            Arg(
                "resize_z",
                "float",
                None,
                "Depth of volumetric output: video frames are 2-D, so only 0 (unset) is accepted.",
                per_sample=False,
            ),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        super().check_args(args, arg_inputs)
        op = self.schema.display_name
        if args.get("resize_z"):
            raise ValueError(f"{op}: argument 'resize_z' resizes volumes; video frames are 2-D")
        check_resize_args(op, {k: v for k, v in args.items() if k in _RESIZE_NAMES}, arg_inputs)

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        specs = super().infer(node, inputs)
        dtype = node.arg("dtype")
        if dtype is not None:
            specs[0] = specs[0].with_(dtype=np.dtype(dtype))
        return specs

    def open(self, node: OpNode, pipeline: Any, hints: NodeHints = NO_HINTS) -> VideoSource:
        if node.device == "gpu":  # decode on the CPU, resize each batch on the GPU
            from chute.ops.video.resize_reader_gpu import GpuVideoResizeSource

            files, labels, ranges = _list_videos(node)
            return GpuVideoResizeSource(
                node,
                files,
                labels,
                ranges,
                pipeline.batch_size,
                pipeline.num_threads,
                node.args.get("on_error") or pipeline.on_error,
                device_id=pipeline.device_id if pipeline.device_id is not None else 0,
            )
        source = super().open(node, pipeline, hints)
        source.frame_transform = FrameResize(node)
        return source


class FrameResize:
    """Resizes each frame of an FHWC sequence with fn.resize's arguments of a reader node."""

    def __init__(self, node: OpNode):
        self.size = {k: node.arg(k) for k in _SIZE_WAYS if node.arg(k) is not None}
        self.rest = {
            k: node.arg(k)
            for k in (
                "mode",
                "max_size",
                "subpixel_scale",
                "roi_start",
                "roi_end",
                "roi_relative",
                "interp_type",
                "min_filter",
                "mag_filter",
                "antialias",
                "dtype",
            )
        }

    def __call__(self, video: np.ndarray) -> np.ndarray:
        frames = [resize_kernels.resize(frame, **self.size, **self.rest) for frame in video]
        if not frames:
            return video
        out = np.stack(frames)
        return out[..., None] if out.ndim == 3 else out  # HW frames of GRAY keep their C
