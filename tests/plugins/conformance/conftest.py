"""The conformance suite runs against the framework named by ``--framework``, through an adapter."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest


class Adapter:
    """What the suite needs from a plugin; subclasses fill in one framework."""

    name = ""
    # whether a dense CPU batch becomes a tensor sharing the TensorList's memory
    zero_copy = False

    def __init__(self) -> None:
        self.module = __import__(f"chute.{self.name}", fromlist=["DataIterator"])

    def iterator(self, pipelines: Any, output_map: list[str], **kw: Any) -> Any:
        """The plugin's DataIterator."""
        return self.module.DataIterator(pipelines, output_map, **kw)

    def convert(self, iterator: Any, batch: Any) -> Any:
        """One TensorList through the iterator's conversion to a framework tensor."""
        return iterator.convert(batch, "x")

    def unpack(self, item: Any) -> list[Any]:
        """One step of the iterator as a list of chute.Batch dicts (one per pipeline)."""
        return item

    def to_numpy(self, value: Any) -> Any:
        """A framework tensor (or a list of them, for ragged outputs) as NumPy."""
        if isinstance(value, list):
            return [self.to_numpy(v) for v in value]
        return self.tensor_to_numpy(value)

    def tensor_to_numpy(self, tensor: Any) -> np.ndarray:
        raise NotImplementedError

    def data_pointer(self, tensor: Any) -> int:
        """Address of the tensor's first element in host memory."""
        raise NotImplementedError


class TorchAdapter(Adapter):
    name = "torch"
    zero_copy = True

    def tensor_to_numpy(self, tensor: Any) -> np.ndarray:
        return tensor.cpu().numpy()

    def data_pointer(self, tensor: Any) -> int:
        return tensor.data_ptr()


class TFAdapter(Adapter):
    name = "tf"
    # tf.experimental.dlpack.from_dlpack on CPU aliases suitably aligned host memory
    zero_copy = True

    def tensor_to_numpy(self, tensor: Any) -> np.ndarray:
        return tensor.numpy()

    def data_pointer(self, tensor: Any) -> int:
        return tensor.__array__().ctypes.data


class PaddleAdapter(Adapter):
    name = "paddle"
    zero_copy = True

    def tensor_to_numpy(self, tensor: Any) -> np.ndarray:
        return tensor.cpu().numpy()

    def data_pointer(self, tensor: Any) -> int:
        return tensor.data_ptr()


class JaxAdapter(Adapter):
    name = "jax"
    zero_copy = True

    def convert(self, iterator: Any, batch: Any) -> Any:
        # the jax iterator converts per step (it places each pipeline on its device)
        return self.module.to_jax(batch)

    def unpack(self, item: Any) -> list[Any]:
        # the jax iterator yields one dict (pipelines joined into global arrays)
        return [item]

    def tensor_to_numpy(self, tensor: Any) -> np.ndarray:
        return np.asarray(tensor)

    def data_pointer(self, tensor: Any) -> int:
        return tensor.unsafe_buffer_pointer()


ADAPTERS = {a.name: a for a in (TorchAdapter, TFAdapter, PaddleAdapter, JaxAdapter)}


@pytest.fixture(scope="session")
def adapter(request: pytest.FixtureRequest) -> Adapter:
    """The adapter of the framework under test; the suite is skipped without --framework."""
    name = request.config.getoption("--framework")
    if name is None:
        pytest.skip("the plugin conformance suite needs --framework=torch|tf|paddle|jax")
    if name not in ADAPTERS:
        raise pytest.UsageError(f"--framework must be one of {sorted(ADAPTERS)}, got {name!r}")
    pytest.importorskip({"tf": "tensorflow"}.get(name, name))
    return ADAPTERS[name]()
