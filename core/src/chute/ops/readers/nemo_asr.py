"""fn.readers.nemo_asr: audio and transcripts from NeMo manifests (JSON lines).

Each manifest line is an object with ``audio_filepath`` (relative paths start at
the manifest's folder), and optionally ``duration``, ``offset`` (seconds) and
``text``. The audio is decoded as fn.decoders.audio decodes it
(:func:`chute.ops.audio.codec.decode_audio`, libsndfile through ``soundfile``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import NO_HINTS, NodeHints
from chute.graph.schema import REQUIRED, Arg, Schema
from chute.graph.spec import Spec
from chute.ops.audio.codec import AUDIO_DTYPES, decode_audio
from chute.ops.readers import storage
from chute.ops.readers.file import READER_ARGS
from chute.ops.readers.records import (
    SHUFFLE_AFTER_EPOCH,
    FileCache,
    FileRecordSource,
    RecordError,
    bad_entry,
    check_record_args,
    on_error_of,
)
from chute.runtime.operator import Operator
from chute.runtime.registry import register
from chute.types import to_dtype


@dataclass(frozen=True)
class AsrEntry:
    """One manifest line: the audio, its span, its transcript; ``error`` for a bad line."""

    audio_filepath: str
    index: int
    text: str = ""
    offset: float = 0.0
    duration: float = 0.0
    error: str | None = None


@register(legacy=("nemo_asr_reader",), ops_name="NemoAsr", ops_aliases=("NemoAsrReader",))
class NemoAsrReader(Operator):
    """Reads audio with its sample rate, transcript and manifest index from NeMo manifests.

    Outputs: the audio (``dtype``; 1-D with ``downmix``, else (time, channels)),
    then with ``read_sample_rate`` its sample rate (float32 scalar), with
    ``read_text`` the transcript as UTF-8 bytes (uint8, 1-D), with ``read_idxs``
    the entry's index in the manifests (int64, shape (1,)). ``offset`` and
    ``duration`` of an entry select that span of the file. Entries whose manifest
    ``duration`` is under ``min_duration`` or over ``max_duration`` (when > 0) are
    left out. Needs ``pip install 'chute[audio]'``.
    """

    kind = "source"
    schema = Schema(
        name="readers.nemo_asr",
        num_outputs=4,
        args=(
            Arg(
                "manifest_filepaths",
                "str_list",
                REQUIRED,
                "NeMo manifest files (JSON lines).",
                per_sample=False,
            ),
            Arg(
                "sample_rate",
                "float",
                -1.0,
                "Resample to this rate in Hz (<= 0: keep the file's).",
                per_sample=False,
            ),
            Arg(
                "quality",
                "float",
                50.0,
                "Resampling quality 0..100 (accepted; chute resamples one way).",
                per_sample=False,
            ),
            Arg("downmix", "bool", True, "Average the channels into 1-D audio.", per_sample=False),
            Arg(
                "dtype",
                "dtype",
                np.dtype(np.float32),
                "Audio type: float32 (in [-1, 1]), int16 or int32.",
                per_sample=False,
            ),
            Arg(
                "min_duration",
                "float",
                0.0,
                "Leave out entries shorter than this many seconds (when > 0).",
                per_sample=False,
            ),
            Arg(
                "max_duration",
                "float",
                0.0,
                "Leave out entries longer than this many seconds (when > 0).",
                per_sample=False,
            ),
            Arg("read_sample_rate", "bool", True, "Output the sample rate.", per_sample=False),
            Arg("read_text", "bool", True, "Output the transcript.", per_sample=False),
            Arg("read_idxs", "bool", False, "Output the manifest index.", per_sample=False),
            *SHUFFLE_AFTER_EPOCH,
            *READER_ARGS,
        ),
    )

    def num_outputs(self, args: dict[str, Any], num_inputs: int = 0) -> int:
        return 1 + sum(
            bool(args.get(k, d))
            for k, d in (("read_sample_rate", True), ("read_text", True), ("read_idxs", False))
        )

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        op = "fn.readers.nemo_asr"
        check_record_args(op, args)
        dtype = np.dtype(to_dtype(args.get("dtype", np.float32)))
        if dtype not in AUDIO_DTYPES:
            raise ValueError(f"{op}: argument 'dtype' must be FLOAT, INT16 or INT32, got {dtype}")
        if not args["manifest_filepaths"]:
            raise ValueError(f"{op}: argument 'manifest_filepaths' is empty")

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        ndim = 1 if node.arg("downmix") else 2
        specs = [Spec(np.dtype(to_dtype(node.arg("dtype"))), ndim, None)]
        if node.arg("read_sample_rate"):
            specs.append(Spec(np.dtype(np.float32), 0, None))
        if node.arg("read_text"):
            specs.append(Spec(np.dtype(np.uint8), 1, None))
        if node.arg("read_idxs"):
            specs.append(Spec(np.dtype(np.int64), 1, None))
        return specs

    def open(self, node: OpNode, pipeline: Any, hints: NodeHints = NO_HINTS) -> NemoAsrSource:
        return NemoAsrSource(node, pipeline)


def read_manifests(
    paths: list[str], min_duration: float, max_duration: float, on_error: str
) -> list[AsrEntry]:
    """The entries of the manifests, in order, less those out of the duration bounds.

    A malformed line raises (naming the manifest and the line) under
    on_error="raise"; otherwise it becomes an entry that fails when read, so it is
    reported as skipped each epoch while the other entries still read.
    """
    entries: list[AsrEntry] = []
    index = 0
    for path in paths:
        try:
            lines = storage.read_text(path).splitlines()
        except OSError as exc:
            raise ValueError(f"cannot read manifest {path!r}: {exc.strerror or exc}") from None
        base = storage.dirname(path)
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"manifest {path!r} line {number}"
            try:
                item = json.loads(line)
                if not isinstance(item, dict):
                    raise ValueError("not a JSON object")
                audio = item.get("audio_filepath")
                if not isinstance(audio, str) or not audio:
                    raise ValueError("no 'audio_filepath'")
                duration = float(item.get("duration", 0.0) or 0.0)
                offset = float(item.get("offset", 0.0) or 0.0)
                text = item.get("text", "")
                if not isinstance(text, str):
                    raise ValueError("'text' is not a string")
            except (ValueError, TypeError) as exc:
                message = f"{where}: {exc}"
                bad_entry(on_error, message)
                entries.append(AsrEntry(path, index, error=message))
                index += 1
                continue
            index += 1
            if (min_duration > 0 and duration < min_duration) or (
                max_duration > 0 and duration > max_duration
            ):
                continue
            entries.append(AsrEntry(storage.join(base, audio), index - 1, text, offset, duration))
    return entries


class NemoAsrSource(FileRecordSource):
    def __init__(self, node: OpNode, pipeline: Any):
        on_error = on_error_of(node, pipeline)
        try:
            self.entries = read_manifests(
                list(node.arg("manifest_filepaths")),
                node.arg("min_duration"),
                node.arg("max_duration"),
                on_error,
            )
        except ValueError as exc:
            raise ValueError(f"{node.label}: {exc}") from None
        self.paths = [e.audio_filepath for e in self.entries]
        self.files = FileCache()
        self.sample_rate = node.arg("sample_rate")
        self.downmix = node.arg("downmix")
        self.dtype = np.dtype(to_dtype(node.arg("dtype")))
        self.outputs = [k for k in ("read_sample_rate", "read_text", "read_idxs") if node.arg(k)]
        names = [f"{e.index}:{storage.basename(e.audio_filepath)}" for e in self.entries]
        self.start(node, pipeline.batch_size, len(self.entries), names, on_error)

    def read(self, index: int) -> list[Any]:
        entry = self.entries[index]
        if entry.error is not None:
            raise RecordError(entry.error)
        encoded = self.files.read(entry.audio_filepath)
        try:
            audio, rate = decode_audio(
                encoded, max(self.sample_rate, 0.0), self.downmix, self.dtype
            )
        except ValueError as exc:
            raise RecordError(f"{entry.audio_filepath!r}: {exc}") from None
        if entry.offset > 0 or entry.duration > 0:
            first = round(entry.offset * rate)
            end = first + round(entry.duration * rate) if entry.duration > 0 else len(audio)
            audio = np.ascontiguousarray(audio[first:end])
        out: list[Any] = [audio]
        if "read_sample_rate" in self.outputs:
            out.append(np.array(rate, np.float32))
        if "read_text" in self.outputs:
            out.append(np.frombuffer(entry.text.encode("utf-8"), np.uint8).copy())
        if "read_idxs" in self.outputs:
            out.append(np.array([entry.index], np.int64))
        return out

    def empty(self) -> list[Any]:
        shape = (0,) if self.downmix else (0, 1)
        out: list[Any] = [np.zeros(shape, self.dtype)]
        if "read_sample_rate" in self.outputs:
            out.append(np.array(0, np.float32))
        if "read_text" in self.outputs:
            out.append(np.zeros(0, np.uint8))
        if "read_idxs" in self.outputs:
            out.append(np.zeros(1, np.int64))
        return out
