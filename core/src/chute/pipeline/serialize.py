"""``Pipeline.serialize()`` / ``Pipeline.deserialize()``: chute's own serialized form.

The form is UTF-8 JSON, versioned, and holds data only: a pipeline read back runs the
same operators with the same arguments and seeds, so its outputs are bit-identical.
DALI's protobuf form is not read or written. The document::

    {
      "format": "chute.pipeline",
      "version": 1,
      "chute": "<the chute version that wrote it>",
      "pipeline": {"batch_size": 8, "num_threads": 4, "seed": 1234, ...},
      "nodes": [
        {"id": 0, "op": "readers.file", "device": "cpu", "name": "Reader",
         "inputs": [], "arg_inputs": {}, "args": {"file_root": "/data", ...}, "outputs": 2},
        {"id": 1, "op": "decoders.image", "device": "cpu", "name": "image",
         "inputs": [[0, 0]], "arg_inputs": {}, "args": {...}, "outputs": 1}
      ],
      "outputs": [[1, 0], [0, 1]]
    }

``op`` is the operator's ``fn`` name (``math``, ``subscript`` and ``transfer`` for what
arithmetic, indexing and ``.gpu()`` trace); ``inputs`` and ``arg_inputs`` name an
earlier node's output as ``[node id, output index]``; ``pipeline`` holds the
constructor's arguments (the seed as drawn). Argument values are encoded as
chute.pipeline.serial_values describes.

What is code stays out: a pipeline with ``python_function`` (or any callable
argument) does not serialize, and the error names the operator and the argument.
``external_source`` keeps its arguments but not its ``source``: the pipeline read back
takes its data from ``feed_input()`` or ``run(name=batch)``, as in DALI.

Reading checks the format, its version, every operator name and every argument (each
node is traced again through its operator, which checks the arguments, and must give
back the arguments that were written).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from chute.graph.node import DataNode, OpNode
from chute.pipeline.options import closest_name
from chute.pipeline.serial_values import decode_value, encode_value
from chute.runtime.registry import operators

__all__ = ["FORMAT", "VERSION", "SerializedForm"]

FORMAT = "chute.pipeline"
VERSION = 1

# Arguments of the constructor that are not written: a checkpoint is state, and a
# pickler is code.
_NOT_WRITTEN = ("checkpoint", "py_callback_pickler")
# external_source arguments that only describe its source (which is code, not written)
_SOURCE_ARGS = ("source", "parallel", "batch", "batch_info", "cycle", "prefetch_queue_depth")
# Common arguments that operators keep with their own
_COMMON_KEPT = ("seed", "on_error")


def operator_classes() -> dict[str, type]:
    """fn name -> class, for every operator a graph may hold (registered or traced by
    DataNode's arithmetic, indexing and transfers, or by chute.auto_aug)."""
    from chute.ops.arithmetic import Arithmetic
    from chute.ops.auto_aug.point_ops import AutoAugPoint
    from chute.ops.tensor_ops import Subscript
    from chute.ops.transfer import Transfer

    classes = {name: entry.op_class for name, entry in operators().items()}
    for cls in (Arithmetic, Subscript, Transfer, AutoAugPoint):
        classes[cls.schema.name] = cls
    return classes


def _node_args(node: OpNode) -> dict[str, Any]:
    """The constant arguments given at trace time (build may add its own notes)."""
    schema = node.schema
    args = {k: v for k, v in node.args.items() if k in schema.arg_index or k in _COMMON_KEPT}
    args.pop("cuda_stream", None)  # accepted for DALI, no effect, may be a stream object
    if getattr(node.op, "feedable", False):
        for key in _SOURCE_ARGS:
            args.pop(key, None)
    return args


def _encode_node(node: OpNode, classes: dict[str, type], ids: dict[int, int]) -> dict[str, Any]:
    op_class = type(node.op)
    if "deprecated" in vars(op_class):  # ops.FileReader: written as the operator it names
        op_class = op_class.__bases__[0]
    name = node.schema.name
    if classes.get(name) is not op_class:
        raise TypeError(
            f"Pipeline.serialize: {node.label} runs {op_class.__module__}.{op_class.__qualname__}, "
            f"which is not the operator registered as {name!r}; only registered operators "
            "serialize"
        )
    where = f"Pipeline.serialize: {node.label}, argument"
    args = {}
    for key, value in _node_args(node).items():
        try:
            args[key] = encode_value(value, f"{where} {key!r}")
        except TypeError as exc:
            if name == "python_function" and key == "function":
                raise TypeError(
                    f"Pipeline.serialize: {node.label} calls a Python function, which is code: "
                    "a serialized pipeline holds only data, so a pipeline with "
                    "python_function cannot be serialized (define it in Python instead)"
                ) from None
            raise TypeError(str(exc)) from None
    return {
        "id": ids[node.id],
        "op": name,
        "device": node.device,
        "name": node.name,
        "inputs": [[ids[d.producer.id], d.index] for d in node.inputs],
        "arg_inputs": {k: [ids[d.producer.id], d.index] for k, d in node.arg_inputs.items()},
        "args": args,
        "outputs": len(node.outputs),
    }


def write_document(
    nodes: list[OpNode], outputs: list[DataNode], options: dict[str, Any], version: str
) -> bytes:
    """The serialized form of a traced graph and the pipeline's options (UTF-8 JSON)."""
    classes = operator_classes()
    ids = {node.id: i for i, node in enumerate(nodes)}
    pipeline = {
        key: encode_value(value, f"Pipeline.serialize: the pipeline argument {key!r}")
        for key, value in options.items()
        if key not in _NOT_WRITTEN
    }
    document = {
        "format": FORMAT,
        "version": VERSION,
        "chute": version,
        "pipeline": pipeline,
        "nodes": [_encode_node(node, classes, ids) for node in nodes],
        "outputs": [[ids[d.producer.id], d.index] for d in outputs],
    }
    return json.dumps(document, allow_nan=False, separators=(",", ":")).encode()


def read_document(data: bytes | str) -> dict[str, Any]:
    """The document of a serialized pipeline, its format and version checked."""
    try:
        document = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError):
        document = None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError(
            "Pipeline.deserialize: this is not a pipeline that chute serialized (chute reads "
            f'its own JSON form, "format": "{FORMAT}"; DALI\'s protobuf form is not read)'
        )
    version = document.get("version")
    if not isinstance(version, int) or version < 1:
        raise ValueError(f"Pipeline.deserialize: the format version {version!r} is not valid")
    if version > VERSION:
        raise ValueError(
            f"Pipeline.deserialize: the pipeline was serialized in format version {version} "
            f"(by chute {document.get('chute', '?')}); this chute reads version {VERSION} and "
            "older: upgrade chute"
        )
    for key in ("pipeline", "nodes", "outputs"):
        if key not in document:
            raise ValueError(f"Pipeline.deserialize: the document has no {key!r}")
    return document


