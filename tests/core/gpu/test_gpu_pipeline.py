"""The GPU path inside pipelines: mixed decoding and GPU operators agree with the CPU path."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from chute import Iterator, LastBatchPolicy

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")
pytest.importorskip("nvidia.nvimgcodec")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("jpegs")
    rng = np.random.default_rng(0)
    for i in range(24):
        h, w = int(rng.integers(240, 400)), int(rng.integers(240, 400))
        yy, xx = np.mgrid[0:h, 0:w]
        img = np.stack([(xx * 255 // w), (yy * 255 // h), ((xx + yy) * 127 // (h + w))], -1)
        img = np.clip(img + rng.normal(0, 6, img.shape), 0, 255).astype(np.uint8)
        d = root / f"c{i % 3}"
        d.mkdir(exist_ok=True)
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, "JPEG", quality=92)
        (d / f"{i}.jpg").write_bytes(buf.getvalue())
    return str(root)


def _batches(preset, folder, device):
    from chute.tools.benchmark.pipelines import PRESETS

    pipe = PRESETS[preset](folder, 8, 4, device, seed=3)
    it = Iterator(
        pipe, ["data", "label"], reader_name="Reader", last_batch_policy=LastBatchPolicy.DROP
    )
    out = [(b["data"], b["label"]) for (b,) in it]
    return pipe, out


@pytest.mark.parametrize("preset", ["train", "val"])
def test_gpu_pipeline_matches_cpu_pipeline(folder, preset):
    from chute.tensors.gpu import TensorListGPU
    from chute.tools.benchmark.pipelines import STD

    cpu_pipe, cpu = _batches(preset, folder, "cpu")
    gpu_pipe, gpu = _batches(preset, folder, "gpu")
    assert len(cpu) == len(gpu) == 3
    std = np.asarray(STD, np.float32).reshape(1, 3, 1, 1)
    for (xc, lc), (xg, lg) in zip(cpu, gpu):
        assert isinstance(xg, TensorListGPU) and xg.layout() == "CHW" and xg.dtype == np.float16
        np.testing.assert_array_equal(lc.as_array(), lg.as_cpu().as_array())
        a = xc.as_array().astype(np.float32) * std
        b = xg.as_cpu().as_array().astype(np.float32) * std
        diff = np.abs(a - b)  # in pixel levels: decode (IDCT) and resampling differ slightly
        assert diff.mean() < 1.5, diff.mean()
        assert np.percentile(diff, 99) < 8, np.percentile(diff, 99)
    cpu_pipe.close()
    gpu_pipe.close()


def test_gpu_batch_zero_copy_into_torch_and_cupy(folder):
    torch = pytest.importorskip("torch")
    pipe, batches = _batches("train", folder, "gpu")
    x = batches[0][0]
    t = torch.from_dlpack(x)
    assert t.is_cuda and t.shape == (8, 3, 224, 224) and t.dtype == torch.float16
    assert t.data_ptr() == x.as_array().data.ptr
    c = cp.from_dlpack(x)
    assert c.data.ptr == x.as_array().data.ptr
    pipe.close()


def test_gpu_ops_without_device_id_fail_clearly(folder):
    from chute import fn, pipeline_def

    @pipeline_def(batch_size=2, num_threads=1, seed=0)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=folder)
        return fn.decoders.image(jpegs, device="mixed")

    with pytest.raises(ValueError, match="device_id is None"):
        pipe().build()


def test_gpu_decoders_open_the_files_themselves(tmp_path):
    """readers.file hands the mixed decoder paths: JPEGs decode from them, a PNG falls back
    to the CPU from its path, and a file gone since listing fails naming the file."""
    from chute import fn, pipeline_def

    rng = np.random.default_rng(1)
    images = [rng.integers(0, 256, (40 + 8 * i, 56, 3), dtype=np.uint8) for i in range(3)]
    paths = []
    for i, (img, fmt) in enumerate(zip(images, ["JPEG", "PNG", "JPEG"])):
        paths.append(str(tmp_path / f"{i}.{fmt.lower()}"))
        Image.fromarray(img).save(paths[-1], fmt, quality=95)

    def decoded(files):
        @pipeline_def(batch_size=len(files), num_threads=2, device_id=0, seed=0)
        def pipe():
            jpegs, _ = fn.readers.file(files=files, name="Reader")
            return fn.decoders.image(jpegs, device="mixed")

        p = pipe()
        p.build()
        from chute.graph.passes import ReadInProcesses

        reader = next(n for n in p._plan.nodes if n.schema.name == "readers.file")
        assert p._plan.hints.get(reader.id, ReadInProcesses) is not None
        (out,) = p.run()
        return [cp.asnumpy(out.at(i)) for i in range(len(files))]

    for got, path, img in zip(decoded(paths), paths, images):
        ref = np.asarray(Image.open(path).convert("RGB")).astype(int)
        assert got.shape == img.shape
        assert np.abs(got.astype(int) - ref).max() <= (0 if path.endswith("png") else 3)

    gone = str(tmp_path / "gone.jpg")
    Image.fromarray(images[0]).save(gone)

    @pipeline_def(batch_size=2, num_threads=2, device_id=0, seed=0)
    def pipe():
        jpegs, _ = fn.readers.file(files=[paths[0], gone], name="Reader")
        return fn.decoders.image(jpegs, device="mixed")

    p = pipe()
    p.build()
    import os

    os.remove(gone)
    with pytest.raises(Exception, match="gone.jpg"):
        p.run()


@pytest.mark.parametrize("policy", [LastBatchPolicy.PARTIAL, LastBatchPolicy.FILL])
def test_mixed_decoding_skips_bad_samples_and_keeps_batches_aligned(tmp_path, policy):
    """on_error="skip" with GPU decoding: corrupt files are reported and replaced, every good
    file comes once per epoch, and each image stays with its own path (labels and paths
    move with the decoded images)."""
    from chute import fn, pipeline_def

    (tmp_path / "cls").mkdir()
    good = []
    for i in range(7):
        good.append(str(tmp_path / "cls" / f"good{i}.jpg"))
        Image.fromarray(np.full((16, 24, 3), 20 + i * 30, np.uint8)).save(good[-1], quality=95)
    (tmp_path / "cls" / "empty.jpg").write_bytes(b"")
    (tmp_path / "cls" / "text.jpg").write_bytes(b"hello, not an image")

    @pipeline_def(batch_size=4, num_threads=2, device_id=0, seed=0, on_error="skip")
    def pipe():
        data, _ = fn.readers.file(file_root=str(tmp_path), random_shuffle=True, name="R")
        image = fn.decoders.image(data, device="mixed")
        return image, fn.get_property(data, key="source_info")

    p = pipe()
    it = Iterator(p, ["image", "path"], reader_name="R", last_batch_policy=policy)
    for _ in range(2):
        seen = []
        for (b,) in it:
            paths = [str(b["path"].at(i)) for i in range(len(b["path"]))]
            images = b["image"].as_cpu()
            for k, path in enumerate(paths):  # each image is the one its path names
                level = 20 + 30 * int(path.rsplit("good", 1)[1].split(".")[0])
                assert abs(int(np.asarray(images.at(k)).mean()) - level) <= 3, path
            seen += paths[: b.real]
        assert sorted(seen) == good
        it.reset()
    reported = sorted(e["path"].rsplit("/", 1)[1] for e in p.errors())
    assert reported == ["empty.jpg", "empty.jpg", "text.jpg", "text.jpg"]
    p.close()


def _windows_pipe(folder, device, crop=(100, 120)):
    from chute import fn, pipeline_def

    @pipeline_def(batch_size=6, num_threads=2, seed=5, device_id=0)
    def pipe():
        jpegs, _ = fn.readers.file(file_root=folder, name="Reader")
        cropped = fn.decoders.image_crop(
            jpegs, device=device, crop=crop, crop_pos_x=fn.random.uniform(range=(0.0, 1.0))
        )
        sliced = fn.decoders.image_slice(
            jpegs, device=device, rel_start=(0.1, 0.2), rel_shape=(0.5, 0.6)
        )
        return cropped, sliced

    p = pipe()
    p.build()
    return p


def test_mixed_crop_and_slice_decoders_match_the_cpu_ones(folder):
    from chute.tensors.gpu import TensorListGPU

    gpu, cpu = _windows_pipe(folder, "mixed"), _windows_pipe(folder, "cpu")
    for _ in range(2):
        for g, c in zip(gpu.run(), cpu.run()):
            assert isinstance(g, TensorListGPU)
            g = g.as_cpu()
            for i in range(len(c)):
                a, b = g.at(i).astype(int), c.at(i).astype(int)
                assert a.shape == b.shape
                assert np.abs(a - b).mean() < 1.5  # IDCT and upsampling differ slightly
    gpu.close()
    cpu.close()


def test_mixed_crop_that_leaves_the_image_names_the_sample(folder):
    pipe = _windows_pipe(folder, "mixed", crop=(1000, 1000))
    with pytest.raises(Exception, match=r"sample 0 .*does not fit"):
        pipe.run()
    pipe.close()
