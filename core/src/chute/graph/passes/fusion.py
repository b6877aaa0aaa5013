"""The fusion pass: from the graph to each node's typed fusion hints.

Each operator says which hints its node gets from the nodes that read its outputs
(``Operator.fusion_hints``). Readers are asked before their producers, so a producer
sees what its readers were given: a mixed decoder decodes regions only for a resize
that a crop took over (:class:`~chute.graph.passes.hints.DecodeRegion`). The pass
returns a :class:`~chute.graph.passes.hints.FusionPlan`; the nodes are not touched.
"""

from __future__ import annotations

from collections.abc import Sequence

from chute.graph.node import DataNode, OpNode
from chute.graph.passes.hints import FusionPlan, NodeHints

__all__ = ["consumers", "plan_fusion"]


def consumers(
    nodes: Sequence[OpNode], outputs: Sequence[DataNode]
) -> dict[tuple[int, int], list[OpNode] | None]:
    """Who reads each output ``(node id, index)``: the reading nodes, or None where the
    pipeline returns it (the user sees it as it is). Outputs nobody reads are absent."""
    readers: dict[tuple[int, int], list[OpNode] | None] = {}
    for node in nodes:
        for d in [*node.inputs, *node.arg_inputs.values()]:
            readers.setdefault((d.producer.id, d.index), []).append(node)
    for out in outputs:
        readers[(out.producer.id, out.index)] = None
    return readers


def plan_fusion(nodes: Sequence[OpNode], outputs: Sequence[DataNode]) -> FusionPlan:
    """Each node's fusion hints; ``nodes`` in trace order (producers before readers)."""
    readers = consumers(nodes, outputs)
    by_node: dict[int, NodeHints] = {}
    decided = FusionPlan(by_node)  # a view that grows as the pass goes
    for node in reversed(nodes):
        node_readers = [readers.get((node.id, k), []) for k in range(len(node.outputs))]
        hints = tuple(node.op.fusion_hints(node, node_readers, decided))
        if hints:
            if len({type(h) for h in hints}) != len(hints):
                raise ValueError(f"{node.label}: two fusion hints of one type: {hints}")
            by_node[node.id] = NodeHints(hints)
    return FusionPlan(dict(by_node))
