"""fn.readers.sequence: sequences of decoded frames from folders of extracted video frames.

``file_root`` holds one folder per stream; a stream's frames are its files, in
sorted order. A stream of N frames gives the sequences starting at frames 0,
``step``, 2 ``step``, ... whose ``sequence_length`` frames, ``stride`` apart, all lie
in the stream: sequences never cross streams and are never padded (as in DALI).
The dataset is every stream's sequences, streams in sorted order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import NO_HINTS, NodeHints
from chute.graph.schema import REQUIRED, Arg, Schema
from chute.graph.spec import Spec
from chute.ops.decoders import image_codec
from chute.ops.readers import storage
from chute.ops.readers.file import READER_ARGS
from chute.ops.readers.records import (
    FileCache,
    RecordError,
    RecordSource,
    check_record_args,
    on_error_of,
)
from chute.runtime.operator import Operator
from chute.runtime.registry import register
from chute.runtime.workers import WorkerPool


@dataclass(frozen=True)
class FrameSequence:
    """One sample: ``length`` frames of stream ``stream``, from ``first``, ``stride`` apart."""

    stream: int
    first: int


@register(legacy=("sequence_reader",), ops_aliases=("SequenceReader",))
class SequenceReader(Operator):
    """Reads sequences of frames (FHWC uint8) from a folder of streams of image files.

    Each folder directly under ``file_root`` is a stream, its files (sorted by name)
    are the frames, decoded with ``image_type`` (RGB, BGR or GRAY). Sequences start
    every ``step`` frames and take ``sequence_length`` frames ``stride`` apart; only
    whole sequences within one stream are read. The frames of a sequence must have
    one size. A frame that cannot be read or decoded raises naming the stream and
    the file, or the sequence is skipped with a report under ``on_error="skip"``.
    """

    kind = "source"
    schema = Schema(
        name="readers.sequence",
        num_outputs=1,
        args=(
            Arg("file_root", "str", REQUIRED, "Folder of stream folders.", per_sample=False),
            Arg("sequence_length", "int", REQUIRED, "Frames per sequence.", per_sample=False),
            Arg("step", "int", 1, "Frames between the starts of sequences.", per_sample=False),
            Arg("stride", "int", 1, "Frames between the frames of a sequence.", per_sample=False),
            Arg(
                "image_type",
                "str",
                "RGB",
                "Colour of the decoded frames: RGB, BGR or GRAY.",
                per_sample=False,
                choices=("RGB", "BGR", "GRAY"),
            ),
            *READER_ARGS,
        ),
    )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        op = self.schema.display_name
        for name in ("sequence_length", "step", "stride"):
            if args.get(name, 1) < 1:
                raise ValueError(f"{op}: argument {name!r} must be >= 1, got {args[name]}")
        check_record_args(op, args)

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [Spec(np.dtype(np.uint8), 4, "FHWC")]

    def open(self, node: OpNode, pipeline: Any, hints: NodeHints = NO_HINTS) -> SequenceSource:
        return SequenceSource(node, pipeline)


def list_streams(root: str, label: str) -> tuple[list[str], list[list[str]]]:
    """The stream folders under ``root`` (sorted) and each one's frame files (sorted)."""
    storage.check_folder(
        root,
        label,
        "an s3:// (or other listable) URL or a local copy (readers.sequence has no file list)",
    )
    names = storage.list_dirs(root)
    streams = [storage.join(root, n) for n in names]
    frames = []
    for stream in streams:
        files = [f for f in storage.walk_files(stream) if "/" not in f and "\\" not in f]
        frames.append([storage.join(stream, f) for f in sorted(files)])
    return streams, frames


class SequenceSource(RecordSource):
    """The sequences of every stream; each batch's frames are fetched, then decoded in parallel."""

    def __init__(self, node: OpNode, pipeline: Any):
        self.node = node
        root = node.arg("file_root")
        self.streams, self.frames = list_streams(root, node.label)
        self.length = node.arg("sequence_length")
        self.stride = node.arg("stride")
        self.image_type = node.arg("image_type")
        span = (self.length - 1) * self.stride + 1
        step = node.arg("step")
        self.sequences = [
            FrameSequence(s, first)
            for s, frames in enumerate(self.frames)
            for first in range(0, len(frames) - span + 1, step)
        ]
        if not self.sequences:
            raise ValueError(
                f"{node.label}: no stream under {root!r} holds {self.length} frames "
                f"{self.stride} apart"
            )
        self.files = FileCache(use_mmap=node.arg("dont_use_mmap") is False)
        names = [
            f"{storage.relpath(self.streams[q.stream], root)}:{q.first}" for q in self.sequences
        ]
        self.start(
            node, pipeline.batch_size, len(self.sequences), names, on_error_of(node, pipeline)
        )
        self.pool = WorkerPool(max(1, pipeline.num_threads), name="chute-sequence")

    def frame_paths(self, index: int) -> list[str]:
        q = self.sequences[index]
        return [self.frames[q.stream][q.first + k * self.stride] for k in range(self.length)]

    def source_info(self, index: int) -> str:
        q = self.sequences[index]
        return f"{self.streams[q.stream]}:{q.first}"

    def begin_batch(self, indices: list[int]) -> None:
        self.files.fetch([p for i in indices for p in self.frame_paths(i)])

    def end_batch(self) -> None:
        self.files.clear()

    def read(self, index: int) -> list[Any]:
        frames = []
        for path in self.frame_paths(index):
            data = self.files.read(path)
            try:
                frame = image_codec.decode(data, self.image_type)
            except (ValueError, OSError) as exc:
                raise RecordError(f"frame {path!r}: cannot decode: {exc}") from None
            if frames and frame.shape != frames[0].shape:
                raise RecordError(
                    f"frame {path!r} is {frame.shape[1]}x{frame.shape[0]}, the sequence's first "
                    f"frame {frames[0].shape[1]}x{frames[0].shape[0]} (a sequence has one size)"
                )
            frames.append(frame)
        return [np.stack(frames)]

    def empty(self) -> list[Any]:
        return [np.zeros((0, 0, 0, 1 if self.image_type == "GRAY" else 3), np.uint8)]
