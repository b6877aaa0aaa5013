"""fn.experimental.readers.video: DALI's newer video reader, on chute's video reader.

The same files, labels, shards and decoding as ``fn.readers.video`` (PyAV on the CPU,
NVDEC with ``device="gpu"``), with the experimental reader's own arguments:

- ``enable_frame_num``: "none"/False, "scalar"/True (the first frame's number, shape
  (1,)) or "sequence" (each output frame's number, -1 for a constant padding frame).
- ``pad_mode`` names: "none", "constant", "edge" / "repeat", "reflect_101" / "reflect"
  (ABC -> ABCBA), "reflect_1001" / "symmetric" (ABC -> ABCCBA).
- ``file_list`` ranges: frame numbers ``[start, end)`` counting from the end when
  negative (``file_list_format="frames"``), and ``file_list_rounding`` of times that
  fall between frames.
- ``uniform_sample``: one sequence per video (or file_list range), frames
  ``floor(linspace(start, end - 1, sequence_length) + 0.5)``.
- ``image_type`` RGB or YCbCr (ITU-R BT.601 limited range, as the image decoders).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import NO_HINTS, NodeHints
from chute.graph.schema import Arg, Schema
from chute.ops.decoders.pixel_convert import convert_color
from chute.ops.video.frames import pad_sources
from chute.ops.video.index import PacketIndex
from chute.ops.video.reader import Clip, VideoReader, VideoSource
from chute.runtime.registry import register

# DALI's names -> chute.ops.video.frames.pad_sources's
PAD_NAMES = {
    "none": "none",
    "constant": "constant",
    "edge": "edge",
    "repeat": "edge",
    "reflect_101": "reflect",
    "reflect": "reflect",
    "reflect_1001": "symmetric",
    "symmetric": "symmetric",
}
ROUNDINGS = ("start_down_end_up", "start_up_end_down", "all_up", "all_down")
_FRAME_NUM = {False: "none", True: "scalar", "none": "none", "scalar": "scalar"}
_REPLACED = {"enable_frame_num", "pad_mode", "image_type", "file_list_include_end"}


def _frame_num_mode(value: Any) -> str:
    if isinstance(value, (bool, np.bool_)):
        return _FRAME_NUM[bool(value)]
    return {"sequence": "sequence"}.get(value, _FRAME_NUM.get(value, ""))


class ExperimentalVideoSource(VideoSource):
    """VideoSource with the experimental reader's ranges, padding names and frame numbers."""

    @property
    def pad_mode(self) -> str:
        return "edge" if self.node.arg("uniform_sample") else PAD_NAMES[self.node.arg("pad_mode")]

    @property
    def decode_type(self) -> str:
        return "RGB"

    def clips(self, file: int, index: PacketIndex, span: tuple | None, label: int) -> list[Clip]:
        node = self.node
        first, end = experimental_range(
            index,
            span,
            node.arg("file_list_format"),
            node.arg("file_list_include_end"),
            node.arg("file_list_rounding"),
        )
        if end <= first:
            return []
        if node.arg("uniform_sample"):
            return [Clip(file, first, label, end)]
        length, stride = node.arg("sequence_length"), node.arg("stride")
        step = node.arg("step") if node.arg("step") > 0 else length
        # as DALI 2.4 cuts them: whole sequences while start + length * stride <= end (one
        # stride more than the frames shown), then with padding one more, at the next step
        starts = list(range(first, end - length * stride + 1, step))
        after = starts[-1] + step if starts else first
        if self.pad_mode != "none" and after < end:
            starts.append(after)
        return [Clip(file, s, label, end) for s in starts]

    def frames_of(self, seq: Clip) -> list[int]:
        node = self.node
        length = node.arg("sequence_length")
        if node.arg("uniform_sample"):
            return uniform_frames(seq.first_frame, seq.end, length)
        # padding past the end of the sequence's range (the video, or its file_list range)
        n = self.indexes[seq.file].num_frames
        end = seq.end if seq.end >= 0 else n
        wanted = [seq.first_frame + k * node.arg("stride") for k in range(length)]
        # -1 (constant padding) -> a frame past the video's end, which read_sequence fills
        return [n if f < 0 else f for f in pad_sources(wanted, end, self.pad_mode)]

    def frame_num(self, seq: Clip, shown: np.ndarray) -> np.ndarray:
        if _frame_num_mode(self.node.arg("enable_frame_num")) == "sequence":
            return np.asarray(shown, np.int32)
        return np.array([seq.first_frame], np.int32)


