"""fn.decoders.video: chosen frames of in-memory encoded videos as FHWC uint8 sequences."""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops._base import ArgView, Operator
from chute.ops.video.frames import PAD_MODES, read_sequence, select_frames
from chute.ops.video.index import INDEX_CACHE

PAD_ARGS = (
    Arg(
        "fill_value",
        "int_list",
        (0,),
        "Pixel value (one, or one per channel) of constant padding frames.",
        per_sample=False,
    ),
)


class VideoDecoder(Operator):
    """Decodes frames of encoded videos (H.264, HEVC, VP8, VP9, AV1, MJPEG, MPEG-4, ...) to FHWC.

    Without frame arguments every frame is decoded. ``frames`` picks frame
    numbers (presentation order); else ``sequence_length`` frames from
    ``start_frame`` every ``stride``, or ``start_frame`` to ``end_frame``.
    Frames asked for past the end are padded by ``pad_mode``: "none" (left
    out), "constant" (``fill_value``), "edge" (the last frame) or "reflect".
    Seeks use a packet index built once per video content. Needs PyAV
    (``pip install 'chute[video]'``).
    """

    schema = Schema(
        name="decoders.video",
        inputs=("encoded",),
        args=(
            Arg("frames", "int_list", None, "Frame numbers to decode.", per_sample=False),
            Arg("start_frame", "int", 0, "First frame."),
            Arg("end_frame", "int", None, "End frame (exclusive; default: the video's end)."),
            Arg("stride", "int", 1, "Distance between consecutive frames."),
            Arg("sequence_length", "int", None, "Number of frames (padded past the end)."),
            Arg(
                "pad_mode",
                "str",
                "constant",
                "Frames past the end: 'none', 'constant', 'edge' or 'reflect'.",
                per_sample=False,
                choices=PAD_MODES,
            ),
            *PAD_ARGS,
            Arg(
                "image_type",
                "str",
                "RGB",
                "Output colour: RGB, BGR or GRAY.",
                per_sample=False,
                choices=("RGB", "BGR", "GRAY"),
            ),
            Arg("affine", "bool", True, "Accepted for DALI compatibility.", per_sample=False),
            Arg(
                "build_index",
                "bool",
                True,
                "Accepted for DALI compatibility: the index is always built.",
                per_sample=False,
            ),
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        op = self.schema.display_name
        selection = {"start_frame", "end_frame", "stride", "sequence_length"} & {
            *args,
            *arg_inputs,
        }
        if args.get("frames") is not None and selection:
            raise ValueError(f"{op}: give 'frames' or {sorted(selection)}, not both")
        if "end_frame" in args and "sequence_length" in args:
            raise ValueError(f"{op}: give 'end_frame' or 'sequence_length', not both")
        if args.get("stride", 1) < 1:
            raise ValueError(f"{op}: argument 'stride' must be >= 1")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [Spec(np.dtype(np.uint8), 4, "FHWC")]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        encoded = inputs[0]
        if encoded.dtype != np.uint8 or encoded.ndim != 1:
            raise ValueError(
                f"expected encoded video bytes (1-D uint8), got {encoded.dtype} {encoded.shape}"
            )
        where = self.schema.display_name
        index = INDEX_CACHE.get(encoded, where)
        wanted = select_frames(
            index.num_frames,
            args["frames"],
            args["start_frame"],
            args["end_frame"],
            args["stride"],
            args["sequence_length"],
        )
        video, _ = read_sequence(
            encoded, wanted, args["pad_mode"], args["fill_value"], args["image_type"], where
        )
        return video
