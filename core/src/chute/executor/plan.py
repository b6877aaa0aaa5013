"""Build: from the traced graph to an ordered plan of execution steps.

The plan keeps the nodes the outputs need, checks devices, infers every
output's dtype/ndim/layout, and groups the work into steps: one reader step
for the sources, then CPU segments (per-sample operators run sample-major by
the worker pool) and batch-level steps (batch CPU operators, GPU operators,
transfers) in dependency order. The fusion pass's hints (chute.graph.passes) ride
along: the executor hands each node its own in setup/open.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chute.graph.node import DataNode, OpNode
from chute.graph.passes import FusionPlan, plan_fusion
from chute.graph.spec import Spec


@dataclass
class Step:
    """A unit of execution: a CPU segment of per-sample nodes, or one batch-level node."""

    kind: str  # "segment" | "batch" | "gpu" | "split" | "merge"
    nodes: list[OpNode]
    # The branch its nodes run in (chute.graph.scope.Scope); None: the whole batch.
    scope: Any = None


@dataclass
class Plan:
    sources: list[OpNode]
    steps: list[Step]
    outputs: list[DataNode]
    specs: dict[tuple[int, int], Spec]
    nodes: list[OpNode] = field(default_factory=list)
    hints: FusionPlan = field(default_factory=FusionPlan)

    def spec(self, node: DataNode) -> Spec:
        return self.specs[(node.producer.id, node.index)]

    @property
    def uses_gpu(self) -> bool:
        return any(n.device in ("gpu", "mixed") for n in self.nodes)


def _dependencies(node: OpNode) -> list[DataNode]:
    """What a node reads: its inputs, argument inputs and the predicates of its branch."""
    deps = [*node.inputs, *node.arg_inputs.values()]
    scope = node.scope
    while scope is not None:
        deps.append(scope.predicate)
        scope = scope.parent
    return deps


def reachable(outputs: list[DataNode]) -> list[OpNode]:
    """The nodes the outputs depend on, in trace order."""
    seen: dict[int, OpNode] = {}
    todo = [o.producer for o in outputs]
    while todo:
        node = todo.pop()
        if node.id in seen:
            continue
        seen[node.id] = node
        todo.extend(d.producer for d in _dependencies(node))
    return [seen[k] for k in sorted(seen)]


def build_plan(outputs: list[DataNode], preserved: list[OpNode] | None = None) -> Plan:
    """Order, check and type the graph that ``outputs`` need."""
    if not outputs:
        raise ValueError("the pipeline has no outputs: return at least one DataNode")
    for i, out in enumerate(outputs):
        if not isinstance(out, DataNode):
            raise TypeError(
                f"pipeline output {i} is a {type(out).__name__}, not a DataNode (an operator's output)"
            )
    extra = [n.outputs[0] for n in preserved or [] if n.outputs]
    nodes = reachable([*outputs, *extra])
    specs: dict[tuple[int, int], Spec] = {}
    for node in nodes:
        in_specs = [specs[(d.producer.id, d.index)] for d in node.inputs]
        try:
            out_specs = node.op.infer(node, in_specs)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{node.label}: {exc}") from None
        for i, s in enumerate(out_specs):
            specs[(node.id, i)] = s

    hints = plan_fusion(nodes, [*outputs, *extra])

    sources = [n for n in nodes if n.op.kind == "source"]
    rest = [n for n in nodes if n.op.kind != "source"]

    # Hoist every per-sample CPU node that depends only on sources and other
    # such nodes into the first segment, so the common case is one CPU pass.
    first: list[OpNode] = []
    in_first = {n.id for n in sources}
    for node in rest:
        if node.scope is not None:
            continue  # a branch's nodes run after its predicate, on its samples
        if _is_cpu_sample(node) and all(d.producer.id in in_first for d in _dependencies(node)):
            first.append(node)
            in_first.add(node.id)
    steps: list[Step] = [Step("segment", first)] if first else []
    for node in rest:
        if node.id in in_first:
            continue
        if node.op.kind in ("split", "merge"):
            steps.append(Step(node.op.kind, [node], node.scope))
        elif _is_cpu_sample(node):
            if steps and steps[-1].kind == "segment" and steps[-1].scope is node.scope:
                steps[-1].nodes.append(node)
            else:
                steps.append(Step("segment", [node], node.scope))
        else:
            kind = "gpu" if node.device in ("gpu", "mixed") else "batch"
            steps.append(Step(kind, [node], node.scope))
    return Plan(sources, steps, list(outputs), specs, nodes, hints)


def runs_batch_wise(node: OpNode) -> bool:
    """A per-sample CPU node that runs as a batch step (the CPU decoders: cpu_batch_wise)."""
    return node.device == "cpu" and node.op.kind == "sample" and node.op.cpu_batch_wise


def fed_by_user(plan: Any) -> bool:
    """Whether a source of ``plan`` is fed by the user (external_source without ``source``,
    feed_input): there is no later sample to draw, so on_error skip cannot refill from it."""
    return any(getattr(n.op, "feedable", False) and n.arg("source") is None for n in plan.sources)


def _is_cpu_sample(node: OpNode) -> bool:
    return node.device == "cpu" and node.op.kind == "sample" and not node.op.cpu_batch_wise
