"""Device fallback: a pipeline that asks for the GPU runs on the CPU where there is none.

DALI programs say ``device="mixed"`` / ``"gpu"`` and call ``.gpu()``. On a
machine without a usable GPU, :func:`cpu_graph` copies the traced graph with
every such operator on its CPU backend and every host-to-device copy dropped,
so the pipeline computes the same values on the CPU. The traced graph itself
is left as it is (``pipe.graph()`` still shows what was asked for).
"""

from __future__ import annotations

from chute.graph.node import DataNode, OpNode
from chute.graph.scope import Scope

__all__ = ["cpu_graph"]


def cpu_graph(
    nodes: list[OpNode], outputs: list[DataNode]
) -> tuple[list[DataNode], dict[int, OpNode], list[str]]:
    """Copy ``nodes`` onto the CPU; return the new outputs, old id -> new node, and the moved.

    The moved are labels such as ``"decoders.image (mixed)"``, in graph order. An
    operator without a CPU backend keeps its device (building then says the GPU
    is missing, as it would without the fallback).
    """
    mapped: dict[int, DataNode] = {}  # id(old DataNode) -> new DataNode
    new_nodes: dict[int, OpNode] = {}
    moved: list[str] = []

    def new(x: DataNode) -> DataNode:
        return mapped.get(id(x), x)

    scopes: dict[int, Scope] = {}

    def new_scope(scope: Scope | None) -> Scope | None:
        """The branch with its predicate in the copied graph (a dropped .cpu() moves it)."""
        if scope is None:
            return None
        if id(scope) not in scopes:
            scopes[id(scope)] = Scope(
                new_scope(scope.parent),
                new(scope.predicate),
                scope.branch,
                scope.where,
                scope.cases,
            )
        return scopes[id(scope)]

    for node in nodes:
        devices = node.schema.devices
        if node.schema.name == "transfer":
            # a transfer (.gpu() / .cpu()): on the CPU it is the value itself
            moved.append(f"{node.name} ({node.device})")
            mapped[id(node.outputs[0])] = new(node.inputs[0])
            continue
        inputs = [new(x) for x in node.inputs]
        arg_inputs = {k: new(v) for k, v in node.arg_inputs.items()}
        device = node.device
        if device != "cpu" and "cpu" in devices:
            if node.op.kind not in ("split", "merge"):  # follow their data: not the user's
                moved.append(f"{node.schema.display_name} ({device})")
            device = "cpu"
        copy = OpNode(node.id, node.op, device, inputs, node.args, arg_inputs, node.name)
        copy.scope = new_scope(node.scope)
        copy.outputs = [
            DataNode(copy, i, "cpu" if device == "cpu" else out.device)
            for i, out in enumerate(node.outputs)
        ]
        for old, fresh in zip(node.outputs, copy.outputs):
            mapped[id(old)] = fresh
        new_nodes[node.id] = copy
    return [new(o) for o in outputs], new_nodes, moved