@register()
class ExperimentalVideoReader(VideoReader):
    """Reads sequences of frames (FHWC uint8) from video files: DALI's experimental reader.

    Outputs: video, then labels (with ``labels``, ``file_root`` or ``file_list``),
    then frame numbers (``enable_frame_num``: "scalar" or "sequence"), then each
    frame's time in seconds (``enable_timestamps``; -1 for constant padding).
    """

    source_class = ExperimentalVideoSource

    schema = Schema(
        name="experimental.readers.video",
        devices=("cpu", "gpu"),
        num_outputs=4,
        args=(
            *(a for a in VideoReader.schema.args if a.name not in _REPLACED),
            Arg(
                "enable_frame_num",
                "any",
                "none",
                '"none"/False, "scalar"/True (first frame\'s number) or "sequence" '
                "(each frame's number, -1 for padding).",
                per_sample=False,
            ),
            Arg(
                "pad_mode",
                "str",
                "none",
                "'none' keeps whole sequences only; 'constant', 'edge'/'repeat', "
                "'reflect_101'/'reflect' or 'reflect_1001'/'symmetric' also read each video's "
                "tail, padded.",
                per_sample=False,
                choices=tuple(PAD_NAMES),
            ),
            Arg(
                "image_type",
                "str",
                "RGB",
                "Output colour: RGB or YCbCr (BT.601 limited range).",
                per_sample=False,
                choices=("RGB", "YCbCr"),
            ),
            Arg(
                "file_list_include_end",
                "bool",
                True,
                "file_list times: the end frame is part of the range. Frame numbers are "
                "[start, end) either way, as DALI 2.4's CPU reader reads them.",
                per_sample=False,
            ),
            Arg(
                "file_list_rounding",
                "str",
                "start_down_end_up",
                "file_list times between two frames: start_down_end_up, start_up_end_down, "
                "all_up or all_down.",
                per_sample=False,
                choices=ROUNDINGS,
            ),
            Arg(
                "uniform_sample",
                "bool",
                False,
                "One sequence per video: sequence_length frames spread evenly over it "
                "(stride, step and pad_mode ignored).",
                per_sample=False,
            ),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        op = self.schema.display_name
        if not _frame_num_mode(args.get("enable_frame_num", "none")):
            raise ValueError(
                f"{op}: argument 'enable_frame_num' must be 'none', 'scalar', 'sequence', "
                f"True or False, got {args.get('enable_frame_num')!r}"
            )
        super().check_args(args, arg_inputs)

    def open(self, node: OpNode, pipeline: Any, hints: NodeHints = NO_HINTS) -> VideoSource:
        if node.device == "gpu" and node.arg("image_type") == "YCbCr":
            raise ValueError(f"{node.label}: image_type='YCbCr' is decoded on the CPU backend only")
        source = super().open(node, pipeline, hints)
        if node.arg("image_type") == "YCbCr":
            source.frame_transform = _to_ycbcr
        return source


def _to_ycbcr(video: np.ndarray) -> np.ndarray:
    return np.stack([convert_color(f, "RGB", "YCbCr") for f in video]) if len(video) else video


def uniform_frames(first: int, end: int, length: int) -> list[int]:
    """``length`` frames spread evenly over [first, end): linspace rounded half up."""
    points = np.linspace(first, end - 1, length)
    return [math.floor(p + 0.5) for p in points]


def experimental_range(
    index: PacketIndex, span: tuple | None, units: str, include_end: bool, rounding: str
) -> tuple[int, int]:
    """[first, end) frames of a file_list range as the experimental reader reads it.

    Frames: ``[start, end)``, negative numbers counting from the end (the end frame is
    left out with or without ``include_end``, as DALI 2.4's CPU backend does, although its
    documentation says otherwise). Times (seconds from the first frame): a start between
    two frames is rounded down (to the frame on screen) or up (to the next one), an end
    likewise, by ``rounding``; ``include_end`` keeps the end frame.
    """
    n = index.num_frames
    if span is None:
        return 0, n
    start, stop = span
    if units == "frames":
        # [start, end) whatever include_end says: what DALI 2.4's CPU reader returns
        first = int(start) + (n if start < 0 else 0)
        last = int(stop) + (n if stop < 0 else 0)
        return max(0, first), min(n, last)
    times = (index.pts - index.pts[0]) * float(index.time_base)
    eps = 1e-9
    start_up = rounding in ("start_up_end_down", "all_up")
    end_up = rounding in ("start_down_end_up", "all_up")
    first = _round_time(times, start, start_up, eps)
    last = _round_time(times, stop, end_up, eps) + (1 if include_end else 0)
    return max(0, first), min(n, last)


def _round_time(times: np.ndarray, t: float, up: bool, eps: float) -> int:
    """The frame at time ``t``: the next one (``up``) or the one on screen when between two."""
    if up:
        return int(np.searchsorted(times, t - eps, side="left"))
    return max(0, int(np.searchsorted(times, t + eps, side="right")) - 1)
