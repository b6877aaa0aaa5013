"""fn.io.file.read (paths -> encoded bytes) and fn.get_property (per-sample metadata)."""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import DataNode, OpNode
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.runtime.operator import ArgView, Operator
from chute.runtime.registry import register


@register
class FileRead(Operator):
    """Reads the file named by each sample (a string, or a uint8/int array of its UTF-8 bytes)."""

    schema = Schema(
        name="io.file.read",
        inputs=("filepaths",),
        args=(
            Arg(
                "dont_use_mmap",
                "bool",
                None,
                "False: memory-map files of 16 KiB and more, as DALI does; True or unset: read "
                "them (see readers.file).",
                per_sample=False,
            ),
        ),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [Spec(np.dtype(np.uint8), 1, None)]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        from chute.ops.readers.local_files import read_file

        return read_file(sample_to_str(inputs[0]), args["dont_use_mmap"] is False)


def sample_to_str(x: np.ndarray) -> str:
    """A string sample: a 0-d str array, or the UTF-8 bytes as an integer array (DALI's trick)."""
    if x.dtype.kind in "US":
        value = x.item() if x.ndim == 0 else "".join(x.tolist())
        return value.decode() if isinstance(value, bytes) else value
    if x.dtype.kind in "iu" and x.ndim == 1:
        return bytes(x.astype(np.uint8)).decode("utf-8")
    raise TypeError(f"expected a string sample (a path), got dtype {x.dtype} and shape {x.shape}")


@register
class GetProperty(Operator):
    """A property of each sample: ``key="source_info"`` gives the file path it came from."""

    schema = Schema(
        name="get_property",
        inputs=("input",),
        args=(
            Arg(
                "key",
                "str",
                doc="The property.",
                per_sample=False,
                choices=("source_info", "layout"),
            ),
        ),
    )

    def __call__(self, *inputs: Any, **kwargs: Any) -> Any:
        key = kwargs.get("key", self.init_args.get("key"))
        if key == "source_info" and inputs and isinstance(inputs[0], DataNode):
            producer = inputs[0].producer
            if isinstance(producer.op, FileRead):  # the path is the reader's own input
                return producer.inputs[0]
        return super().__call__(*inputs, **kwargs)

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        node.args["layout"] = inputs[0].layout or ""
        return [Spec(np.dtype(np.str_), 0, None)]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        if args["key"] == "layout":
            return np.array(ctx.node.args["layout"])
        return np.array((ctx.meta or {}).get("source_info", ""))
