"""Host plans of the geometry GPU backends, through NumPy mirrors of their kernels.

No GPU needed: the per-sample plans (``*_plan`` in chute.ops.geometry.warp_gpu, crop_gpu and
chute.ops.image.filter_gpu) drive NumPy
mirrors of warp.cu and filter.cu (same sample points, taps, borders and rounding),
which must reproduce the CPU backends. test_gpu_geometry.py runs the kernels
themselves on a GPU.

Tolerances (mirror vs CPU): warps and rotations, uint8 within the steepest gradient
/ 32 + 1 level (OpenCV 4 quantises sample positions to 1/32 px and computes uint8 in
fixed point), float32 within gradient / 32 + 1e-3, nearest neighbour equal but for
under 1% of pixels (OpenCV rounds positions in fixed point); crop and pad exact;
gaussian_blur uint8 within 1 level (OpenCV's fixed-point blur), float32 within
1e-4 of 255. Canvas sizes of rotate exact, its matrices within 1e-12.
"""

from __future__ import annotations

import numpy as np
import pytest
from geometry_images import batch as images_of
from geometry_images import random_matrices, smooth, warp_tolerance

from chute.gpu.geometry_kernels import BORDER_CODES, gaussian_taps
from chute.ops.geometry._border import BORDER_MODES
from chute.ops.geometry.crop_gpu import crop_plan, pad_plan, paste_plan, window_fill
from chute.ops.geometry.crop_kernels import border_index, crop, crop_window, pad, paste
from chute.ops.geometry.warp_gpu import rotate_plan, warp_plan
from chute.ops.geometry.warp_kernels import (
    rotate,
    rotated_canvas_size,
    rotation_matrix,
    warp_affine,
)
from chute.ops.image.filter_gpu import blur_plan
from chute.ops.image.filter_kernels import gaussian_blur

BORDERS = sorted(BORDER_MODES)
CODE_NAMES = {code: name for name, code in BORDER_CODES.items()}
SIZES = [(37, 53), (20, 31), (45, 27), (33, 33)]


def batch(c: int = 3, dtype=np.uint8, sizes=SIZES) -> list[np.ndarray]:
    return images_of(sizes, c, dtype)


# ---- NumPy mirrors of the kernels ----------------------------------------------------------


def _fetch(img: np.ndarray, y: np.ndarray, x: np.ndarray, border: int, fill: np.ndarray):
    """Taps as warp.cu's add_tap reads them: the border maps each index, constant -> fill."""
    h, w = img.shape[:2]
    name = CODE_NAMES[border]
    if name == "constant":
        inside = (y >= 0) & (y < h) & (x >= 0) & (x < w)
        v = img[np.clip(y, 0, h - 1), np.clip(x, 0, w - 1)].astype(np.float64)
        return np.where(inside[..., None], v, fill)
    return img[border_index(y, h, name), border_index(x, w, name)].astype(np.float64)


def _cubic(t: np.ndarray) -> list[np.ndarray]:
    a = -0.75
    u, v = t + 1, 1 - t
    k0 = ((a * u - 5 * a) * u + 8 * a) * u - 4 * a
    k1 = ((a + 2) * t - (a + 3)) * t * t + 1
    k2 = ((a + 2) * v - (a + 3)) * v * v + 1
    return [k0, k1, k2, 1 - k0 - k1 - k2]


def _store(acc: np.ndarray, dtype) -> np.ndarray:
    if np.dtype(dtype) == np.uint8:
        return np.clip(np.rint(acc), 0, 255).astype(np.uint8)
    return acc.astype(dtype)