def pipeline_options(document: dict[str, Any]) -> dict[str, Any]:
    """The constructor arguments the document holds."""
    return {
        key: decode_value(value, f"Pipeline.deserialize: the pipeline argument {key!r}")
        for key, value in document["pipeline"].items()
    }


def replay(document: dict[str, Any]) -> list[DataNode]:
    """Trace the document's nodes into the pipeline being defined; return its outputs."""
    from chute.graph.trace import current_pipeline

    graph = current_pipeline()._graph
    classes = operator_classes()
    made: list[OpNode] = []

    def output(ref: Any, where: str) -> DataNode:
        ok = isinstance(ref, list) and len(ref) == 2 and all(type(x) is int for x in ref)
        if not ok or not (0 <= ref[0] < len(made) and 0 <= ref[1] < len(made[ref[0]].outputs)):
            raise ValueError(f"Pipeline.deserialize: {where} names {ref!r}, not an earlier output")
        return made[ref[0]].outputs[ref[1]]

    for position, entry in enumerate(document["nodes"]):
        label = f"node {position}"
        entry = _checked_entry(entry, label)
        label = f"node {position} {entry['name']!r}"
        op_name = entry["op"]
        op_class = classes.get(op_name)
        if op_class is None:
            close = closest_name(op_name, list(classes))
            hint = f"; did you mean {close!r}?" if close else ""
            raise ValueError(
                f"Pipeline.deserialize: {label} runs the operator {op_name!r}, which this chute "
                f"does not have{hint}"
            )
        args = {
            key: decode_value(value, f"Pipeline.deserialize: {label}, argument {key!r}")
            for key, value in entry["args"].items()
        }
        inputs = [output(ref, f"{label}, input {i}") for i, ref in enumerate(entry["inputs"])]
        arg_inputs = {
            key: output(ref, f"{label}, argument {key!r}")
            for key, ref in entry["arg_inputs"].items()
        }
        init = {"target": args.get("target")} if op_name == "transfer" else {}
        try:
            op = op_class(device=entry["device"], **init)
            op(*inputs, **args, **arg_inputs, name=entry["name"])
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"Pipeline.deserialize: {label} ({op_name}): {exc}") from None
        if len(graph.nodes) != position + 1:
            raise ValueError(f"Pipeline.deserialize: {label} traced more than one node")
        _check_replayed(graph.nodes[-1], entry, label)
        made.append(graph.nodes[-1])
    return [output(ref, f"output {i}") for i, ref in enumerate(document["outputs"])]


_ENTRY_TYPES = {
    "op": str,
    "device": str,
    "name": str,
    "inputs": list,
    "arg_inputs": dict,
    "args": dict,
    "outputs": int,
}


