"""The graph being traced and the stack of pipelines being defined."""

from __future__ import annotations

import threading
from typing import Any

from chute.graph.node import DataNode, OpNode, TracedOperator, _node_operator
from chute.graph.scope import Scope, ancestors

_local = threading.local()


class Graph:
    """Operator nodes in trace order (which is a topological order)."""

    # The type of the nodes' outputs (eager mode's graph makes values that hold their batch).
    data_node_type: type[DataNode] = DataNode

    def __init__(self) -> None:
        self.nodes: list[OpNode] = []
        self._names: dict[str, int] = {}
        # The branch being traced (chute.graph.conditional sets it); None: the whole batch.
        self.scope: Scope | None = None
        # (producer id, output index, id(scope)) -> the value split into that scope
        self._splits: dict[tuple[int, int, int], DataNode] = {}

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
        scope = self.scope
        if op.kind == "source":
            scope = None  # sources read whole batches; their values are split into branches
        elif op.kind not in ("split", "merge"):  # those two cross scopes by design
            inputs = [self.bring_into(x, scope) for x in inputs]
            arg_inputs = {k: self.bring_into(v, scope) for k, v in arg_inputs.items()}
        node = OpNode(len(self.nodes), op, device, list(inputs), args, arg_inputs, name)
        node.scope = scope
        node.outputs = [self.data_node_type(node, i, output_device) for i in range(num_outputs)]
        self.nodes.append(node)
        return node

    def bring_into(self, value: DataNode, scope: Scope | None) -> DataNode:
        """``value`` as seen inside ``scope``: split into each branch between its scope and
        ``scope`` (once per value and branch). A value of a branch used outside it (not
        merged) raises a ValueError naming both."""
        origin = value.producer.scope
        if origin is scope:
            return value
        chain = ancestors(scope)
        if origin is not None and origin not in chain:
            raise ValueError(
                f"{value.name} was computed in {origin.label} and is used outside it; a "
                "value leaves a branch only through a variable assigned in every branch "
                "of the conditional"
            )
        inner = chain[: chain.index(origin)] if origin is not None else chain
        split = _node_operator("split")
        for branch in reversed(inner):
            key = (value.producer.id, value.index, id(branch))
            if key not in self._splits:
                node = self.add_crossing(
                    split,
                    value.device,
                    [value, branch.predicate],
                    {"branch": branch.branch, "where": branch.where},
                    branch,
                )
                self._splits[key] = node.outputs[0]
            value = self._splits[key]
        return value

    def add_crossing(
        self,
        op: TracedOperator,
        device: str,
        inputs: list[DataNode],
        args: dict[str, Any],
        scope: Scope | None,
    ) -> OpNode:
        """Add a split or merge node (``op.kind``) that runs in ``scope``; its inputs come
        from the enclosing scope (split) or from the branches (merge)."""
        outer, self.scope = self.scope, scope
        try:
            return self.add(op, device, inputs, args, {}, None, 1, device)
        finally:
            self.scope = outer


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