def mirror_warp(img: np.ndarray, plan: dict, i: int) -> np.ndarray:
    """warp.cu's warp_affine_batch for sample i of a plan."""
    hwc = img if img.ndim == 3 else img[:, :, None]
    c = hwc.shape[2]
    oh, ow = plan["out_hw"][i]
    m = plan["matrices"][i]
    fill = plan["fill"][i, :c]
    border, interp = int(plan["border"][i]), int(plan["interp"][i])
    oy, ox = np.mgrid[0:oh, 0:ow].astype(np.float64)
    sx = np.clip(m[0, 0] * ox + m[0, 1] * oy + m[0, 2], -1e9, 1e9)
    sy = np.clip(m[1, 0] * ox + m[1, 1] * oy + m[1, 2], -1e9, 1e9)
    if interp == 0:
        acc = _fetch(
            hwc, np.floor(sy + 0.5).astype(int), np.floor(sx + 0.5).astype(int), border, fill
        )
    else:
        x0, y0 = np.floor(sx), np.floor(sy)
        tx, ty = (sx - x0)[..., None], (sy - y0)[..., None]
        x0, y0 = x0.astype(int), y0.astype(int)
        if interp == 1:
            kx, ky, offs = [1 - tx, tx], [1 - ty, ty], range(2)
        else:
            kx, ky, offs = _cubic(tx), _cubic(ty), range(-1, 3)
        acc = 0.0
        for j, dy in enumerate(offs):
            row = sum(
                kx[k] * _fetch(hwc, y0 + dy, x0 + dx, border, fill) for k, dx in enumerate(offs)
            )
            acc = acc + ky[j] * row
    out = _store(acc, img.dtype)
    return out if img.ndim == 3 else out[:, :, 0]


def near_image(img: np.ndarray, plan: dict, i: int) -> np.ndarray:
    """Output pixels whose sample point lies within one image extent of the image."""
    h, w = img.shape[:2]
    oy, ox = np.mgrid[0 : plan["out_hw"][i][0], 0 : plan["out_hw"][i][1]]
    m = plan["matrices"][i]
    sx = m[0, 0] * ox + m[0, 1] * oy + m[0, 2]
    sy = m[1, 0] * ox + m[1, 1] * oy + m[1, 2]
    return (sx > -w) & (sx < 2 * w - 1) & (sy > -h) & (sy < 2 * h - 1)


def mirror_window(img: np.ndarray, anchor, out_hw, border: int, fill, dtype) -> np.ndarray:
    """warp.cu's window_batch for one sample."""
    hwc = img if img.ndim == 3 else img[:, :, None]
    c = hwc.shape[2]
    ys = np.arange(out_hw[0]) + anchor[0]
    xs = np.arange(out_hw[1]) + anchor[1]
    yy, xx = np.meshgrid(ys, xs, indexing="ij")
    out = _store(_fetch(hwc, yy, xx, border, np.asarray(fill[:c])), dtype)
    return out if img.ndim == 3 else out[:, :, 0]


def mirror_blur(img: np.ndarray, sigma, window, border: str, fill: float, dtype) -> np.ndarray:
    """filter.cu's blur_rows then blur_cols for one sample (float32 taps and scratch)."""
    hwc = (img if img.ndim == 3 else img[:, :, None]).astype(np.float64)
    weights, starts, radii = gaussian_taps(np.asarray(sigma), np.asarray(window))
    h, w = hwc.shape[:2]
    ky = weights[starts[0] : starts[0] + 2 * radii[0] + 1].astype(np.float64)
    kx = weights[starts[1] : starts[1] + 2 * radii[1] + 1].astype(np.float64)

    def taps(n: int, rad: int):
        idx = np.arange(n)[:, None] + np.arange(-rad, rad + 1)[None, :]
        if border == "constant":
            return np.where((idx >= 0) & (idx < n), idx, -1)
        return border_index(idx, n, border)

    ix, iy = taps(w, radii[1]), taps(h, radii[0])
    padded = np.concatenate([hwc, np.full((h, 1, hwc.shape[2]), fill)], axis=1)
    rows = np.einsum("k,yxkc->yxc", kx, padded[:, ix])
    rows = np.concatenate([rows, np.full((1, w, hwc.shape[2]), fill)], axis=0)
    cols = np.einsum("k,ykxc->yxc", ky, rows[iy])
    out = cols.astype(np.float32)
    if np.dtype(dtype) == np.uint8:
        out = np.clip(np.floor(out + 0.5), 0, 255).astype(np.uint8)  # halves away from zero
    out = out.astype(dtype)
    return out if img.ndim == 3 else out[:, :, 0]


# ---- plans through the mirrors vs the CPU backends ----------------------------------------


