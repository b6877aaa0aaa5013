"""fn.readers.webdataset: samples of webdataset tar shards, one output per extension set."""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import OpNode
from chute.graph.passes.hints import NO_HINTS, NodeHints
from chute.graph.schema import REQUIRED, Arg, Schema
from chute.graph.spec import Spec
from chute.ops.readers import wds_format
from chute.ops.readers.ranges import RANGE_ARGS, RangeSource, Record
from chute.ops.readers.records import as_path_list, check_record_args
from chute.runtime.operator import Operator
from chute.runtime.registry import register
from chute.types import to_dtype

# DALI's supported output types (webdataset_loader.h)
SUPPORTED_DTYPES = tuple(
    np.dtype(t)
    for t in (
        np.uint8,
        np.uint16,
        np.uint32,
        np.uint64,
        np.int8,
        np.int16,
        np.int32,
        np.int64,
        np.float16,
        np.float32,
        np.float64,
    )
)
MISSING = ("empty", "skip", "error")


@register
class WebdatasetReader(Operator):
    """Reads samples of webdataset tar archives: one output per entry of ``ext``.

    Members of a tar sharing a basename form a sample; ``ext`` lists, per output,
    the extensions that feed it (``"jpg;png"``: either). ``dtypes`` gives each
    output's type (default uint8; a component whose size is not a multiple of the
    type's size is an error). ``missing_component_behavior``: "empty" (or "") gives
    an empty array for an output no component feeds, "skip" leaves such samples
    out of the dataset, "error" raises. ``index_paths`` lists DALI ``wds2idx``
    index files, one per archive; without them the archives' headers are scanned
    (only the 512-byte headers are read). A truncated member or a corrupt header
    raises naming the archive and offset, or is skipped with a report under
    ``on_error="skip"``.
    """

    kind = "source"
    schema = Schema(
        name="readers.webdataset",
        num_outputs=1,
        args=(
            Arg("paths", "any", REQUIRED, "Tar archive(s) of the dataset.", per_sample=False),
            Arg("ext", "any", REQUIRED, "Per output: extensions, ';'-separated.", per_sample=False),
            Arg(
                "index_paths",
                "any",
                None,
                "wds2idx index file(s), one per archive (default: scan the archives).",
                per_sample=False,
            ),
            Arg("dtypes", "any", None, "Output types (default uint8).", per_sample=False),
            Arg(
                "missing_component_behavior",
                "str",
                "",
                "'empty' (or ''), 'skip' or 'error': a sample with no component for an output.",
                per_sample=False,
            ),
            Arg(
                "case_sensitive_extensions",
                "bool",
                True,
                "Match extensions case-sensitively.",
                per_sample=False,
            ),
            *RANGE_ARGS,
        ),
    )

    def num_outputs(self, args: dict[str, Any], num_inputs: int = 0) -> int:
        ext = args["ext"]
        return 1 if isinstance(ext, str) else len(ext)

    def check_args(self, args: dict[str, Any], arg_inputs: dict) -> None:
        op = self.schema.display_name
        args["paths"] = as_path_list(op, "paths", args.get("paths"))
        index = as_path_list(op, "index_paths", args.get("index_paths"), required=False)
        if index is not None and len(index) != len(args["paths"]):
            raise ValueError(
                f"{op}: argument 'index_paths' lists {len(index)} file(s) for "
                f"{len(args['paths'])} archive(s); give one index per archive or none"
            )
        args["index_paths"] = index
        ext = args.get("ext")
        ext = [ext] if isinstance(ext, str) else ext
        if (
            not isinstance(ext, (list, tuple))
            or not ext
            or not all(isinstance(e, str) for e in ext)
        ):
            raise TypeError(f"{op}: argument 'ext' must be a string or a list of strings")
        args["ext"] = tuple(ext)
        dtypes = args.get("dtypes")
        if dtypes is None:
            dtypes = [np.dtype(np.uint8)] * len(ext)
        else:
            dtypes = [dtypes] if not isinstance(dtypes, (list, tuple)) else dtypes
            try:
                dtypes = [to_dtype(d) for d in dtypes]
            except TypeError as exc:
                raise TypeError(f"{op}: argument 'dtypes': {exc}") from None
        if len(dtypes) != len(ext):
            raise ValueError(
                f"{op}: {len(dtypes)} dtypes for {len(ext)} outputs (ext); give one per output"
            )
        for d in dtypes:
            if d not in SUPPORTED_DTYPES:
                raise TypeError(
                    f"{op}: argument 'dtypes': {d} is not supported; supported: "
                    + ", ".join(str(t) for t in SUPPORTED_DTYPES)
                )
        args["dtypes"] = tuple(dtypes)
        behavior = (args.get("missing_component_behavior") or "empty").lower()
        if behavior not in MISSING:
            raise ValueError(
                f"{op}: argument 'missing_component_behavior' got {behavior!r}; "
                "accepted values: 'empty', 'skip', 'error'"
            )
        args["missing_component_behavior"] = behavior
        check_record_args(op, args)

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [Spec(d, 1, None) for d in node.args["dtypes"]]

    def open(self, node: OpNode, pipeline: Any, hints: NodeHints = NO_HINTS) -> RangeSource:
        paths = list(node.arg("paths"))
        dtypes = node.args["dtypes"]
        on_error = node.args.get("on_error") or pipeline.on_error
        records = list_samples(node, paths)

        def decode(data: np.ndarray, record: Record) -> list[np.ndarray]:
            out = [np.zeros(0, d) for d in dtypes]
            for output, start, size, name in record.parts:
                piece = data[start : start + size]
                if len(piece) < size:
                    raise ValueError(
                        f"truncated tar member {name!r} (data at offset "
                        f"{record.offset + start}): needs {size} bytes, the file holds "
                        f"{len(piece)}"
                    )
                out[output] = piece.view(dtypes[output])
            return out

        def empty() -> list[np.ndarray]:
            return [np.zeros(0, d) for d in dtypes]

        return RangeSource(node, paths, records, pipeline.batch_size, decode, empty, on_error)


