"""The graph being traced and the stack of pipelines being defined."""

from __future__ import annotations

import threading
from typing import Any

from chute.graph.node import DataNode, OpNode, TracedOperator

_local = threading.local()


class Graph:
    """Operator nodes in trace order (which is a topological order)."""

    # The type of the nodes' outputs (eager mode's graph makes values that hold their batch).
    data_node_type: type[DataNode] = DataNode

    def __init__(self) -> None:
        self.nodes: list[OpNode] = []
        self._names: dict[str, int] = {}

    def add(
        self,
        op: TracedOperator,
        device: str,
        inputs: list[DataNode],
        args: dict[str, Any],
        arg_inputs: dict[str, DataNode],
        name: str | None,
        num_outputs: int,
        output_device: str,
    ) -> OpNode:
        if name is None:
            base = op.base_name(args)
            n = self._names.get(base, 0)
            self._names[base] = n + 1
            name = base if n == 0 else f"{base}_{n}"
        elif any(node.name == name for node in self.nodes):
            raise ValueError(
                f"{op.schema.display_name}: name {name!r} is already used in this pipeline"
            )
        node = OpNode(len(self.nodes), op, device, list(inputs), args, arg_inputs, name)
        node.outputs = [self.data_node_type(node, i, output_device) for i in range(num_outputs)]
        self.nodes.append(node)
        return node


def _stack() -> list:
    if not hasattr(_local, "stack"):
        _local.stack = []
    return _local.stack


def push(pipeline: Any) -> None:
    _stack().append(pipeline)


def pop() -> None:
    _stack().pop()


def current_pipeline() -> Any:
    """The pipeline whose graph is being defined in this thread."""
    stack = _stack()
    if not stack:
        raise RuntimeError(
            "operators can be called only while a pipeline is being defined: inside a "
            "@pipeline_def function, a Pipeline's define_graph(), or a `with pipe:` block"
        )
    return stack[-1]
