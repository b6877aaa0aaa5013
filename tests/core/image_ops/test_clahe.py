"""fn.clahe on the CPU (OpenCV's CLAHE: DALI 2.4's CPU equals it), one hand-derived case,
and the GPU kernels' arithmetic mirrored in NumPy against the CPU backend."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from chute import fn, pipeline_def
from chute.ops.image.clahe_gpu import lab_table_arrays
from chute.ops.image.clahe_kernels import clahe as clahe_cpu
from chute.ops.image.clahe_kernels import clahe_tiles
from chute.runtime.errors import OperatorError

RNG = np.random.default_rng(0)


def smooth(h, w, c, seed=0):
    rng = np.random.default_rng(seed)
    img = cv2.GaussianBlur(rng.uniform(0, 255, (h, w, c)), (0, 0), 3).reshape(h, w, c)
    return np.clip((img - img.min()) * 0.6 + 40, 0, 255).astype(np.uint8)


def run(graph, data, layout="HWC"):
    @pipeline_def(batch_size=len(data), num_threads=2, device_id=None)
    def pipe():
        return graph(fn.external_source(source=lambda: data, layout=layout))

    p = pipe()
    p.build()
    (out,) = p.run()
    return [np.asarray(out.at(i)) for i in range(len(data))]


def test_one_tile_without_clipping_is_histogram_equalization():
    # 16 x 16 pixels holding 0..255 once each: the cdf at v is v + 1, the table
    # round((v + 1) * 255 / 256) in float32, and one tile means no blending
    values = RNG.permutation(256).astype(np.uint8).reshape(16, 16, 1)
    (out,) = run(lambda x: fn.clahe(x, tiles_x=1, tiles_y=1, clip_limit=0.0), [values])
    expected = np.rint((values.astype(np.float32) + 1) * (np.float32(255) / np.float32(256)))
    np.testing.assert_array_equal(out, expected.astype(np.uint8))


@pytest.mark.parametrize(
    "tiles, clip", [((8, 8), 2.0), ((4, 6), 3.0), ((3, 5), 0.0), ((2, 2), 40.0)]
)
@pytest.mark.parametrize("shape", [(64, 96), (37, 53), (5, 5)])
def test_grayscale_equals_opencv(tiles, clip, shape):
    img = smooth(*shape, 1)
    out = run(lambda x: fn.clahe(x, tiles_x=tiles[0], tiles_y=tiles[1], clip_limit=clip), [img])
    ref = cv2.createCLAHE(clipLimit=clip, tileGridSize=tiles).apply(img[:, :, 0])
    np.testing.assert_array_equal(out[0][:, :, 0], ref)
    gray = run(
        lambda x: fn.clahe(x, tiles_x=tiles[0], tiles_y=tiles[1], clip_limit=clip),
        [img[:, :, 0]],
        layout="HW",
    )
    np.testing.assert_array_equal(gray[0], ref)


@pytest.mark.parametrize("luma", [True, False])
def test_rgb_luma_through_lab_or_per_channel(luma):
    img = smooth(60, 90, 3, seed=1)
    (out,) = run(lambda x: fn.clahe(x, tiles_x=8, tiles_y=6, clip_limit=2.5, luma_only=luma), [img])
    tool = cv2.createCLAHE(clipLimit=2.5, tileGridSize=(8, 6))
    if luma:
        lab = cv2.cvtColor(img, cv2.COLOR_RGB2LAB)
        lab[:, :, 0] = tool.apply(lab[:, :, 0])
        ref = cv2.cvtColor(lab, cv2.COLOR_LAB2RGB)
    else:
        ref = np.stack([tool.apply(img[:, :, c].copy()) for c in range(3)], axis=-1)
    np.testing.assert_array_equal(out, ref)


def test_clahe_argument_errors():
    img = [smooth(16, 16, 1)]
    with pytest.raises(ValueError, match="'tiles_x' must be positive"):
        run(lambda x: fn.clahe(x, tiles_x=0, tiles_y=8, clip_limit=2.0), img)
    with pytest.raises(ValueError, match="'bins' must be a power of 2"):
        run(lambda x: fn.clahe(x, tiles_x=8, tiles_y=8, clip_limit=2.0, bins=100), img)
    with pytest.raises(TypeError, match="clip_limit"):
        run(lambda x: fn.clahe(x, tiles_x=8, tiles_y=8), img)
    with pytest.raises(OperatorError, match="takes uint8"):
        run(
            lambda x: fn.clahe(x, tiles_x=8, tiles_y=8, clip_limit=2.0), [img[0].astype(np.float32)]
        )
    with pytest.raises(OperatorError, match="1 or 3 channels"):
        run(lambda x: fn.clahe(x, tiles_x=8, tiles_y=8, clip_limit=2.0), [smooth(16, 16, 4)])


# ---- the GPU kernels' arithmetic, mirrored in NumPy -------------------------------------------
def _reflect101(i, n):
    if n == 1:
        return np.zeros_like(i)
    r = np.mod(i, 2 * n - 2)
    return np.where(r < n, r, 2 * n - 2 - r)


def mirror_plane(plane: np.ndarray, tiles_x: int, tiles_y: int, clip_limit: float) -> np.ndarray:
    """clahe_luts then clahe_apply on one uint8 plane, as the kernels compute them."""
    h, w = plane.shape
    t = clahe_tiles(h, w, tiles_x, tiles_y, clip_limit)
    luts = np.zeros((tiles_y * tiles_x, 256), np.uint8)
    for tile in range(tiles_x * tiles_y):
        tx, ty = tile % tiles_x, tile // tiles_x
        k = np.arange(t.tile_w * t.tile_h)
        ys = _reflect101(ty * t.tile_h + k // t.tile_w, h)
        xs = _reflect101(tx * t.tile_w + k % t.tile_w, w)
        hist = np.bincount(plane[ys, xs], minlength=256).astype(np.int64)
        if t.clip > 0:
            clipped = int(np.maximum(hist - t.clip, 0).sum())
            hist = np.minimum(hist, t.clip) + clipped // 256
            residual = clipped - (clipped // 256) * 256
            if residual:
                step = max(256 // residual, 1)
                for i in range(0, 256, step):
                    if residual == 0:
                        break
                    hist[i] += 1
                    residual -= 1
        sums = np.cumsum(hist).astype(np.float32)
        luts[tile] = np.clip(np.rint(sums * t.lut_scale), 0, 255)
    x = np.arange(w, dtype=np.float32)
    y = np.arange(h, dtype=np.float32)
    txf = x * t.inv_tile_w - np.float32(0.5)
    tyf = y * t.inv_tile_h - np.float32(0.5)
    tx1, ty1 = np.floor(txf).astype(int), np.floor(tyf).astype(int)
    xa, ya = (txf - tx1).astype(np.float32), (tyf - ty1).astype(np.float32)
    tx2, ty2 = np.minimum(tx1 + 1, tiles_x - 1), np.minimum(ty1 + 1, tiles_y - 1)
    tx1, ty1 = np.maximum(tx1, 0), np.maximum(ty1, 0)
    one = np.float32(1)
    xa, xa1 = xa[None, :], one - xa[None, :]
    ya, ya1 = ya[:, None], one - ya[:, None]

    def lut(ty, tx):
        return luts[ty[:, None] * tiles_x + tx[None, :], plane].astype(np.float32)

    top = lut(ty1, tx1) * xa1 + lut(ty1, tx2) * xa
    bottom = lut(ty2, tx1) * xa1 + lut(ty2, tx2) * xa
    return np.clip(np.rint(top * ya1 + bottom * ya), 0, 255).astype(np.uint8)


@pytest.mark.parametrize("shape", [(37, 53), (64, 96), (5, 9), (1, 9)])
@pytest.mark.parametrize("clip", [2.0, 0.0])
def test_gpu_kernel_arithmetic_equals_cpu_gray(shape, clip):
    img = smooth(*shape, 1)[:, :, 0] if min(shape) > 3 else RNG.integers(0, 256, shape, np.uint8)
    np.testing.assert_array_equal(mirror_plane(img, 8, 6, clip), clahe_cpu(img, 8, 6, clip))


def test_gpu_kernel_arithmetic_equals_cpu_rgb_luma():
    img = smooth(40, 50, 3, seed=2)
    to_lab, to_rgb = lab_table_arrays()
    index = (img[..., 0].astype(np.int64) << 16) | (img[..., 1].astype(np.int64) << 8) | img[..., 2]
    lab = to_lab.reshape(-1, 3)[index]
    l_eq = mirror_plane(np.ascontiguousarray(lab[..., 0]), 4, 4, 3.0)
    back = (l_eq.astype(np.int64) << 16) | (lab[..., 1].astype(np.int64) << 8) | lab[..., 2]
    np.testing.assert_array_equal(to_rgb.reshape(-1, 3)[back], clahe_cpu(img, 4, 4, 3.0, True))
