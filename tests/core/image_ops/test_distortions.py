"""fn.equalize / fn.experimental.equalize, fn.jpeg_compression_distortion, fn.grid_mask (CPU).

References: OpenCV's equalizeHist per channel, OpenCV's JPEG encoder/decoder (RGB given as
BGR), and the grid written out with NumPy; ragged batches with a 1x1 image and per-sample
arguments.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from chute import fn, ops, pipeline_def

SIZES = [(1, 1), (5, 7), (40, 33), (16, 16)]


def images(c=3, sizes=SIZES, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.integers(0, 256, (h, w, c)).astype(np.uint8) for h, w in sizes]


def run(make, data, layout="HWC", **sources):
    @pipeline_def(batch_size=len(data), num_threads=2, device_id=None, seed=3)
    def pipe():
        x = fn.external_source(source=lambda: data, layout=layout)
        extra = {k: fn.external_source(source=lambda v=v: v) for k, v in sources.items()}
        return make(x, **extra)

    p = pipe()
    p.build()
    (out,) = p.run()
    return [np.asarray(out.at(i)) for i in range(len(data))]


@pytest.mark.parametrize("name", ["equalize", "experimental.equalize"])
def test_equalize_matches_opencv_per_channel(name):
    data = images(3)
    data[2][..., 1] = 77  # a one-level channel stays as it is
    make = fn.equalize if name == "equalize" else fn.experimental.equalize
    out = run(lambda x: make(x), data)
    for img, o in zip(data, out):
        ref = np.stack([cv2.equalizeHist(np.ascontiguousarray(img[..., c])) for c in range(3)], -1)
        np.testing.assert_array_equal(o, ref)
    np.testing.assert_array_equal(out[2][..., 1], 77)
    assert out[0].tolist() == data[0].tolist()


def test_equalize_lut_rule_written_out():
    from chute.ops.image.distortion_kernels import equalize_lut

    hist = np.zeros(256, np.int64)
    hist[[10, 20, 30]] = [2, 1, 1]  # total 4, lowest level holds 2
    lut = equalize_lut(hist)
    assert (lut[10], lut[20], lut[30]) == (0, 128, 255)  # 255 * 1 / 2 = 127.5 -> 128


def test_equalize_hw_sequence_and_bad_type():
    seq = np.random.default_rng(1).integers(0, 256, (3, 9, 8)).astype(np.uint8)
    (out,) = run(lambda x: fn.equalize(x), [seq], layout="FHW")
    for f in range(3):
        np.testing.assert_array_equal(out[f], cv2.equalizeHist(seq[f]))
    with pytest.raises(Exception, match=r"(?s)equalize.*uint8"):
        run(lambda x: fn.equalize(x), [np.zeros((4, 4, 3), np.float32)])


def test_jpeg_compression_distortion_per_sample_quality():
    data = images(3, sizes=[(1, 1), (24, 31), (64, 48)])
    smooth = cv2.GaussianBlur(data[2], (9, 9), 3)
    data[2] = smooth
    quality = [np.int32(q) for q in (50, 5, 150)]
    out = run(lambda x, q: fn.jpeg_compression_distortion(x, quality=q), data, q=quality)
    for img, q, o in zip(data, quality, out):
        qq = int(min(max(int(q), 1), 100))
        ok, enc = cv2.imencode(".jpg", img[..., ::-1].copy(), [cv2.IMWRITE_JPEG_QUALITY, qq])
        ref = cv2.imdecode(enc, cv2.IMREAD_COLOR)[..., ::-1]
        assert ok and o.shape == img.shape and o.dtype == np.uint8
        np.testing.assert_array_equal(o, ref)
    # quality 150 is clamped to 100: close to the smooth input; quality 5 is far from it
    assert np.abs(out[2].astype(int) - data[2]).mean() < 2
    assert np.abs(out[1].astype(int) - data[1]).mean() > 10


def test_jpeg_compression_distortion_rejects_non_rgb():
    with pytest.raises(Exception, match=r"(?s)jpeg_compression_distortion.*RGB"):
        run(lambda x: fn.jpeg_compression_distortion(x), images(1, sizes=[(8, 8)]))


def grid_ref(img, tile, ratio, angle, sx, sy):
    h, w = img.shape[:2]
    out = img.copy()
    for y in range(h):
        for x in range(w):
            u = (x * np.cos(angle) + y * np.sin(angle) - sx) / tile
            v = (-x * np.sin(angle) + y * np.cos(angle) - sy) / tile
            if u - np.floor(u) < ratio and v - np.floor(v) < ratio:
                out[y, x] = 0
    return out


def test_grid_mask_unrotated_squares_written_out():
    img = np.full((6, 6, 1), 9, np.uint8)
    (out,) = run(lambda x: fn.grid_mask(x, tile=4, ratio=0.5), [img])
    expected = np.full((6, 6), 9, np.uint8)
    for y in range(6):
        for x in range(6):
            if x % 4 < 2 and y % 4 < 2:
                expected[y, x] = 0
    np.testing.assert_array_equal(out[..., 0], expected)


def test_grid_mask_per_sample_arguments():
    data = images(3)
    tiles = [np.int32(t) for t in (3, 10, 17, 5)]
    ratios = [np.float32(r) for r in (0.5, 0.3, 0.7, 0.0)]
    angles = [np.float32(a) for a in (0.0, 0.4, -1.1, 2.0)]
    shifts = [np.float32(s) for s in (0.0, 3.5, -7.0, 1.0)]
    out = run(
        lambda x, t, r, a, s: fn.grid_mask(x, tile=t, ratio=r, angle=a, shift_x=s, shift_y=s),
        data,
        t=tiles,
        r=ratios,
        a=angles,
        s=shifts,
    )
    for img, t, r, a, s, o in zip(data, tiles, ratios, angles, shifts, out):
        np.testing.assert_array_equal(
            o, grid_ref(img, int(t), float(r), float(a), float(s), float(s))
        )
    np.testing.assert_array_equal(out[3], data[3])  # ratio 0 masks nothing


def test_grid_mask_bad_arguments():
    with pytest.raises(ValueError, match=r"fn.grid_mask.*'tile'"):
        run(lambda x: fn.grid_mask(x, tile=0), images(3, sizes=[(4, 4)]))
    with pytest.raises(ValueError, match=r"fn.grid_mask.*'ratio'"):
        run(lambda x: fn.grid_mask(x, ratio=1.5), images(3, sizes=[(4, 4)]))


def test_names():
    assert ops.experimental.Equalize.schema.name == "experimental.equalize"
    assert ops.GridMask.schema.name == "grid_mask"
    assert ops.JpegCompressionDistortion.schema.name == "jpeg_compression_distortion"


def test_equalize_lut_equals_opencv_on_random_histograms():
    from chute.ops.image.distortion_kernels import equalize_lut

    rng = np.random.default_rng(9)
    for size in (1, 2, 7, 100, 1000):
        img = rng.integers(0, rng.integers(1, 256) + 1, (1, size)).astype(np.uint8)
        hist = np.bincount(img.ravel(), minlength=256)
        np.testing.assert_array_equal(equalize_lut(hist)[img], cv2.equalizeHist(img))


@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.float32])
def test_grid_mask_kernel_matches_full_grid_formula(dtype):
    # the row/column terms and the mask cache against the formula on full coordinate grids
    from chute.ops.image.distortion_kernels import grid_mask

    rng = np.random.default_rng(5)
    img = (rng.random((61, 83, 3)) * 200 + 1).astype(dtype)
    if dtype == np.float32:
        img[0, 0, 0] = np.nan  # masked by both grids: 0 out, not NaN * 0
    for tile, ratio, angle, sx, sy in [(16, 0.5, 0.3, 0.0, 0.0), (7, 0.25, -2.2, 3.5, -1.25)]:
        y, x = np.mgrid[0:61, 0:83].astype(np.float64)
        u = (x * np.cos(angle) + y * np.sin(angle) - sx) / tile
        v = (-x * np.sin(angle) + y * np.cos(angle) - sy) / tile
        masked = (u - np.floor(u) < ratio) & (v - np.floor(v) < ratio)
        expected = np.where(masked[..., None], 0, img).astype(dtype)
        assert expected[0, 0, 0] == 0 if masked[0, 0] else tile == 7
        for _ in range(2):  # the second call reads the cached mask
            out = grid_mask(img, tile, ratio, angle, sx, sy)
            assert out.dtype == img.dtype and out.flags.writeable
            np.testing.assert_array_equal(out, expected)
            np.testing.assert_array_equal(
                grid_mask(img[..., 0], tile, ratio, angle, sx, sy), expected[..., 0]
            )


def test_jpeg_distort_kernel_on_views_matches_bgr_round_trip():
    # the channel swaps by cv2.cvtColor (and RGB decoding) against NumPy's reversal
    from chute.ops.image.distortion_kernels import jpeg_distort

    rng = np.random.default_rng(9)
    base = rng.integers(0, 256, (37, 90, 3), dtype=np.uint8)
    for image in (base, base[:, ::2], base[::-1]):
        bgr = np.ascontiguousarray(image[..., ::-1])
        _, encoded = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, 30])
        expected = cv2.imdecode(encoded, cv2.IMREAD_COLOR)[..., ::-1]
        got = jpeg_distort(image, 30)
        assert got.shape == image.shape and got.flags.c_contiguous
        np.testing.assert_array_equal(got, expected)