def list_samples(node: OpNode, paths: list[str]) -> list[Record]:
    """The dataset: one Record per sample (its byte span and which component feeds each output)."""
    label = node.label
    sensitive = node.arg("case_sensitive_extensions")
    wanted: dict[str, list[int]] = {}
    for output, group in enumerate(node.arg("ext")):
        for ext in dict.fromkeys(group.split(";")):
            wanted.setdefault(ext if sensitive else ext.lower(), []).append(output)
    dtypes = node.args["dtypes"]
    behavior = node.arg("missing_component_behavior")
    index_paths = node.arg("index_paths")
    records: list[Record] = []
    for i, path in enumerate(paths):
        problem = None
        try:
            if index_paths is not None:
                samples = wds_format.read_index(index_paths[i])
                where = f"index {index_paths[i]!r} line "
            else:
                members, problem = wds_format.scan_tar(path)
                samples = wds_format.group_samples(members)
                where = f"archive {path!r} sample "
        except OSError as exc:
            raise OSError(
                f"{label}: cannot read {exc.filename or path!r}: {exc.strerror or exc}"
            ) from None
        except ValueError as exc:
            raise ValueError(f"{label}: {exc}") from None
        for number, sample in enumerate(samples, 1):
            parts, filled = [], set()
            start = min(c.offset for c in sample)
            for c in sample:
                for output in wanted.get(c.ext if sensitive else c.ext.lower(), ()):
                    if output in filled:
                        continue  # the first matching component feeds the output
                    if c.size % dtypes[output].itemsize:
                        raise ValueError(
                            f"{label}: {where}{number} ({c.name or c.ext}): component of "
                            f"{c.size} bytes does not hold whole {dtypes[output]} values"
                        )
                    filled.add(output)
                    parts.append((output, c.offset - start, c.size, c.name))
            if len(filled) < len(dtypes):
                if behavior == "skip":
                    continue
                if behavior == "error":
                    missing = [node.arg("ext")[k] for k in range(len(dtypes)) if k not in filled]
                    raise ValueError(
                        f"{label}: {where}{number} ({sample[0].name or 'unnamed'}) has no "
                        f"component for ext {missing} (missing_component_behavior='error')"
                    )
            end = max((c.offset + c.size for c in sample), default=start)
            records.append(Record(i, start, end - start, sample[0].name, parts=tuple(parts)))
        if problem is not None:
            records.append(Record(i, problem.offset, 0, "", error=problem.message))
    return records
