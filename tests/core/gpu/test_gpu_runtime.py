"""Parts of chute.gpu that need no GPU: lazy imports, error messages, tables, CPU decode."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from chute.gpu import jpeg, kernels, runtime

SRC = Path(kernels.__file__).resolve().parents[2]  # core/src


def test_import_chute_gpu_loads_no_gpu_library():
    code = "import sys, chute.gpu; print(sorted(m for m in ('cupy', 'nvidia.nvimgcodec', 'torch') if m in sys.modules))"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SRC), env.get("PYTHONPATH", "")) if p)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]"


def test_require_gpu_names_what_is_missing(monkeypatch):
    monkeypatch.setattr(runtime, "_import_cupy", lambda: None)
    with pytest.raises(RuntimeError, match=re.escape("chute[cuda13]")) as e:
        runtime.require_gpu("resize_batch")
    assert "resize_batch needs CuPy" in str(e.value)
    with pytest.raises(RuntimeError, match="CuPy"):
        kernels.resize_batch([], (2, 2))


def test_require_gpu_without_device_or_codec(monkeypatch):
    class FakeCupy:
        class cuda:
            class runtime:
                @staticmethod
                def getDeviceCount():
                    return 1

    monkeypatch.setattr(runtime, "_import_cupy", lambda: FakeCupy)
    monkeypatch.setattr(runtime, "_import_nvimgcodec", lambda: None)
    assert runtime.require_gpu("x") is FakeCupy
    with pytest.raises(RuntimeError, match="device_id=3 is out of range"):
        runtime.require_gpu("x", device_id=3)
    with pytest.raises(RuntimeError, match="nvidia-nvimgcodec"):
        runtime.require_gpu("decode", codec=True)
    monkeypatch.setattr(FakeCupy.cuda.runtime, "getDeviceCount", staticmethod(lambda: 0))
    with pytest.raises(RuntimeError, match="no CUDA device"):
        runtime.require_gpu("x")


def test_sample_table_matches_the_cuda_struct():
    """SAMPLE_DTYPE's field offsets follow struct SampleDesc field by field."""
    src = (SRC / "chute" / "kernels" / "image_batch_common.cu").read_text()
    body = src[src.index("struct SampleDesc {") : src.index("};", src.index("struct SampleDesc {"))]
    sizes = {"unsigned long long": 8, "long long": 8, "int": 4, "float": 4}
    offset, fields = 0, []
    for line in body.splitlines()[1:]:
        decl = line.split("//")[0].strip().rstrip(";")
        if not decl:
            continue
        ctype = next(t for t in sizes if decl.startswith(t + " "))
        for name in decl[len(ctype) :].split(","):
            name = name.strip()
            count = int(name[name.index("[") + 1 : -1]) if "[" in name else 1
            fields.append((name.split("[")[0], offset))
            offset += sizes[ctype] * count
    assert offset == kernels.SAMPLE_DTYPE.itemsize == 112
    numpy_offsets = {k: v[1] for k, v in kernels.SAMPLE_DTYPE.fields.items()}
    window = {"win_y": "window"}
    for name, off in fields:
        key = window.get(name, name)
        if key in numpy_offsets:
            assert numpy_offsets[key] == off, name


def test_build_sample_table_broadcasts_arguments():
    t = kernels.build_sample_table(
        [100, 200],
        np.array([[10, 20, 3], [30, 40, 3]]),
        [60, 120],
        np.zeros((2, 4)),
        np.array([[5, 6], [5, 6]]),
        np.array([0, 90]),
        mirror=[True, False],
        mean=[1, 2, 3],
        std=[[2, 4, 8], [1, 1, 1]],
        fill=7,
    )
    assert t["in_ptr"].tolist() == [100, 200] and t["mirror"].tolist() == [1, 0]
    np.testing.assert_allclose(t["inv_std"][0], [0.5, 0.25, 0.125, 0])
    np.testing.assert_allclose(t["mean"][1], [1, 2, 3, 0])
    np.testing.assert_allclose(t["fill"][0], [7, 7, 7, 0])
    with pytest.raises(ValueError, match="std"):
        kernels.build_sample_table(
            [1],
            np.array([[1, 1, 3]]),
            [3],
            np.zeros((1, 4)),
            np.ones((1, 2)),
            np.zeros(1),
            std=[1, 0, 1],
        )


