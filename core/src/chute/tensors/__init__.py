"""Batches: TensorListCPU (host memory) and TensorListGPU (CuPy device memory)."""

from chute.tensors.cpu import TensorListCPU

__all__ = ["TensorListCPU"]
