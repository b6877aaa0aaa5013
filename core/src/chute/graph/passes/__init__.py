"""Graph passes: functions from the traced graph to data the plan carries."""

from chute.graph.passes.fusion import consumers, plan_fusion
from chute.graph.passes.hints import (
    NO_HINTS,
    DecodeRegion,
    FusedResizeCrop,
    FusionPlan,
    Hint,
    NodeHints,
    ReadInProcesses,
    ScaledDecode,
)

__all__ = [
    "NO_HINTS",
    "DecodeRegion",
    "FusedResizeCrop",
    "FusionPlan",
    "Hint",
    "NodeHints",
    "ReadInProcesses",
    "ScaledDecode",
    "consumers",
    "plan_fusion",
]
