"""fn.readers.video: sequences of frames from video files, with exact sharded epochs.

At build time every file is indexed (packets only, in parallel) and cut into
sequences of ``sequence_length`` frames, ``stride`` apart, starting every
``step`` frames. The epoch plan (:mod:`chute.ops.readers.sharding`) then
runs over that list of sequences, so shuffling, shards and padding work as
for every other reader; the sequences of a batch are decoded on the
pipeline's number of threads (PyAV releases the GIL while decoding).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import NO_HINTS, NodeHints
from chute.graph.schema import REQUIRED, Arg, Schema
from chute.graph.spec import Spec
from chute.ops.readers import storage
from chute.ops.readers.file import READER_ARGS, check_shard_args
from chute.ops.readers.sharding import ShardedSource
from chute.ops.video.decoder import IMAGE_TYPE_ARG, PAD_ARGS
from chute.ops.video.frames import PAD_MODES, read_sequence
from chute.ops.video.index import INDEX_CACHE, PacketIndex
from chute.runtime.operator import Operator
from chute.runtime.registry import register
from chute.runtime.workers import WorkerPool

VIDEO_EXTENSIONS = (".mp4", ".mkv", ".webm", ".avi", ".mov", ".m4v", ".mpg", ".mpeg", ".ts")


@dataclass(frozen=True)
class Clip:
    """One sample of the reader: a file, its label and the first frame."""

    file: int
    first_frame: int
    label: int
    end: int = -1  # the end of the frames it may show (-1: the video's end)


@register(legacy=("video_reader",), ops_aliases=("readers.VideoReader",))
class VideoReader(Operator):
    """Reads sequences of frames (FHWC uint8) from video files, with labels and frame numbers.

    Outputs: video, then labels (with ``labels``, ``file_root`` or
    ``file_list``), then the first frame's number (``enable_frame_num``),
    then each frame's timestamp in seconds (``enable_timestamps``; -1 for
    padding). ``file_list`` lines are "path label [start end]", with start
    and end in frames or seconds (``file_list_format``). Needs PyAV
    (``pip install 'chute[video]'``). With ``device="gpu"`` the GPU's hardware
    decoder decodes (NVDEC, ``pip install 'chute[video-gpu]'``) and every output
    is on the GPU; files in codecs NVDEC cannot decode are decoded on the CPU.
    """

    kind = "source"
    source_class: type[VideoSource] | None = None  # None: VideoSource
    schema = Schema(
        name="readers.video",
        devices=("cpu", "gpu"),
        num_outputs=4,
        args=(
            Arg("filenames", "str_list", None, "Video files.", per_sample=False),
            Arg("labels", "int_list", None, "Labels of `filenames`.", per_sample=False),
            Arg(
                "file_root",
                "str",
                None,
                "Folder of class subfolders (or base of file_list / filenames paths).",
                per_sample=False,
            ),
            Arg(
                "file_list",
                "str",
                None,
                'Text file of "path label [start end]" lines.',
                per_sample=False,
            ),
            Arg(
                "file_list_format",
                "str",
                "timestamps",
                "Units of file_list start/end: 'frames' or 'timestamps' (seconds).",
                per_sample=False,
                choices=("frames", "timestamps"),
            ),
            Arg(
                "file_list_include_end",
                "bool",
                True,
                "The end given in file_list is part of the range.",
                per_sample=False,
            ),
            Arg("sequence_length", "int", REQUIRED, "Frames per sequence.", per_sample=False),
            Arg(
                "step",
                "int",
                -1,
                "Frames between sequence starts (-1 = sequence_length).",
                per_sample=False,
            ),
            Arg("stride", "int", 1, "Frames between frames of a sequence.", per_sample=False),
            Arg(
                "pad_mode",
                "str",
                "none",
                "'none' keeps only whole sequences; 'constant', 'edge' or 'reflect' also reads "
                "the tail of each video, padded.",
                per_sample=False,
                choices=PAD_MODES,
            ),
            *PAD_ARGS,
            IMAGE_TYPE_ARG,
            Arg(
                "enable_frame_num",
                "bool",
                False,
                "Output the first frame's number.",
                per_sample=False,
            ),
            Arg(
                "enable_timestamps",
                "bool",
                False,
                "Output each frame's time in seconds.",
                per_sample=False,
            ),
            *READER_ARGS,
        ),
    )

    def num_outputs(self, args: dict[str, Any], num_inputs: int = 0) -> int:
        return len(_output_names(args))

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        op = self.schema.display_name
        if args["sequence_length"] < 1 or args.get("stride", 1) < 1:
            raise ValueError(f"{op}: sequence_length and stride must be >= 1")
        sources = [k for k in ("filenames", "file_list") if args.get(k) is not None]
        if len(sources) > 1:
            raise ValueError(f"{op}: give either filenames or file_list, not both")
        if not sources and args.get("file_root") is None:
            raise ValueError(f"{op}: give filenames, file_root or file_list")
        labels = args.get("labels")
        if labels is not None and len(labels) != len(args.get("filenames") or ()):
            raise ValueError(f"{op}: argument 'labels' needs 'filenames' of the same length")
        check_shard_args(op, args)

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        specs = {
            "video": Spec(np.dtype(np.uint8), 4, "FHWC"),
            "labels": Spec(np.dtype(np.int32), 1, None),
            "frame_num": Spec(np.dtype(np.int32), 1, None),
            "timestamps": Spec(np.dtype(np.float32), 1, None),
        }
        return [specs[name] for name in _output_names(node.args)]

    def open(self, node: OpNode, pipeline: Any, hints: NodeHints = NO_HINTS) -> VideoSource:
        files, labels, ranges = _list_videos(node)
        on_error = node.args.get("on_error") or pipeline.on_error
        nvdec = None
        if node.device == "gpu":
            from chute.ops.video.nvdec import NvdecDecoder

            nvdec = NvdecDecoder(pipeline.device_id, where=f"{node.label}(device='gpu')")
        return (self.source_class or VideoSource)(
            node, files, labels, ranges, pipeline.batch_size, pipeline.num_threads, on_error, nvdec
        )


def _output_names(args: dict[str, Any]) -> list[str]:
    names = ["video"]
    if any(args.get(k) is not None for k in ("labels", "file_root", "file_list")):
        names.append("labels")
    if args.get("enable_frame_num"):
        names.append("frame_num")
    if args.get("enable_timestamps"):
        names.append("timestamps")
    return names


def _list_videos(node: OpNode) -> tuple[list[str], list[int], list[tuple | None]]:
    """Paths, labels and optional (start, end) ranges from filenames, file_list or file_root."""
    root = node.arg("file_root")
    label = node.label
    if node.arg("filenames") is not None:
        files = [storage.join(root, f) for f in node.arg("filenames")]
        labels = list(node.arg("labels") or [0] * len(files))
        return files, labels, [None] * len(files)
    if node.arg("file_list") is not None:
        return _read_file_list(node.arg("file_list"), root, label)
    storage.check_folder(
        root, label, "filenames=[...] (with labels=) or file_list= (lines 'path label')"
    )
    files, labels = [], []
    for number, cls in enumerate(storage.list_dirs(root)):
        folder = storage.join(root, cls)
        for rel in storage.walk_files(folder):
            if rel.lower().endswith(VIDEO_EXTENSIONS):
                files.append(storage.join(folder, rel))
                labels.append(number)
    if not files:
        raise ValueError(f"{label}: no video files under {root!r}")
    return files, labels, [None] * len(files)


def _read_file_list(path: str, root: str | None, label: str) -> tuple[list, list, list]:
    try:
        lines = storage.read_text(path).splitlines()
    except OSError as exc:
        reason = exc.strerror or exc
        raise ValueError(f"{label}: cannot read file_list {path!r}: {reason}") from None
    files, labels, ranges = [], [], []
    for number, line in enumerate(lines, 1):
        parts = line.split()
        if not parts or parts[0].startswith("#"):
            continue
        try:
            name = parts[0]
            labels.append(int(parts[1]) if len(parts) > 1 else 0)
            ranges.append((float(parts[2]), float(parts[3])) if len(parts) > 3 else None)
        except ValueError:
            raise ValueError(
                f"{label}: file_list {path!r} line {number}: expected 'path label [start end]', "
                f"got {line!r}"
            ) from None
        files.append(storage.join(root, name))
    if not files:
        raise ValueError(f"{label}: file_list {path!r} lists no files")
    return files, labels, ranges


def frame_range(
    index: PacketIndex, span: tuple | None, units: str, include_end: bool
) -> tuple[int, int]:
    """[first, end) frames of a file_list range.

    With timestamps the range starts at the frame on screen at ``start`` and
    ends with the frame on screen at ``end`` (or just before it without
    ``include_end``).
    """
    n = index.num_frames
    if span is None:
        return 0, n
    start, end = span
    if units == "frames":
        first = int(start)
        last = n if end < 0 else int(end) + (1 if include_end else 0)
    else:
        # float64 and a nanosecond of slack: a time written as "0.05" must hit the frame at 50 ms
        times = (index.pts - index.pts[0]) * float(index.time_base)
        eps = 1e-9
        first = max(0, int(np.searchsorted(times, start + eps, side="right")) - 1)
        if end < 0:
            last = n
        elif include_end:  # up to the frame on screen at `end`
            last = int(np.searchsorted(times, end + eps, side="right"))
        else:
            last = int(np.searchsorted(times, end - eps, side="right"))
    return max(0, first), min(n, last)


class VideoSource(ShardedSource):
    """The running video reader: the list of sequences, the epoch plan and a decode pool."""

    unit = "sequences"
    frame_transform: Any = None  # applied to each decoded sequence (readers.video_resize)

    def __init__(
        self,
        node: OpNode,
        files: list[str],
        labels: list[int],
        ranges: list,
        batch_size: int,
        num_threads: int,
        on_error: str = "raise",
        nvdec: Any = None,
    ):
        self.node = node
        self.files = files
        self.on_error = on_error
        self.nvdec = nvdec  # an NvdecDecoder when the reader runs on the GPU
        self.outputs = _output_names(node.args)
        self.pool = WorkerPool(num_threads, name="chute-video")
        self.indexes: list[PacketIndex | None] = [None] * len(files)
        failures = self.pool.run(self._index, len(files))
        if failures:
            raise failures[0][1]
        length = node.arg("sequence_length")
        stride = node.arg("stride")
        self.sequences: list[Clip] = []
        for i, index in enumerate(self.indexes):
            self.sequences.extend(self.clips(i, index, ranges[i], labels[i]))
        if not self.sequences:
            raise ValueError(
                f"{node.label}: no sequence of {length} frames (stride {stride}) fits in the videos"
            )
        self.init_plan(node, len(self.sequences), batch_size, files)

    def _index(self, i: int) -> None:
        self.indexes[i] = INDEX_CACHE.get(self.files[i], f"{self.node.label} {self.files[i]!r}")

    @property
    def pad_mode(self) -> str:
        """The padding of sequences that run past a video's end (a name of frames.PAD_MODES)."""
        return self.node.arg("pad_mode")

    @property
    def decode_type(self) -> str:
        """The colour the decoder writes (RGB, BGR or GRAY)."""
        return self.node.arg("image_type")

    def clips(self, file: int, index: PacketIndex, span: tuple | None, label: int) -> list[Clip]:
        """The sequences of one video: every ``step`` frames in its (file_list) range."""
        node = self.node
        first, end = frame_range(
            index, span, node.arg("file_list_format"), node.arg("file_list_include_end")
        )
        length, stride = node.arg("sequence_length"), node.arg("stride")
        step = node.arg("step") if node.arg("step") > 0 else length
        last_start = end - 1 if self.pad_mode != "none" else end - ((length - 1) * stride + 1)
        return [Clip(file, s, label) for s in range(first, last_start + 1, step)]

    def frames_of(self, seq: Clip) -> list[int]:
        """The frame numbers a sequence shows (past the end: resolved by the padding)."""
        node = self.node
        return [
            seq.first_frame + k * node.arg("stride") for k in range(node.arg("sequence_length"))
        ]

    def frame_num(self, seq: Clip, shown: np.ndarray) -> np.ndarray:
        """The frame_num output: the first frame's number."""
        return np.array([seq.first_frame], np.int32)

    def read(self, seq: Clip) -> dict[str, np.ndarray]:
        """Decode one sequence into the reader's outputs."""
        node = self.node
        wanted = self.frames_of(seq)
        path = self.files[seq.file]
        decode = read_sequence if self.nvdec is None else self.nvdec.read_sequence
        video, shown = decode(
            path,
            wanted,
            self.pad_mode,
            node.arg("fill_value"),
            self.decode_type,
            f"{node.label} {path!r}",
        )
        if self.frame_transform is not None:
            video = self.frame_transform(video)
        index = self.indexes[seq.file]
        shown = np.asarray(shown, np.int64)
        times = np.full(len(shown), -1.0, np.float32)
        times[shown >= 0] = index.seconds(shown[shown >= 0])
        return {
            "video": video,
            "labels": np.array([seq.label], np.int32),
            "frame_num": self.frame_num(seq, shown),
            "timestamps": times,
        }

    def next_batch(self, batch_size: int, epoch: int, iteration: int):
        slots, meta = self.take_batch(lambda i: self.files[self.sequences[i].file])
        results: list[dict | None] = [None] * len(slots)
        errors: list[tuple | None] = [None] * len(slots)

        def work(k: int) -> None:
            try:
                results[k] = self.read(self.sequences[slots[k].index])
            except (ValueError, OSError) as exc:
                if self.on_error == "raise":
                    raise
                errors[k] = (self.node.label, exc)

        failures = self.pool.run(work, len(slots))
        if failures:
            raise failures[0][1]
        empty = {
            "video": np.zeros((0, 0, 0, 3), np.uint8),
            "labels": np.zeros(1, np.int32),
            "frame_num": np.zeros(1, np.int32),
            "timestamps": np.zeros(0, np.float32),
        }
        outputs = [[(r or empty)[name] for r in results] for name in self.outputs]
        if self.nvdec is not None:
            outputs = self._to_gpu(outputs)
        for m, error in zip(meta, errors):
            m["error"] = error
        return outputs, meta

    def _to_gpu(self, outputs: list[list[Any]]) -> list[list[Any]]:
        """Every output on the GPU, complete: the executor hands them on to its own stream."""
        cp = self.nvdec.cp
        stream = self.nvdec.stream
        with cp.cuda.Device(self.nvdec.device_id), stream:
            moved = []
            for samples in outputs:
                host = [s for s in samples if isinstance(s, np.ndarray)]
                if len(host) == len(samples) and len({s.shape for s in host}) == 1:
                    dense = cp.asarray(np.stack(host))  # labels, frame numbers: one upload
                    moved.append([dense[i] for i in range(len(samples))])
                else:
                    moved.append([cp.asarray(s) for s in samples])
        stream.synchronize()
        return moved

    def close(self) -> None:
        self.pool.close()
