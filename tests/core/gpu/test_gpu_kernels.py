"""Batched GPU image kernels against CPU references (Pillow, NumPy) on odd sizes.

Tolerances: resampling within 1.5 uint8 levels of Pillow's ``Image.resize(box=...)``
(Pillow rounds its horizontal pass to uint8, the kernel keeps floats); nearest
neighbour and crop/mirror/normalize exact (float32) or within float16 rounding.
"""

from __future__ import annotations

import numpy as np
import pytest

cupy = pytest.importorskip("cupy")
try:
    _N_DEVICES = cupy.cuda.runtime.getDeviceCount()
except Exception:
    _N_DEVICES = 0

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(_N_DEVICES == 0, reason="no CUDA device"),
]

from PIL import Image  # noqa: E402

from chute.gpu.kernels import (  # noqa: E402
    crop_mirror_normalize_batch,
    resize_batch,
    resize_crop_mirror_normalize,
    sizes_for_shorter_side,
)

SHAPES = [(97, 131), (375, 500), (61, 45), (33, 257)]


def smooth_image(rng: np.random.Generator, h: int, w: int, c: int = 3) -> np.ndarray:
    """Smooth random content in [38, 217] (cubic overshoot stays unclipped) plus noise."""
    coarse = rng.integers(0, 256, (h // 8 + 2, w // 8 + 2, c)).astype(np.float32)
    img = np.asarray(
        [
            np.asarray(
                Image.fromarray(coarse[..., k].astype(np.uint8)).resize((w, h), Image.BICUBIC)
            )
            for k in range(c)
        ]
    ).transpose(1, 2, 0)
    img = img * 0.7 + 38 + rng.normal(0, 5, img.shape)
    return np.clip(img, 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def images() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [smooth_image(rng, h, w) for h, w in SHAPES]


@pytest.fixture(scope="module")
def windows() -> np.ndarray:
    return np.array(
        [[3.5, 7.25, 80.2, 101.7], [10, 20, 300, 400], [0, 0, 61, 45], [2.0, 31.5, 29.0, 200.0]],
        np.float32,
    )


PAD = 32  # past every filter's reach in these tests


def pillow_resize(img: np.ndarray, window, out_hw, resample) -> np.ndarray:
    """Pillow's resize of ``window`` (y, x, h, w), over edge-replicated borders: the kernel
    reads a tap past the image's edge as the edge pixel (DALI's rule), Pillow drops it."""
    import cv2

    y, x, h, w = (float(v) for v in window)
    padded = cv2.copyMakeBorder(img, PAD, PAD, PAD, PAD, cv2.BORDER_REPLICATE)
    box = (x + PAD, y + PAD, x + w + PAD, y + h + PAD)
    out = Image.fromarray(padded).resize((out_hw[1], out_hw[0]), resample, box=box)
    return np.asarray(out).astype(np.float32)


@pytest.mark.parametrize("interp,resample", [("linear", Image.BILINEAR), ("cubic", Image.BICUBIC)])
@pytest.mark.parametrize("out_hw", [(224, 224), (37, 53), (8, 300)])
def test_resample_matches_pillow(images, windows, interp, resample, out_hw):
    gpu = [cupy.asarray(a) for a in images]
    out = resize_crop_mirror_normalize(
        gpu, windows, out_hw, dtype=np.float32, layout="HWC", interp=interp
    )
    out = cupy.asnumpy(out)
    for i, img in enumerate(images):
        ref = pillow_resize(img, windows[i], out_hw, resample)
        diff = np.abs(out[i] - ref)
        assert diff.max() <= 1.5, (i, diff.max())
        assert diff.mean() <= 0.4, (i, diff.mean())


def test_big_downscale_is_antialiased(images):
    """A 375x500 -> 23x31 shrink (16x) averages like Pillow, unlike point sampling."""
    gpu = [cupy.asarray(images[1])]
    out = cupy.asnumpy(resize_batch(gpu, (23, 31), dtype=np.float32))[0]
    ref = pillow_resize(images[1], (0, 0, 375, 500), (23, 31), Image.BILINEAR)
    assert np.abs(out - ref).max() <= 1.5
    aliased = cupy.asnumpy(resize_batch(gpu, (23, 31), antialias=False, dtype=np.float32))[0]
    assert np.abs(aliased - ref).max() > 3  # the test can tell the two apart


def test_nearest_is_exact_on_integer_windows(images):
    wins = np.array(
        [[0, 0, 97, 131], [10, 20, 300, 400], [5, 3, 50, 40], [0, 0, 33, 257]], np.float32
    )
    gpu = [cupy.asarray(a) for a in images]
    out = cupy.asnumpy(resize_batch(gpu, (37, 53), interp="nn", windows=wins))
    for i, img in enumerate(images):
        y, x, h, w = wins[i].astype(int)
        iy = y + ((2 * np.arange(37) + 1) * h) // (2 * 37)
        ix = x + ((2 * np.arange(53) + 1) * w) // (2 * 53)
        np.testing.assert_array_equal(out[i], img[iy][:, ix])


def test_identity_window_copies_exactly(images):
    gpu = [cupy.asarray(images[0])]
    out = cupy.asnumpy(resize_batch(gpu, images[0].shape[:2]))
    np.testing.assert_array_equal(out[0], images[0])


def test_fused_rrc_fp16_chw_mirror_normalize(images, windows):
    gpu = [cupy.asarray(a) for a in images]
    mean, std = np.array([124.0, 116.0, 104.0]), np.array([58.4, 57.1, 57.4])
    mirror = np.array([True, False, True, False])
    out = resize_crop_mirror_normalize(gpu, windows, (40, 30), mirror, mean, std)
    assert out.dtype == np.float16 and out.shape == (4, 3, 40, 30) and out.flags.c_contiguous
    out = cupy.asnumpy(out).astype(np.float32)
    for i, img in enumerate(images):
        ref = pillow_resize(img, windows[i], (40, 30), Image.BILINEAR)
        if mirror[i]:
            ref = ref[:, ::-1]
        ref = ((ref - mean) / std).transpose(2, 0, 1)
        np.testing.assert_allclose(out[i], ref, atol=1.5 / 57 + 4e-3)


def test_per_sample_mean_and_padded_row_views(images):
    """Crops of a bigger array (row stride > width) read like contiguous copies."""
    big = cupy.asarray(images[1])
    views = [big[10:90, 20:150], big[100:161, 7:52]]
    copies = [cupy.ascontiguousarray(v) for v in views]
    mean = np.array([[10.0, 20.0, 30.0], [0.0, 0.0, 0.0]])
    a = resize_crop_mirror_normalize(views, None, (17, 19), None, mean, 2.0, np.float32)
    b = resize_crop_mirror_normalize(copies, None, (17, 19), None, mean, 2.0, np.float32)
    np.testing.assert_array_equal(cupy.asnumpy(a), cupy.asnumpy(b))
    ref = pillow_resize(images[1][10:90, 20:150], (0, 0, 80, 130), (17, 19), Image.BILINEAR)
    np.testing.assert_allclose(
        cupy.asnumpy(a)[0], ((ref - mean[0]) / 2).transpose(2, 0, 1), atol=0.8
    )


def test_window_outside_image_gets_fill(images):
    gpu = [cupy.asarray(images[2])]  # 61 x 45
    out = resize_crop_mirror_normalize(
        gpu, [[-61, 0, 122, 45]], (4, 3), fill=-7.0, dtype=np.float32
    )
    out = cupy.asnumpy(out)[0]
    assert np.all(out[:, :2] == -7.0)  # top half samples rows < 0
    assert np.all(out[:, 2:] != -7.0)


def test_resize_batch_ragged_shorter_side(images):
    sizes = sizes_for_shorter_side([a.shape for a in images], 40)
    assert [tuple(s) for s in sizes] == [(40, 54), (40, 53), (54, 40), (40, 312)]
    outs = resize_batch([cupy.asarray(a) for a in images], sizes)
    assert isinstance(outs, list) and [o.shape for o in outs] == [(h, w, 3) for h, w in sizes]
    for img, o, (h, w) in zip(images, outs, sizes):
        whole = (0, 0, img.shape[0], img.shape[1])
        ref = np.rint(pillow_resize(img, whole, (int(h), int(w)), Image.BILINEAR)).astype(int)
        assert np.abs(cupy.asnumpy(o).astype(int) - ref).max() <= 1


def test_grayscale_single_channel(images):
    gray = [cupy.asarray(a[..., 0]) for a in images[:2]]
    out = cupy.asnumpy(resize_batch(gray, (20, 20), dtype=np.float32))
    assert out.shape == (2, 20, 20, 1)
    ref = pillow_resize(images[0][..., 0], (0, 0, 97, 131), (20, 20), Image.BILINEAR)
    assert np.abs(out[0, ..., 0] - ref).max() <= 1.5


@pytest.mark.parametrize("dtype,atol", [(np.float32, 1e-5), (np.float16, 2e-3)])
def test_crop_mirror_normalize_matches_numpy(images, dtype, atol):
    gpu = [cupy.asarray(a) for a in images]
    mean, std = np.array([1.0, 2.0, 3.0]), np.array([50.0, 60.0, 70.0])
    mirror = [True, False, False, True]
    # 33 x 257 is shorter than the crop: rows outside the image get the fill value
    out = crop_mirror_normalize_batch(
        gpu, (40, 24), mirror=mirror, mean=mean, std=std, dtype=dtype, fill=-9.0
    )
    out = cupy.asnumpy(out).astype(np.float32)
    assert out.shape == (4, 3, 40, 24)
    for i, img in enumerate(images):
        h, w = img.shape[:2]
        ay, ax = int(np.floor(0.5 * (h - 40) + 0.5)), int(np.floor(0.5 * (w - 24) + 0.5))
        ref = np.full((40, 24, 3), -9.0, np.float32)
        ys, ye = max(ay, 0), min(ay + 40, h)
        ref[ys - ay : ye - ay] = (img[ys:ye, ax : ax + 24] - mean) / std
        if mirror[i]:
            ref = ref[:, ::-1]
        np.testing.assert_allclose(out[i], ref.transpose(2, 0, 1), atol=atol, rtol=1e-3)


def test_crop_mirror_normalize_pads_channels_hwc(images):
    gpu = [cupy.asarray(images[0])]
    out = crop_mirror_normalize_batch(
        gpu,
        (5, 6),
        anchors=[[3, 4]],
        layout="HWC",
        dtype=np.float32,
        out_channels=4,
        fill=[0, 0, 0, 255],
    )
    out = cupy.asnumpy(out)[0]
    np.testing.assert_array_equal(out[..., :3], images[0][3:8, 4:10])
    assert np.all(out[..., 3] == 255)


def test_bad_arguments_are_named(images):
    with pytest.raises(TypeError, match="uint8"):
        resize_batch([cupy.zeros((4, 4, 3), np.float32)], (2, 2))
    with pytest.raises(ValueError, match="channels"):
        resize_batch([cupy.zeros((4, 4, 3), np.uint8), cupy.zeros((4, 4, 1), np.uint8)], (2, 2))
    with pytest.raises(ValueError, match="windows"):
        resize_crop_mirror_normalize([cupy.zeros((4, 4, 3), np.uint8)], [[0, 0, 1]], (2, 2))
    with pytest.raises(ValueError, match="interp"):
        resize_batch([cupy.zeros((4, 4, 3), np.uint8)], (2, 2), interp="lanczos7")