def _plan(images, matrices, sizes, inverse, interp, fill, border, mask):
    n = len(images)
    c = images[0].shape[2] if images[0].ndim == 3 else 1
    in_hw = np.array([im.shape[:2] for im in images])
    return warp_plan(
        in_hw, matrices, sizes, inverse, [interp] * n, fill, border, mask, c, images[0].dtype
    )


@pytest.mark.parametrize("border", [None, *BORDERS])
@pytest.mark.parametrize("interp", ["nn", "linear", "cubic"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_warp_plan_reproduces_cpu_backend(border, interp, dtype):
    images = batch(3, dtype)
    n = len(images)
    m = random_matrices(n)
    sizes = [None, (29, 41), None, (50, 17)]
    fill = [None, (10.0, 200.0, 90.0), 33.4, None] if border is None else [7.0] * n
    mask = np.array([True, True, False, True])
    plan = _plan(images, m, sizes, False, interp, fill, border, mask)
    for i, img in enumerate(images):
        got = mirror_warp(img, plan, i)
        if not mask[i]:
            np.testing.assert_array_equal(got, img)
            continue
        want = warp_affine(img, m[i], sizes[i], False, interp, fill[i], border)
        assert got.shape == want.shape and got.dtype == want.dtype
        diff = np.abs(got.astype(np.float64) - want)
        if interp == "cubic" and border in ("reflect", "reflect_101", "wrap"):
            diff = diff[near_image(img, plan, i)]  # OpenCV's cubic remap errs further out
        if interp == "nn":
            assert (diff > 0).mean() < 0.01, (diff > 0).mean()
        else:
            assert diff.max() <= warp_tolerance(img, fill[i], border), diff.max()


@pytest.mark.parametrize("c", [0, 1, 4])
def test_warp_plan_channels_and_gray(c):
    images = batch(c)
    m = random_matrices(len(images), seed=3)
    plan = _plan(
        images, m, [None] * 4, True, "linear", [(5, 6, 7, 8)[: max(c, 1)]] * 4, None, [1] * 4
    )
    for i, img in enumerate(images):
        want = warp_affine(img, m[i], None, True, "linear", (5, 6, 7, 8)[: max(c, 1)], None)
        got = mirror_warp(img, plan, i)
        assert got.shape == want.shape
        fill = (5, 6, 7, 8)[: max(c, 1)]
        assert np.abs(got.astype(float) - want).max() <= warp_tolerance(img, fill)


def test_warp_plan_rejects_what_the_gpu_lacks():
    images = batch()
    with pytest.raises(ValueError, match="not supported on the GPU"):
        _plan(images, random_matrices(4), [None] * 4, True, "lanczos3", [None] * 4, None, [1] * 4)
    with pytest.raises(ValueError, match="positive"):
        _plan(images, random_matrices(4), [(0, 5)] * 4, True, "nn", [None] * 4, None, [1] * 4)


def test_rotate_plan_is_the_cpu_backends():
    rng = np.random.default_rng(1)
    hw = rng.integers(1, 300, (200, 2))
    angles = np.concatenate(
        [rng.uniform(-360, 360, 190), [0, 90, -90, 180, 45, 270, 30, 1e-9, 89.99, 360]]
    )
    sizes, matrices = rotate_plan(hw, angles, False, [None] * 200)
    for (h, w), a, s, m in zip(hw.tolist(), angles, sizes, matrices):
        assert tuple(s) == rotated_canvas_size(h, w, a)
        # NumPy's 2x2 matmul may round the translation differently in the last bit
        np.testing.assert_allclose(m, rotation_matrix(h, w, *s, a), rtol=0, atol=1e-12)
    keep, _ = rotate_plan(hw, angles, True, [None] * 199 + [(7, 9)])
    np.testing.assert_array_equal(keep[:199], hw[:199])
    assert tuple(keep[199]) == (7, 9)


@pytest.mark.parametrize("border", BORDERS)
def test_rotate_through_the_warp_mirror(border):
    images = batch()
    angles = [17.0, -123.5, 90.0, 301.0]
    in_hw = np.array([im.shape[:2] for im in images])
    out_hw, m = rotate_plan(in_hw, angles, False, [None] * 4)
    plan = _plan(images, m, [tuple(s) for s in out_hw], True, "linear", [9.0] * 4, border, [1] * 4)
    for i, img in enumerate(images):
        want = rotate(img, angles[i], interp_type="linear", fill_value=9.0, border=border)
        got = mirror_warp(img, plan, i)
        assert got.shape == want.shape
        assert np.abs(got.astype(float) - want).max() <= warp_tolerance(img, 9.0, border)


def test_crop_plan_matches_crop_window():
    rng = np.random.default_rng(2)
    n = 300
    hw = rng.integers(2, 90, (n, 2))
    crop_arg = [None if k % 3 else tuple(rng.integers(1, 100, 2).astype(float)) for k in range(n)]
    crop_h = [None if k % 2 else float(rng.integers(0, 100)) for k in range(n)]
    crop_w = [None if k % 5 else float(rng.uniform(0.5, 100)) for k in range(n)]
    for k in range(n):
        if crop_arg[k] is None and crop_h[k] is None and crop_w[k] is None:
            crop_w[k] = 12.5
    px, py = rng.uniform(0, 1, n), rng.uniform(0, 1, n)
    px[:5] = [0, 1, 0.5, 0.25, 0.75]
    for rounding in ("round", "truncate"):
        anchors, sizes = crop_plan(
            hw, crop_arg, crop_h, crop_w, [None] * n, px, py, rounding, "pad"
        )
        for k in range(n):
            want = crop_window(
                *hw[k], crop_arg[k], crop_h[k], crop_w[k], None, px[k], py[k], rounding
            )
            assert (*anchors[k], *sizes[k]) == want
    rel = [tuple(rng.uniform(0.3, 1.5, 2)) for _ in range(n)]
    anchors, sizes = crop_plan(hw, [None] * n, [None] * n, [None] * n, rel, px, py, "round", "pad")
    for k in range(n):
        want = crop_window(*hw[k], None, None, None, rel[k], px[k], py[k])
        assert (*anchors[k], *sizes[k]) == want


def test_crop_plan_errors_and_trims():
    hw = np.array([[10, 12], [6, 6]])
    with pytest.raises(ValueError, match="sample 1.*outside"):
        crop_plan(
            hw,
            [(8, 8)] * 2,
            [None] * 2,
            [None] * 2,
            [None] * 2,
            [0.5] * 2,
            [0.5] * 2,
            "round",
            "error",
        )
    with pytest.raises(ValueError, match="crop_pos"):
        crop_plan(
            hw,
            [(4, 4)] * 2,
            [None] * 2,
            [None] * 2,
            [None] * 2,
            [1.5] * 2,
            [0.5] * 2,
            "round",
            "pad",
        )
    anchors, sizes = crop_plan(
        hw,
        [(8, 20)] * 2,
        [None] * 2,
        [None] * 2,
        [None] * 2,
        [0.0, 1.0],
        [1.0, 0.5],
        "round",
        "trim_to_shape",
    )
    assert anchors.tolist() == [[2, 0], [0, 0]] and sizes.tolist() == [[8, 12], [6, 6]]


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_crop_window_mirror_reproduces_cpu_crop(border, dtype):
    images = [*batch(3, dtype), smooth(5, 4, 3, 9, dtype)]
    n = len(images)
    hw = np.array([im.shape[:2] for im in images])
    crops = [(30.0, 60.0)] * n
    px, py = [0.0, 0.3, 1.0, 0.5, 0.8], [1.0, 0.6, 0.0, 0.5, 0.1]
    fills = [(3.7, 100.0, 250.0)] * n
    anchors, sizes = crop_plan(
        hw, crops, [None] * n, [None] * n, [None] * n, px, py, "round", "pad"
    )
    fill = window_fill(fills, 3, False, dtype)
    for k, img in enumerate(images):
        want = crop(
            img,
            crops[k],
            crop_pos_x=px[k],
            crop_pos_y=py[k],
            out_of_bounds_policy="pad",
            fill_values=fills[k],
            border=border,
        )
        got = mirror_window(img, anchors[k], sizes[k], BORDER_CODES[border], fill[k], dtype)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("border", BORDERS)
def test_pad_plan_reproduces_cpu_pad(border):
    images = [*batch(3), smooth(2, 3, 3, 5)]
    shapes = np.array([im.shape for im in images])
    n = len(images)
    for axes, wanted, align in [
        ((0, 1, 2), [None] * n, [None] * n),
        ((0, 1), [(-1, 70)] * n, [(8,)] * n),
        ((1,), [None, (5,), (64,), None, (-1,)], [(4,), None, (3,), (7,), None]),
    ]:
        padded = pad_plan(shapes, axes, wanted, align)
        largest = shapes[:, list(axes)].max(axis=0)
        fill = np.rint(np.array([[9.0, 250.0, 100.0, 0.0]] * n))
        for k, img in enumerate(images):
            target = (
                largest
                if wanted[k] is None
                else [m if w < 0 else w for w, m in zip(wanted[k], largest)]
            )
            want = pad(
                img,
                axes=axes,
                shape=target,
                align=align[k],
                fill_value=(9, 250, 100),
                border=border,
            )
            assert tuple(padded[k]) == want.shape
            got = mirror_window(img, (0, 0), padded[k, :2], BORDER_CODES[border], fill[k], np.uint8)
            np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_paste_plan_reproduces_cpu_paste(dtype):
    images = [*batch(3, dtype), smooth(5, 4, 3, 9, dtype)]
    n = len(images)
    hw = np.array([im.shape[:2] for im in images])
    ratio, px, py = [1.0, 1.5, 2.0, 3.25, 1.7], [0.0, 0.3, 1.0, 0.5, 0.2], [1, 0.6, 0, 0.5, 0.9]
    min_canvas = [0.0, 0.0, 150.0, 0.0, 0.0]
    mask = np.array([True, True, True, False, True])
    anchors, sizes = paste_plan(hw, ratio, px, py, min_canvas, mask)
    fill = window_fill([(32.0, 64.0, 128.0)] * n, 3, False, dtype)
    for k, img in enumerate(images):
        if not mask[k]:  # masked out: the window is the image itself
            assert tuple(anchors[k]) == (0, 0) and tuple(sizes[k]) == img.shape[:2]
            continue
        want = paste(img, ratio[k], (32, 64, 128), px[k], py[k], min_canvas[k])
        got = mirror_window(img, anchors[k], sizes[k], BORDER_CODES["constant"], fill[k], dtype)
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="ratio"):
        paste_plan(hw[:1], [0.5], [0.0], [0.0], [0.0], np.ones(1, bool))
    with pytest.raises(ValueError, match="paste_x"):
        paste_plan(hw[:1], [1.5], [1.5], [0.0], [0.0], np.ones(1, bool))


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("dtypes", [(np.uint8, None), (np.float32, None), (np.uint8, np.float32)])
def test_blur_mirror_reproduces_cpu_blur(border, dtypes):
    in_dtype, out_dtype = dtypes
    images = [*batch(3, in_dtype), smooth(3, 5, 3, 7, in_dtype)]
    sigmas = [(1.5,), (0.8, 2.5), (0.0,), (3.0,), (2.0,)]
    windows = [(0,), (0,), (5, 3), (0,), (9,)]
    mask = np.array([True, True, True, False, True])
    sig, win = blur_plan(sigmas, windows, mask)
    out = np.dtype(out_dtype or in_dtype)
    for k, img in enumerate(images):
        fill = float(np.float32(11.0)) if border == "constant" else 0.0
        got = mirror_blur(img, sig[k], win[k], border, fill, out)
        if not mask[k]:
            np.testing.assert_array_equal(got, img.astype(out))
            continue
        want = gaussian_blur(img, sigmas[k], windows[k], border, 11.0, out_dtype)
        assert got.dtype == want.dtype and got.shape == want.shape
        tol = 1.0 if out == np.uint8 else 1e-4 * 255
        assert np.abs(got.astype(float) - want).max() <= tol


def test_blur_plan_rules():
    sig, win = blur_plan([(2.0,), (0.0, 1.0), (0.0,)], [(0,), (3, 0), (7,)], np.ones(3, bool))
    assert win.tolist() == [[13, 13], [3, 7], [7, 7]]
    assert sig[1, 0] == pytest.approx(0.8) and sig[2, 0] == pytest.approx(1.4)
    with pytest.raises(ValueError, match="sigma or a window_size"):
        blur_plan([(0.0,)], [(0,)], np.ones(1, bool))
