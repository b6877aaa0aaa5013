"""Copies between host and GPU memory: ``.gpu()`` and ``.cpu()`` on DataNodes."""

from __future__ import annotations

from typing import Any

from chute.graph.node import DataNode, OpNode, bind_node_operator
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.runtime.operator import Operator


class Transfer(Operator):
    """Moves a batch to ``target`` ("gpu" or "cpu")."""

    kind = "batch"
    lane_safe = True
    schema = Schema(
        name="transfer",
        inputs=("input",),
        args=(
            Arg("target", "str", "gpu", "Destination.", per_sample=False, choices=("gpu", "cpu")),
        ),
        devices=("mixed", "gpu"),
    )

    def __init__(self, target: str, **kwargs: Any):
        super().__init__(**kwargs)
        self.target = target

    def output_device(self, device: str) -> str:
        return self.target

    def base_name(self, args: dict[str, Any]) -> str:
        return f"to_{self.target}"

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        return [inputs[0]]

    def run_gpu(self, inputs: list[Any], args: Any, ctx: Any) -> Any:
        from chute.tensors.gpu import TensorListGPU

        (value,) = inputs
        if self.target == "gpu":
            return TensorListGPU.from_host(value, None, ctx.stream, ctx.device_id)
        host = value.as_cpu()
        return [host.at(i) for i in range(len(host))]


def to_device(x: DataNode, target: str) -> DataNode:
    """Trace a copy of ``x`` to ``target`` (no-op when it is there already)."""
    if x.device == target:
        return x
    device = "mixed" if target == "gpu" else "gpu"
    return Transfer(target, device=device)(x, target=target)


bind_node_operator("to_device", to_device)
