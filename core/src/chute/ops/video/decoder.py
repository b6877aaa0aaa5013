"""fn.decoders.video: chosen frames of in-memory encoded videos as FHWC uint8 sequences."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import NO_HINTS, NodeHints
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.video.frames import PAD_MODES, read_sequence, select_frames
from chute.ops.video.index import INDEX_CACHE
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register

PAD_ARGS = (
    Arg(
        "fill_value",
        "int_list",
        (0,),
        "Pixel value (one, or one per channel) of constant padding frames.",
        per_sample=False,
    ),
)

IMAGE_TYPE_ARG = Arg(
    "image_type",
    "str",
    "RGB",
    "Output colour: RGB, BGR or GRAY.",
    per_sample=False,
    choices=("RGB", "BGR", "GRAY"),
)


@register(legacy=("experimental.decoders.video",))
class VideoDecoder(Operator):
    """Decodes frames of encoded videos (H.264, HEVC, VP8, VP9, AV1, MJPEG, MPEG-4, ...) to FHWC.

    Without frame arguments every frame is decoded. ``frames`` picks frame
    numbers (presentation order); else ``sequence_length`` frames from
    ``start_frame`` every ``stride``, or ``start_frame`` to ``end_frame``.
    Frames asked for past the end are padded by ``pad_mode``: "none" (left
    out), "constant" (``fill_value``), "edge" (the last frame) or "reflect".
    Seeks use a packet index built once per video content. Needs PyAV
    (``pip install 'chute[video]'``). With ``device="mixed"`` the frames are
    decoded by the GPU's hardware decoder (NVDEC, through PyNvVideoCodec:
    ``pip install 'chute[video-gpu]'``) and come out on the GPU; videos in codecs
    NVDEC cannot decode are decoded on the CPU and uploaded.
    """

    decodes = True

    schema = Schema(
        name="decoders.video",
        devices=("cpu", "mixed"),
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
            IMAGE_TYPE_ARG,
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

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._nvdec: dict[tuple[int, int], Any] = {}
        self._nvdec_lock = threading.Lock()

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [Spec(np.dtype(np.uint8), 4, "FHWC")]

    def setup(self, node: OpNode, hints: NodeHints = NO_HINTS, pipeline: Any = None) -> None:
        if node.device == "mixed":  # fail at build time, naming what to install
            from chute.ops.video.nvdec import require_nvdec

            require_nvdec(f"{self.schema.display_name}(device='mixed')", None)

    def _wanted(self, encoded: np.ndarray, args: ArgView) -> list[int]:
        return self._index_and_wanted(encoded, args)[1]

    def _index_and_wanted(self, encoded: np.ndarray, args: ArgView) -> tuple[Any, list[int]]:
        if encoded.dtype != np.uint8 or encoded.ndim != 1:
            raise ValueError(
                f"expected encoded video bytes (1-D uint8), got {encoded.dtype} {encoded.shape}"
            )
        index = INDEX_CACHE.get(encoded, self.schema.display_name)
        return index, select_frames(
            index.num_frames,
            args["frames"],
            args["start_frame"],
            args["end_frame"],
            args["stride"],
            args["sequence_length"],
        )

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        encoded = inputs[0]
        wanted = self._wanted(encoded, args)
        video, _ = read_sequence(
            encoded,
            wanted,
            args["pad_mode"],
            args["fill_value"],
            args["image_type"],
            self.schema.display_name,
        )
        return video

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        """device="mixed": NVDEC decodes each video (on the pipeline's threads), FHWC on the GPU."""
        from chute.ops.video.nvdec import NvdecDecoder
        from chute.tensors.gpu import TensorListGPU

        (encoded,) = inputs
        key = (ctx.device_id, ctx.stream.ptr)
        with self._nvdec_lock:
            decoder = self._nvdec.get(key)
            if decoder is None:
                where = f"{self.schema.display_name}(device='mixed')"
                decoder = self._nvdec[key] = NvdecDecoder(ctx.device_id, ctx.stream, where)
        videos: list[Any] = [None] * len(encoded)

        def work(i: int) -> None:
            a = args.sample(i)
            index, wanted = self._index_and_wanted(encoded[i], a)
            videos[i], _ = decoder.read_sequence(
                encoded[i],
                wanted,
                a["pad_mode"],
                a["fill_value"],
                a["image_type"],
                self.schema.display_name,
                index=index,
            )

        failures = ctx.pool.run(work, len(encoded))
        if failures:
            i, exc = failures[0]
            path = (ctx.meta[i] or {}).get("source_info") if i < len(ctx.meta) else None
            raise ValueError(f"sample {i}{f' ({path})' if path else ''}: {exc}") from exc
        return TensorListGPU(videos, "FHWC", ctx.stream, ctx.device_id)