def _checked_entry(entry: Any, label: str) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise ValueError(f"Pipeline.deserialize: {label} is not a node entry")
    for key, kind in _ENTRY_TYPES.items():
        if not isinstance(entry.get(key), kind):
            raise ValueError(
                f"Pipeline.deserialize: {label} needs {key!r} ({kind.__name__}), "
                f"got {entry.get(key)!r}"
            )
    return entry


def _check_replayed(node: OpNode, entry: dict[str, Any], label: str) -> None:
    """The operator must give back what was written: the same arguments and outputs."""
    where = f"Pipeline.deserialize: {label}"
    got = {k: encode_value(v, where) for k, v in _node_args(node).items()}
    for key in sorted(set(got) | set(entry["args"])):
        if got.get(key) != entry["args"].get(key):
            raise ValueError(
                f"{where} ({entry['op']}): argument {key!r} reads back as {got.get(key)!r}, "
                f"not as written ({entry['args'].get(key)!r})"
            )
    if len(node.outputs) != entry["outputs"]:
        raise ValueError(
            f"{where} ({entry['op']}): {len(node.outputs)} outputs, not {entry['outputs']}"
        )


# ---- what Pipeline's methods call -------------------------------------------------------
def serialize_pipeline(pipe: Any, define_graph: Any = None, filename: Any = None) -> bytes:
    """``Pipeline.serialize()``: trace the pipeline if needed, return (and write) its form."""
    if define_graph is not None and not callable(define_graph):
        hint = " (did you mean serialize(filename=...)?)" if isinstance(define_graph, str) else ""
        raise TypeError(f"Pipeline.serialize: define_graph is not callable{hint}")
    if pipe._outputs is None:
        with pipe:
            outputs = (define_graph or pipe.define_graph)()
        pipe.set_outputs(*(outputs if isinstance(outputs, (list, tuple)) else (outputs,)))
    options = dict(pipe._options, seed=pipe.seed)  # the seed as drawn, for the same outputs
    # the package's version (chute/__init__.py, loaded by now; not imported: it is a layer up)
    version = getattr(sys.modules.get("chute"), "__version__", "unknown")
    data = write_document(pipe._graph.nodes, pipe._outputs, options, version)
    if filename is not None:
        with open(filename, "wb") as f:
            f.write(data)
    return data


def read_serialized(serialized_pipeline: Any, filename: Any) -> dict[str, Any]:
    """The checked document from exactly one of ``serialized_pipeline`` and ``filename``."""
    if (serialized_pipeline is None) == (filename is None):
        raise ValueError(
            "Pipeline.deserialize: give exactly one of serialized_pipeline and filename"
        )
    if filename is not None:
        with open(filename, "rb") as f:
            serialized_pipeline = f.read()
    return read_document(serialized_pipeline)


def define_from(pipe: Any, document: dict[str, Any]) -> None:
    """Trace the document's graph into ``pipe`` (not built, nothing traced yet) and build it."""
    if pipe._built or pipe._graph.nodes:
        raise RuntimeError("Pipeline.deserialize: the pipeline already has a graph")
    with pipe:
        outputs = replay(document)
    pipe.set_outputs(*outputs)
    pipe.build()


class SerializedForm:
    """Pipeline's ``serialize()``, ``deserialize()`` and ``deserialize_and_build()`` (a mixin)."""

    def serialize(self, define_graph: Any = None, filename: str | None = None) -> bytes:
        """The pipeline's definition in chute's serialized form (versioned UTF-8 JSON); with
        ``filename``, also written there (overwritten).

        The form holds operators, arguments, names, seeds and the constructor's
        arguments, never code: a pipeline with ``python_function`` does not serialize,
        and an ``external_source`` loses its ``source`` (feed it by name after reading).
        The pipeline's state is not in it (see ``checkpoint()``). DALI's protobuf form
        is not written. ``define_graph`` (deprecated in DALI) traces the graph when the
        pipeline has none yet.
        """
        return serialize_pipeline(self, define_graph, filename)

    @classmethod
    def deserialize(
        cls,
        serialized_pipeline: bytes | str | None = None,
        filename: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """A built pipeline from ``serialize()``'s output (or the file ``filename``).

        ``kwargs`` override the constructor arguments it holds (``batch_size``,
        ``num_threads``, ``device_id``, ...); by default the pipeline gets the serialized
        ones, seed included, and then gives the same outputs as the one serialized.
        Unknown operators, newer format versions and malformed documents raise
        ``ValueError`` naming what is at fault.
        """
        document = read_serialized(serialized_pipeline, filename)
        pipe = cls(**{**pipeline_options(document), **kwargs})
        define_from(pipe, document)
        return pipe

    def deserialize_and_build(self, serialized_pipeline: bytes | str) -> None:
        """Trace ``serialize()``'s output into this pipeline (with its own arguments) and build."""
        define_from(self, read_serialized(serialized_pipeline, None))
