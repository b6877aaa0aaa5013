"""Batches: TensorListCPU (host memory) and TensorListGPU (CuPy device memory)."""

from chute.tensors.cpu import TensorListCPU

__all__ = ["TensorListCPU", "TensorListGPU"]


def __getattr__(name: str):
    # TensorListGPU needs CuPy; import it only when asked for.
    if name == "TensorListGPU":
        from chute.tensors.gpu import TensorListGPU

        return TensorListGPU
    raise AttributeError(name)
