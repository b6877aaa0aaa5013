"""chute and chute-torch installed from their wheels: `nox -s wheel` runs this file from a
folder outside the source tree, so that nothing here can come from core/src or plugins/."""

from __future__ import annotations

import importlib.resources
import pathlib
import subprocess
import sys

import numpy as np

import chute
import chute.torch
from chute import fn, pipeline_def, types


def _installed(module: object) -> pathlib.Path:
    return pathlib.Path(module.__file__).resolve()


def test_imported_from_the_installed_wheels() -> None:
    for module in (chute, chute.torch):
        path = _installed(module)
        assert "site-packages" in path.parts, f"{module.__name__} comes from {path}"
    # one chute package: the plugin's subpackage sits inside the core's
    assert _installed(chute.torch).parent.parent == _installed(chute).parent


def test_package_data_is_in_the_wheel() -> None:
    files = importlib.resources.files("chute")
    assert (files / "py.typed").is_file()
    # the typed surface: generated operator stubs and the compiled module's stub
    assert (files / "fn" / "__init__.pyi").is_file() and (files / "ops" / "__init__.pyi").is_file()
    assert (files / "fn" / "decoders.pyi").is_file() and (
        files / "runtime" / "_native.pyi"
    ).is_file()
    plugin = importlib.resources.files("chute.torch")  # typed too: its iterators' stubs
    assert (plugin / "py.typed").is_file() and (plugin / "_dali.pyi").is_file()
    kernels = sorted(p.name for p in (files / "kernels").iterdir() if p.name.endswith(".cu"))
    assert "resample.cu" in kernels and "crop_mirror_normalize.cu" in kernels


def test_command_line_entry_point() -> None:
    out = subprocess.run(
        [pathlib.Path(sys.executable).parent / "chute", "--help"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert "demo" in out and "check" in out


@pipeline_def(batch_size=4, num_threads=2, device_id=None, seed=7)
def _pipe():
    x = fn.external_source(
        source=lambda info: np.full((6, 8, 3), info.idx_in_epoch, np.uint8), batch=False
    )
    y = fn.resize(x, size=(4, 4))
    y = fn.crop_mirror_normalize(y, dtype=types.FLOAT, mean=[1.0] * 3, std=[2.0] * 3)
    return y


def test_tiny_pipeline_to_torch() -> None:
    import torch

    pipe = _pipe()
    pipe.build()
    (batch,) = pipe.run()
    array = batch.as_array()
    assert array.shape == (4, 3, 4, 4)  # crop_mirror_normalize gives CHW by default, as DALI
    expected = (np.arange(4, dtype=np.float32) - 1.0) / 2.0
    np.testing.assert_allclose(array.mean(axis=(1, 2, 3)), expected)
    tensor = chute.torch.to_torch(batch)
    assert isinstance(tensor, torch.Tensor)
    np.testing.assert_array_equal(tensor.numpy(), array)


def test_torch_iterator_epochs() -> None:
    loader = chute.torch.DataIterator(_pipe(), ["images"], size=10, auto_reset=True)
    for _ in range(2):
        batches = list(loader)
        assert len(batches) == len(loader) == 3
        assert sum(batch.real for (batch,) in batches) == 10
        assert batches[0][0]["images"].shape == (4, 3, 4, 4)
