"""Batches: TensorListCPU (host memory) and TensorListGPU (CuPy device memory)."""

from chute.tensors.cpu import TensorListCPU
from chute.tensors.tensor import TensorCPU

__all__ = ["TensorCPU", "TensorGPU", "TensorListCPU", "TensorListGPU"]


def __getattr__(name: str):
    # TensorListGPU needs CuPy; import it only when asked for.
    if name in ("TensorListGPU", "TensorGPU"):
        from chute.tensors import gpu

        return getattr(gpu, name)
    raise AttributeError(name)