class _Interface:
    """A GPU image known only by its ``__cuda_array_interface__`` (the general path)."""

    def __init__(self, ptr, shape, strides=None):
        self.__cuda_array_interface__ = {
            "shape": shape,
            "typestr": "|u1",
            "data": (ptr, False),
            "strides": strides,
            "version": 3,
        }


class _NoCupy:
    class ndarray:  # nothing here is a CuPy array
        pass


def test_a_decoders_batch_is_described_at_once_as_sample_by_sample():
    from chute.gpu.codec_api import DeviceImage

    shapes = [(40, 50, 3), (41, 7, 3), (1, 1, 3)]
    images = [DeviceImage(None, 1000 * (k + 1), s) for k, s in enumerate(shapes)]
    arrays, ptrs, table, strides = kernels._describe_inputs(_NoCupy, images)
    assert arrays == images and ptrs == [1000, 2000, 3000]
    assert table.dtype == np.int64 and table.tolist() == [list(s) for s in shapes]
    assert strides == [150, 21, 3]
    # the same images seen through the interface only (one of them padded rows) take the
    # per-sample path and give the same table
    mixed = [images[0], _Interface(2000, (41, 7, 3), (24, 3, 1)), images[2]]
    _, ptrs2, table2, strides2 = kernels._describe_inputs(_NoCupy, mixed)
    assert ptrs2 == ptrs and table2.tolist() == table.tolist() and strides2 == [150, 24, 3]
    gray_and_rgb = [DeviceImage(None, 1, (4, 4, 1)), DeviceImage(None, 2, (4, 4, 3))]
    with pytest.raises(ValueError, match="same number of channels"):
        kernels._describe_inputs(_NoCupy, gray_and_rgb)


def test_sizes_for_shorter_side():
    got = kernels.sizes_for_shorter_side([(375, 500, 3), (500, 333), (256, 256)], 256)
    assert got.tolist() == [[256, 341], [384, 256], [256, 256]]
    assert kernels.sizes_for_shorter_side([(100, 1000)], 50, max_size=200).tolist() == [[20, 200]]


def _jpeg(rgb: np.ndarray) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, "JPEG", quality=92)
    return buf.getvalue()


def test_decode_cpu_roi_and_output_types():
    rng = np.random.default_rng(0)
    rgb = np.clip(rng.normal(128, 30, (41, 57, 3)), 0, 255).astype(np.uint8)
    data = _jpeg(rgb)
    full = jpeg.decode_cpu(data)
    ref = np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))
    assert np.abs(full.astype(int) - ref).max() <= 1  # both libjpeg-turbo
    np.testing.assert_array_equal(jpeg.decode_cpu(data, (5, 7, 20, 30)), full[5:25, 7:37])
    np.testing.assert_array_equal(jpeg.decode_cpu(data, output_type="BGR"), full[..., ::-1])
    assert jpeg.decode_cpu(data, output_type="GRAY").shape == (41, 57, 1)
    # a ROI that leaves the image is clipped to it
    assert jpeg.decode_cpu(data, (-5, 50, 10, 10)).shape == (5, 7, 3)
    with pytest.raises(ValueError, match="output_type"):
        jpeg.decode_cpu(data, output_type="HSV")
    with pytest.raises(ValueError, match="overlap"):
        jpeg.decode_cpu(data, (100, 100, 5, 5))
    with pytest.raises(Exception):  # noqa: B017 - whatever Pillow raises for garbage
        jpeg.decode_cpu(b"garbage")
