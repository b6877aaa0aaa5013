"""Per-sample conditionals on the GPU: GPU operators and mixed decoders inside branches,
GPU predicates, empty branches, agreeing with the same pipeline on the CPU."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from chute import fn, pipeline_def, types

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")
pytest.importorskip("nvidia.nvimgcodec")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """16 smooth JPEGs of different sizes in two classes."""
    root = tmp_path_factory.mktemp("cond_jpegs")
    rng = np.random.default_rng(1)
    for i in range(16):
        h, w = int(rng.integers(60, 120)), int(rng.integers(60, 120))
        yy, xx = np.mgrid[0:h, 0:w]
        img = np.stack([xx * 255 // w, yy * 255 // h, (xx + yy) * 127 // (h + w)], -1)
        d = root / f"c{i % 2}"
        d.mkdir(exist_ok=True)
        buf = io.BytesIO()
        Image.fromarray(img.astype(np.uint8)).save(buf, "JPEG", quality=95)
        (d / f"{i}.jpg").write_bytes(buf.getvalue())
    return str(root)


def _host(batch):
    batch = batch.as_cpu() if hasattr(batch, "as_cpu") else batch
    return [np.asarray(batch.at(i)) for i in range(len(batch))]


@pipeline_def(enable_conditionals=True, num_threads=2, seed=5)
def branchy(folder, device, always=None):
    jpegs, labels = fn.readers.file(file_root=folder, name="R")
    decode = "mixed" if device == "gpu" else "cpu"
    coin = fn.random.coin_flip(probability=0.5, dtype=types.BOOL)
    if always is not None:
        coin = labels[0] * 0 == (0 if always else 1)
    if coin:
        images = fn.decoders.image(jpegs, device=decode)
        images = fn.flip(images, horizontal=1, device=device)
        images = fn.resize(images, size=(32, 32), device=device)
    else:
        images = fn.decoders.image(jpegs, device="cpu")
        if device == "gpu":
            images = images.gpu()
        images = fn.resize(images, size=(32, 32), device=device)
        images = fn.brightness(images, brightness=0.5, device=device)
    return images, coin, labels


def _close(a, b):
    diff = np.abs(a.astype(np.int32) - b.astype(np.int32))
    return diff.max() <= 16 and diff.mean() < 2.0  # decoders' IDCT and resampling differ a bit


@pytest.mark.parametrize("always", [None, True, False])
def test_gpu_branches_match_the_cpu_pipeline(folder, always):
    cpu = branchy(folder, "cpu", always, batch_size=8, device_id=None).run()
    gpu = branchy(folder, "gpu", always, batch_size=8, device_id=0).run()
    coins = [bool(c) for c in _host(cpu[1])]
    assert [bool(c) for c in _host(gpu[1])] == coins  # the same draws on both
    if always is None:
        assert 0 < sum(coins) < 8  # both branches ran
    else:
        assert coins == [always] * 8  # one branch is empty
    for a, b in zip(_host(gpu[0]), _host(cpu[0]), strict=True):
        assert a.shape == b.shape == (32, 32, 3)
        assert _close(a, b)


def test_a_gpu_predicate_is_read_on_the_host(folder):
    @pipeline_def(enable_conditionals=True, num_threads=2, seed=5)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=folder, name="R")
        images = fn.decoders.image(jpegs, device="mixed")
        first = labels.gpu()[0]
        if first == 1:  # a GPU DataNode
            out = fn.flip(images, horizontal=1)
        else:
            out = images
        return out, images, labels

    out, images, labels = pipe(batch_size=6, device_id=0).run()
    for o, i, label in zip(_host(out), _host(images), _host(labels), strict=True):
        np.testing.assert_array_equal(o, i[:, ::-1] if label[0] == 1 else i)


def test_a_cpu_value_merged_with_a_gpu_value_moves_to_the_gpu(folder):
    from chute.tensors.gpu import TensorListGPU

    @pipeline_def(enable_conditionals=True, num_threads=2, seed=5)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=folder, name="R")
        images = fn.resize(fn.decoders.image(jpegs), size=(16, 16))
        if labels[0] == 0:
            out = images.gpu() * types.Constant(0, dtype=types.UINT8)  # 0 alone is int32
        else:
            out = images
        return out, images, labels

    out, images, labels = pipe(batch_size=4, device_id=0).run()
    assert isinstance(out, TensorListGPU)
    for o, i, label in zip(_host(out), _host(images), _host(labels), strict=True):
        np.testing.assert_array_equal(o, i * 0 if label[0] == 0 else i)
