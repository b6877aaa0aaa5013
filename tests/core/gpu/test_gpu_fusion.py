"""The fused GPU validation path (chute.ops.geometry.gpu_fusion): region decoding + resize-in-the-crop.

The region geometry is checked on the CPU with Pillow, whose antialiased resize the GPU
kernels follow: resizing the crop's window out of the decoded region must give exactly
what resizing it out of the whole image gives. The GPU tests compare the fused pipeline
with the same pipeline unfused (the resized images also returned, so no fusion).
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from chute.graph.passes import DecodeRegion, FusedResizeCrop
from chute.ops.geometry.gpu_fusion import PendingResize, decode_regions
from chute.ops.geometry.resize_ops import Resize
from chute.ops.image.image_ops import CropMirrorNormalize


class _Node:
    """The parts of an OpNode that the region geometry reads."""

    def __init__(self, schema, args):
        self.schema, self.args = schema, args

    def arg(self, name):
        return self.args[name] if name in self.args else self.schema.arg(name).default


def _nodes(shorter=256, crop=(224, 224), pos=(0.5, 0.5)):
    cmn = _Node(
        CropMirrorNormalize.schema, {"crop": crop, "crop_pos_y": pos[0], "crop_pos_x": pos[1]}
    )
    return FusedResizeCrop(_Node(Resize.schema, {"resize_shorter": float(shorter)}), cmn), cmn


@pytest.mark.parametrize(
    "shorter,crop,pos", [(256, (224, 224), (0.5, 0.5)), (160, (128, 100), (0.2, 0.9))]
)
def test_the_region_resamples_like_the_whole_image(shorter, crop, pos):
    rng = np.random.default_rng(1)
    shapes = np.array([[375, 500], [500, 333], [241, 1003], [224, 224], [1200, 900]])
    fused, cmn = _nodes(shorter, crop, pos)
    rois, origins = decode_regions(fused, shapes, np.zeros(len(shapes), bool))
    from chute.ops.geometry.resize_gpu import output_sizes

    sizes = output_sizes(shapes, {"resize_shorter": float(shorter)})
    for i, (h, w) in enumerate(shapes.tolist()):
        assert rois[i] is not None
        y, x, rh, rw = rois[i]
        assert y >= 0 and x >= 0 and y + rh <= h and x + rw <= w
        assert tuple(origins[i]) == (y, x)
        img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        pending = PendingResize(
            None, shapes[i : i + 1], origins[i : i + 1], sizes[i : i + 1], {}, np.uint8, None
        )
        (win,), fits = pending.crop_windows(cmn)
        assert fits
        region = Image.fromarray(img[y : y + rh, x : x + rw])
        wy, wx, wh, ww = (float(v) for v in win)
        got = region.resize((crop[1], crop[0]), Image.BILINEAR, box=(wx, wy, wx + ww, wy + wh))
        # the reference: resize the whole image, then crop (Pillow's own box resize)
        full = Image.fromarray(img).resize((int(sizes[i, 1]), int(sizes[i, 0])), Image.BILINEAR)
        ay = int(np.floor(pos[0] * (sizes[i, 0] - crop[0]) + 0.5))
        ax = int(np.floor(pos[1] * (sizes[i, 1] - crop[1]) + 0.5))
        ref = np.asarray(full)[ay : ay + crop[0], ax : ax + crop[1]].astype(int)
        # Pillow rounds its two passes to uint8; a window resize rounds differently
        assert np.abs(np.asarray(got).astype(int) - ref).max() <= 2


def test_turned_or_too_small_images_decode_whole():
    fused, _ = _nodes(256, (224, 224))
    shapes = np.array([[375, 500], [375, 500], [0, 0]])
    rois, origins = decode_regions(fused, shapes, np.array([False, True, False]))
    assert rois[0] is not None and rois[1] is None and rois[2] is None
    assert origins[1:].tolist() == [[0, 0], [0, 0]]
    fused, _ = _nodes(100, (224, 224))  # the crop does not fit the resized image
    rois, _ = decode_regions(fused, shapes[:1], np.array([False]))
    assert rois == [None]


try:
    import cupy

    _GPU = cupy.cuda.runtime.getDeviceCount() > 0
except Exception:  # no CuPy, no driver or no device
    _GPU = False
gpu = pytest.mark.skipif(not _GPU, reason="no CUDA device")


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    root = tmp_path_factory.mktemp("val")
    rng = np.random.default_rng(0)
    for i in range(16):
        h, w = int(rng.integers(240, 520)), int(rng.integers(240, 520))
        yy, xx = np.mgrid[0:h, 0:w]
        img = np.stack([xx * 255 // w, yy * 255 // h, (xx * yy) % 251], -1)
        img = np.clip(img + rng.normal(0, 4, img.shape), 0, 255).astype(np.uint8)
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, "JPEG", quality=90)
        (root / "a").mkdir(exist_ok=True)
        (root / "a" / f"{i:02d}.jpg").write_bytes(buf.getvalue())
    return str(root)


def _val(folder, also_resized: bool):
    from chute import fn, pipeline_def, types

    @pipeline_def(batch_size=8, num_threads=2, seed=0, device_id=0)
    def pipe():
        jpegs, labels = fn.readers.file(file_root=folder, name="Reader")
        images = fn.decoders.image(jpegs, device="mixed", output_type=types.RGB)
        resized = fn.resize(images, resize_shorter=256)
        out = fn.crop_mirror_normalize(
            resized, dtype=types.FLOAT16, crop=(224, 224), mean=[128.0], std=[64.0]
        )
        return (out, resized) if also_resized else (out,)

    p = pipe()
    p.build()
    return p


@pytest.mark.gpu
@gpu
def test_fused_val_path_matches_the_unfused_one(folder):
    fused, plain = _val(folder, False), _val(folder, True)
    hints = fused._executor.plan.hints
    nodes = {n.schema.name: n for n in fused._executor.plan.nodes}
    crop = FusedResizeCrop(nodes["resize"], nodes["crop_mirror_normalize"])
    assert hints.get(nodes["resize"].id, FusedResizeCrop) == crop
    assert hints.get(nodes["decoders.image"].id, DecodeRegion) == DecodeRegion(crop)
    plain_nodes = {n.schema.name: n for n in plain._executor.plan.nodes}
    assert plain._executor.plan.hints.get(plain_nodes["resize"].id, FusedResizeCrop) is None
    for _ in range(2):
        (a,) = fused.run()
        b, _ = plain.run()
        x = a.as_cpu().as_array().astype(np.float32) * 64
        y = b.as_cpu().as_array().astype(np.float32) * 64
        assert x.shape == y.shape == (8, 3, 224, 224)
        diff = np.abs(x - y)  # pixel levels: rounding of the resize, ROI decoding's IDCT
        assert diff.mean() < 0.6, diff.mean()
        assert np.percentile(diff, 99.9) < 4, np.percentile(diff, 99.9)
    fused.close()
    plain.close()
