"""Typed fusion hints: what the fusion pass decided for a node, as frozen data.

The fusion pass (:mod:`chute.graph.passes.fusion`) asks each operator which hints
its node gets, given the nodes that read its outputs; the plan carries them, and the
executor hands each node's :class:`NodeHints` to its operator's ``setup`` (and a
source's ``open``). Nothing is written on the graph's nodes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from chute.graph.node import OpNode

__all__ = [
    "NO_HINTS",
    "DecodeRegion",
    "FusedResizeCrop",
    "FusionPlan",
    "Hint",
    "NodeHints",
    "ReadInProcesses",
    "ScaledDecode",
]


class Hint:
    """Base of the fusion hints (each a frozen dataclass)."""

    __slots__ = ()


@dataclass(frozen=True, slots=True)
class ScaledDecode(Hint):
    """A CPU image decoder whose only reader resizes to ``size`` = (height, width).

    The decoder decodes at the smallest DCT scale (1/2, 1/4, 1/8) that keeps the region
    at least that large and hands the resize a ``ScaledRegion`` (the exact region as
    ``roi_window``): the inverse DCT does most of the downscaling, the resize the rest.
    """

    size: tuple[int, int]


@dataclass(frozen=True, slots=True)
class FusedResizeCrop(Hint):
    """A GPU resize whose only reader, a GPU crop_mirror_normalize with a constant crop,
    resamples its crop straight from the resize's input (ops/geometry/gpu_fusion.py).

    The resize hands the crop a ``PendingResize`` instead of writing its images.
    """

    resize: OpNode
    crop: OpNode


@dataclass(frozen=True, slots=True)
class DecodeRegion(Hint):
    """A mixed image decoder read only by a fused resize + crop: it decodes just the
    region that crop reads (widened by the resampling filter's reach)."""

    fused: FusedResizeCrop


@dataclass(frozen=True, slots=True)
class ReadInProcesses(Hint):
    """A file reader whose bytes only GPU ("mixed") decoders use: helper processes read
    the files, so system calls do not hand the GIL around."""


H = TypeVar("H", bound=Hint)


@dataclass(frozen=True, slots=True)
class NodeHints:
    """The hints of one node, at most one of each type."""

    hints: tuple[Hint, ...] = ()

    def get(self, kind: type[H]) -> H | None:
        """The node's hint of type ``kind``, or None."""
        for hint in self.hints:
            if type(hint) is kind:
                return hint  # type: ignore[return-value]
        return None

    def __iter__(self) -> Iterator[Hint]:
        return iter(self.hints)

    def __len__(self) -> int:
        return len(self.hints)


NO_HINTS = NodeHints()


@dataclass(frozen=True)
class FusionPlan:
    """The fusion pass's result: each node's hints, by node id (absent: none)."""

    by_node: Mapping[int, NodeHints] = field(default_factory=dict)

    def of(self, node_id: int) -> NodeHints:
        """The hints of node ``node_id`` (NO_HINTS where the pass gave none)."""
        return self.by_node.get(node_id, NO_HINTS)

    def get(self, node_id: int, kind: type[H]) -> H | None:
        """Node ``node_id``'s hint of type ``kind``, or None."""
        return self.of(node_id).get(kind)
