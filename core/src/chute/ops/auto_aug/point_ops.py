"""The fused point operation of the auto_aug augmentations (one node per augmentation).

posterize, solarize, solarize_add, invert, contrast, auto_contrast and equalize map each
uint8 value of a sample through a 256-entry table per channel (see
:mod:`chute.ops.auto_aug.point_kernels`). They used to be traced as 3 to 8 whole-image
arithmetic, reduction and cast nodes each; :func:`point_op` traces one. The operator is
internal: ``chute.auto_aug`` calls it, it has no ``fn`` name.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from chute.graph.node import DataNode, OpNode
from chute.graph.schema import Arg, Schema
from chute.graph.spec import Spec
from chute.ops.auto_aug.point_kernels import KINDS, apply_point
from chute.runtime.operator import ArgView, Operator

__all__ = ["AutoAugPoint", "point_op"]


class AutoAugPoint(Operator):
    """Maps each uint8 value of a sample through the table of an auto_aug point operation."""

    schema = Schema(
        name="auto_aug_point",
        devices=("cpu", "gpu"),
        inputs=("input",),
        args=(
            Arg("kind", "str", "invert", "The operation.", per_sample=False, choices=tuple(KINDS)),
            Arg("param", "float", 0.0, "The sample's parameter (see KINDS)."),
        ),
    )

    def infer(self, node: OpNode, inputs: list[Spec]) -> list[Spec]:
        spec = inputs[0]
        kind = node.arg("kind")
        if spec.dtype is not None and np.dtype(spec.dtype) != np.uint8:
            raise TypeError(f"the {kind} augmentation takes uint8 images, got {spec.dtype}")
        if spec.ndim is not None and spec.ndim not in (2, 3, 4):
            raise ValueError(
                f"the {kind} augmentation takes HWC, HW or FHWC images, got {spec.ndim} dims"
            )
        return [spec]

    def run_sample(self, inputs: tuple, args: ArgView, ctx: Any) -> np.ndarray:
        return apply_point(inputs[0], args["kind"], args["param"])

    def run_gpu(self, inputs: list, args: Any, ctx: Any) -> Any:
        from chute.ops.auto_aug import point_gpu

        return point_gpu.point_batch(inputs, args, ctx)


def point_op(data: DataNode, kind: str, param: Any = None) -> DataNode:
    """Trace the ``kind`` point operation of ``data`` (one node, on the batch's device).

    ``param``: a per-sample DataNode (an argument input: read on the CPU) or a constant;
    None for the kinds that take none.
    """
    if kind not in KINDS:
        raise ValueError(f"unknown point operation {kind!r}; known: {', '.join(KINDS)}")
    kwargs: dict[str, Any] = {"kind": kind}
    if param is not None:
        kwargs["param"] = param
    return AutoAugPoint(device=data.device)(data, **kwargs)
