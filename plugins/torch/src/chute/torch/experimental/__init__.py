"""DALI's ``nvidia.dali.plugin.pytorch.experimental`` namespace: the DataLoader proxy."""

from __future__ import annotations

from chute.torch.experimental import proxy

__all__ = ["proxy"]
