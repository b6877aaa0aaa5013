"""chute.torch.proxy: a pipeline in the main process behind torch DataLoader workers."""

from __future__ import annotations

import io
import os

import numpy as np
import pytest
import torch
from PIL import Image
from test_proxy_helpers import FileBytesDataset, KeywordDataset

from chute import fn, pipeline_def, types
from chute.torch import proxy

BATCH = 4


@pytest.fixture(scope="module")
def jpeg_files(tmp_path_factory):
    root = tmp_path_factory.mktemp("proxy_jpegs")
    rng = np.random.default_rng(5)
    files = []
    for i in range(10):
        img = rng.integers(0, 255, (18 + i, 22 + 2 * i, 3), dtype=np.uint8)
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="JPEG", quality=90)
        path = root / f"{i:02d}.jpg"
        path.write_bytes(buf.getvalue())
        files.append(str(path))
    return files


@pipeline_def(batch_size=BATCH, num_threads=2, seed=3)
def decode_pipe():
    jpegs = fn.external_source(name="jpegs", dtype=types.UINT8, ndim=1)
    images = fn.decoders.image(jpegs, output_type=types.RGB)
    images = fn.resize(images, resize_x=16, resize_y=16)
    return fn.crop_mirror_normalize(
        images, crop=(12, 12), mean=[120.0] * 3, std=[60.0] * 3, output_layout="CHW"
    )


def reference_batches(files):
    """The pipeline alone, fed the files in order."""
    pipe = decode_pipe()
    pipe.build()
    out = []
    for start in range(0, len(files), BATCH):
        chunk = files[start : start + BATCH]
        pipe.feed_input("jpegs", [np.fromfile(f, dtype=np.uint8) for f in chunk])
        (images,) = pipe.run()
        out.append(images.as_array())
    pipe.close()
    return out


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_dataloader_workers_get_the_pipeline_batches(jpeg_files, method):
    expected = reference_batches(jpeg_files)
    pipe = decode_pipe()
    with proxy.Server(pipe) as server:
        dataset = FileBytesDataset(jpeg_files, server.proxy)
        loader = torch.utils.data.DataLoader(
            dataset, batch_size=BATCH, num_workers=2, multiprocessing_context=method
        )
        got = [server.produce_data(batch) for batch in loader]
    pipe.close()
    assert len(got) == len(expected) == 3
    for k, ((images, index), want) in enumerate(zip(got, expected)):
        assert isinstance(images, torch.Tensor) and images.shape == (len(want), 3, 12, 12)
        assert index.tolist() == list(range(k * BATCH, k * BATCH + len(want)))
        np.testing.assert_array_equal(images.numpy(), want, err_msg=f"batch {k}")


def test_proxy_dataloader_produces_data_itself_with_keyword_inputs():
    @pipeline_def(batch_size=3, num_threads=1, seed=1)
    def pipe_fn():
        a = fn.external_source(name="a", batch=False)
        b = fn.external_source(name="b", batch=False)
        return a + 1, b * 2

    pipe = pipe_fn()
    with proxy.Server(pipe) as server:
        loader = proxy.DataLoader(
            server, KeywordDataset(7, server.proxy), batch_size=3, num_workers=2
        )
        batches = list(loader)
    pipe.close()
    assert len(batches) == 3
    seen = []
    for batch in batches:
        a, b = batch["out"]
        seen += a[:, 0].tolist()
        assert (b[:, 0] == b[:, 1]).all()
        np.testing.assert_array_equal(b[:, 0].numpy() * 5, a[:, 0].numpy() - 1)
        assert os.getpid() not in batch["pid"].tolist()  # the samples came from workers
    assert seen == [10 * i + 1 for i in range(7)]


def test_proxy_in_the_main_process_and_input_errors():
    @pipeline_def(batch_size=2, num_threads=1, seed=1)
    def pipe_fn():
        return fn.external_source(name="x") * 3

    pipe = pipe_fn()
    with proxy.Server(pipe) as server:
        refs = [server.proxy(np.array([1, 2])), server.proxy(np.array([3, 4]))]
        out = server.produce_data(refs)
        with pytest.raises(TypeError, match="no input 'y'"):
            server.proxy(y=1)
        with pytest.raises(TypeError, match="missing pipeline inputs"):
            server.proxy()
    pipe.close()
    assert out.tolist() == [[3, 6], [9, 12]]


def test_batches_larger_than_the_pipeline_are_refused():
    @pipeline_def(batch_size=2, num_threads=1, seed=1)
    def pipe_fn():
        return fn.external_source(name="x") + 0

    pipe = pipe_fn()
    with proxy.Server(pipe, timeout=20) as server:
        refs = [server.proxy(np.array([i])) for i in range(3)]
        with pytest.raises(ValueError, match="larger than the pipeline's batch_size=2"):
            server.produce_data(refs)
    pipe.close()


def test_torch_python_function_gets_tensors():
    from chute.torch import fn as torch_fn

    seen = []

    def double(t):
        seen.append(type(t))
        return t * 2

    @pipeline_def(batch_size=2, num_threads=1, seed=1)
    def pipe_fn():
        x = fn.external_source(source=lambda: [np.array([1.0, 2.0]), np.array([3.0, 4.0])])
        y = torch_fn.torch_python_function(x, function=double, batch_processing=False)
        z = torch_fn.torch_python_function(x, function=lambda ts: [t.sum().reshape(1) for t in ts])
        return y, z

    pipe = pipe_fn()
    y, z = pipe.run()
    pipe.close()
    assert seen and all(t is torch.Tensor for t in seen)
    assert y.as_array().tolist() == [[2.0, 4.0], [6.0, 8.0]]
    assert z.as_array().ravel().tolist() == [3.0, 7.0]


@pytest.mark.gpu
def test_torch_python_function_on_the_gpu_gets_cuda_tensors():
    from chute.torch import fn as torch_fn

    seen = []

    def flip_double(t):
        seen.append(t.device.type)
        return t.flip(0) * 2

    @pipeline_def(batch_size=3, num_threads=1, seed=1, device_id=0)
    def pipe_fn():
        x = fn.external_source(
            source=lambda: [np.arange(4, dtype=np.float32) + i for i in range(3)]
        )
        return torch_fn.torch_python_function(
            x.gpu(), function=flip_double, device="gpu", batch_processing=False
        )

    pipe = pipe_fn()
    (y,) = pipe.run()
    out = y.as_cpu().as_array()
    pipe.close()
    # the pipeline may have computed the next batch ahead (prefetch): whole batches of cuda
    assert seen and len(seen) % 3 == 0 and set(seen) == {"cuda"}, seen
    want = np.stack([(np.arange(4, dtype=np.float32) + i)[::-1] * 2 for i in range(3)])
    np.testing.assert_array_equal(out, want)
