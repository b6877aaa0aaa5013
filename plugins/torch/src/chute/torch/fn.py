"""``chute.torch.fn``: DALI's ``nvidia.dali.plugin.pytorch.fn`` namespace (torch_python_function)."""

from __future__ import annotations

from chute.torch.python_function import torch_python_function

__all__ = ["torch_python_function"]
