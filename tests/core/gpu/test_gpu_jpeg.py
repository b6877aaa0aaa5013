"""GPU batch decoding (nvImageCodec) against Pillow, ROI decoding, bad samples, CPU share."""

from __future__ import annotations

import io

import numpy as np
import pytest

cupy = pytest.importorskip("cupy")
pytest.importorskip("nvidia.nvimgcodec")
try:
    _N_DEVICES = cupy.cuda.runtime.getDeviceCount()
except Exception:
    _N_DEVICES = 0

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(_N_DEVICES == 0, reason="no CUDA device"),
]

from PIL import Image, ImageFilter  # noqa: E402

from chute.gpu.jpeg import BatchDecoder  # noqa: E402

SHAPES = [(375, 500), (333, 500), (97, 131), (500, 281), (64, 64), (241, 17)]


def photo_like(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """Smooth gradients, a few flat shapes and mild noise: baseline-JPEG friendly content."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.stack([xx / w * 200 + 30, yy / h * 180 + 40, (xx + yy) / (h + w) * 150 + 60], -1)
    for _ in range(3):
        cy, cx, r = rng.uniform(0, h), rng.uniform(0, w), rng.uniform(5, max(h, w) / 3)
        img[(yy - cy) ** 2 + (xx - cx) ** 2 < r * r] = rng.uniform(40, 215, 3)
    img += rng.normal(0, 3, img.shape)
    img = Image.fromarray(np.clip(img, 0, 255).astype(np.uint8)).resize((w, h), Image.BILINEAR)
    return np.asarray(img.filter(ImageFilter.GaussianBlur(1.2)))


def encode(img: np.ndarray, fmt: str = "JPEG", **kw) -> bytes:
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, fmt, **kw)
    return buf.getvalue()


@pytest.fixture(scope="module")
def jpegs() -> list[bytes]:
    rng = np.random.default_rng(0)
    return [encode(photo_like(rng, h, w), quality=90, subsampling=2) for h, w in SHAPES]


@pytest.fixture(scope="module")
def decoder() -> BatchDecoder:
    d = BatchDecoder(0, hw_decoder_load=0.5)  # half hardware, half CUDA decoder when present
    yield d
    d.close()


def pillow_rgb(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB")).astype(np.int16)


def test_gpu_decode_matches_pillow(decoder, jpegs):
    out = decoder.decode(jpegs)
    assert out.errors == [None] * len(jpegs)
    assert set(out.sources) == {"hw", "cuda"}  # hw_decoder_load=0.5: both groups ran
    for data, img in zip(jpegs, out.images):
        ref = pillow_rgb(data)
        got = cupy.asnumpy(img).astype(np.int16)
        assert got.shape == ref.shape
        diff = np.abs(got - ref)
        # nvJPEG upsamples chroma without libjpeg's "fancy" filter: within 2 levels on
        # smooth content, a few more at sharp colour edges
        assert np.percentile(diff, 99.5) <= 2, np.percentile(diff, [50, 99, 99.5, 100])
        assert diff.mean() < 0.75


def test_fancy_upsampling_matches_pillow_within_2(jpegs):
    d = BatchDecoder(0, fancy_upsampling=True)
    out = d.decode(jpegs)
    for data, img in zip(jpegs, out.images):
        diff = np.abs(cupy.asnumpy(img).astype(np.int16) - pillow_rgb(data))
        assert diff.max() <= 2, np.percentile(diff, [50, 99, 100])
    d.close()


@pytest.mark.parametrize("hw_load", [1.0, 0.0])
def test_the_async_allocator_decodes_the_same_pixels(jpegs, hw_load):
    plain = BatchDecoder(0, hw_decoder_load=hw_load)
    pooled = BatchDecoder(
        0, hw_decoder_load=hw_load, allocator="async", preallocate_batch_size=len(jpegs)
    )
    for _ in range(3):  # again after nvJPEG's buffers exist
        a, b = plain.decode(jpegs), pooled.decode(jpegs)
        assert a.sources == b.sources
        for x, y in zip(a.images, b.images):
            np.testing.assert_array_equal(cupy.asnumpy(x), cupy.asnumpy(y))
    plain.close()
    pooled.close()


def window_crop(img, win) -> np.ndarray:
    """The part of a decoded image that its (in-bounds) window covers, on the host."""
    y, x, h, w = (round(float(v)) for v in win)
    return cupy.asnumpy(img[y : y + h, x : x + w]).astype(np.int16)


ROIS = [
    (16, 24, 200, 300),
    (0, 0, 333, 500),
    (13, 7, 50, 61),
    (101, 3, 217, 250),
    (8, 8, 48, 40),
    (5, 2, 230, 15),
]


@pytest.mark.parametrize("hw_roi", [False, True])
def test_roi_decode_equals_crop_of_full_decode(jpegs, hw_roi):
    d = BatchDecoder(0, hw_decoder_load=0.5, hw_roi=hw_roi)
    full = d.decode(jpegs)
    roi = d.decode(jpegs, ROIS)
    assert set(roi.sources) == {"hw", "cuda"}
    for (y, x, h, w), f, r, win, src in zip(
        ROIS, full.images, roi.images, roi.windows, roi.sources
    ):
        if src == "cuda" or hw_roi:  # a true ROI decode: just the window's pixels
            assert r.shape == (h, w, 3)
            np.testing.assert_array_equal(win, (0, 0, h, w))
        else:  # the hardware group decodes the whole image; the window locates the ROI
            assert r.shape == f.shape
            np.testing.assert_array_equal(win, (y, x, h, w))
        diff = np.abs(window_crop(r, win) - cupy.asnumpy(f[y : y + h, x : x + w]).astype(np.int16))
        assert diff.max() <= 1, diff.max()
    d.close()


def test_roi_clipped_at_border_reports_window(decoder, jpegs):
    out = decoder.decode(jpegs[:1], [(-10, 450, 100, 100)])
    assert out.images[0].shape == (90, 50, 3)
    np.testing.assert_array_equal(out.windows[0], (-10, 0, 100, 100))


def test_bad_samples_are_reported_not_fatal(decoder, jpegs):
    rng = np.random.default_rng(1)
    rgb = photo_like(rng, 45, 67)
    png = encode(rgb, "PNG")
    cmyk = io.BytesIO()
    Image.fromarray(rgb).convert("CMYK").save(cmyk, "JPEG", quality=90)
    gray = encode(rgb[..., 1], quality=90)
    batch = [
        jpegs[2],
        png,
        b"not an image at all",
        jpegs[0][: len(jpegs[0]) // 3],
        cmyk.getvalue(),
        gray,
        b"",
    ]
    out = decoder.decode(batch)
    assert out.errors[0] is None and out.sources[0] in ("hw", "cuda")
    assert out.errors[1] is None and out.sources[1] == "fallback"
    np.testing.assert_array_equal(cupy.asnumpy(out.images[1]), rgb)  # PNG is lossless
    assert out.images[2] is None and out.errors[2]
    assert out.images[6] is None and out.errors[6]
    # a truncated JPEG may decode partially (as libjpeg does) or fail; either is reported
    assert (out.images[3] is None) == (out.errors[3] is not None)
    for i in (4, 5):  # CMYK and grayscale JPEGs come out as RGB, by whichever decoder
        assert out.errors[i] is None, out.errors[i]
        img = cupy.asnumpy(out.images[i]).astype(np.int16)
        assert img.shape == (45, 67, 3)
        assert np.abs(img - pillow_rgb(batch[i])).mean() < 2.0


def test_output_types(decoder, jpegs):
    rgb = decoder.decode(jpegs[:2], output_type="RGB")
    bgr = decoder.decode(jpegs[:2], output_type="BGR")
    gray = decoder.decode(jpegs[:2], output_type="GRAY")
    for a, b, g in zip(rgb.images, bgr.images, gray.images):
        np.testing.assert_array_equal(cupy.asnumpy(a), cupy.asnumpy(b)[..., ::-1])
        assert g.shape == (*a.shape[:2], 1)
        luma = cupy.asnumpy(a).astype(np.float32) @ np.array([0.299, 0.587, 0.114])
        assert np.abs(cupy.asnumpy(g)[..., 0] - luma).mean() < 2.0


@pytest.mark.parametrize(("backend", "pick"), [("nvimgcodec", "cost"), ("opencv", "order")])
def test_cpu_share_matches_gpu_decode(jpegs, backend, pick):
    from chute.gpu.cpu_decode import cheapest_on_cpu

    rois = [(16, 24, 200, 300), None, (13, 7, 50, 61), None, (8, 8, 48, 40), (5, 2, 230, 15)]
    d = BatchDecoder(0, cpu_share=0.5, cpu_backend=backend, cpu_pick=pick, cpu_threads=2)
    stream = cupy.cuda.Stream(non_blocking=True)
    out = d.decode(jpegs, rois, stream=stream)
    stream.synchronize()
    assert out.errors == [None] * 6
    # half goes to the CPU group (nvImageCodec may hand a sample on to fallback): the
    # cheapest regions there, or the batch's first
    parsed = d.parse(jpegs, rois)
    # cost ratios 0.448, 1, 0.445, 1, 0.672, 0.909: the whole images stay on the GPU
    assert cheapest_on_cpu(parsed.shapes, parsed.regions, range(6), 3) == [0, 2, 4]
    cpu = [0, 2, 4] if pick == "cost" else [0, 1, 2]
    for i, source in enumerate(out.sources):
        assert source in (("cpu", "fallback") if i in cpu else ("hw", "cuda")), out.sources
    ref = BatchDecoder(0).decode(jpegs, rois)
    for a, wa, b, wb in zip(out.images, out.windows, ref.images, ref.windows):
        ca, cb = window_crop(a, wa), window_crop(b, wb)
        assert ca.shape == cb.shape
        assert np.abs(ca - cb).mean() < 0.75
    d.close()


def test_turbo_cpu_share_gives_the_cpu_decoders_pixels(jpegs):
    """The "turbo" CPU group decodes with chute's own CPU decoder: the very pixels of
    decoders.image on the CPU for each ROI; a sample its batch call refuses (not a JPEG, a
    CMYK JPEG) goes to the per-sample CPU path; BGR is RGB reversed."""
    from chute.ops.decoders import image_codec
    from chute.ops.decoders.image_gpu import _cpu_decode, _cpu_regions

    png = encode(photo_like(np.random.default_rng(3), 40, 30), "PNG")
    cmyk = io.BytesIO()
    Image.fromarray(photo_like(np.random.default_rng(4), 32, 48)).convert("CMYK").save(cmyk, "JPEG")
    batch = [*jpegs, png, cmyk.getvalue()]
    rois = [(16, 24, 200, 300), None, (13, 7, 50, 61), None, (8, 8, 48, 40), (5, 2, 230, 15)]
    rois += [None, (2, 3, 20, 30)]
    d = BatchDecoder(0, cpu_share=1.0, cpu_backend="turbo", cpu_threads=3)
    stream = cupy.cuda.Stream(non_blocking=True)
    out = d.decode(batch, rois, stream=stream, cpu_decode=_cpu_decode, cpu_regions=_cpu_regions)
    bgr = d.decode(
        batch, rois, "BGR", stream=stream, cpu_decode=_cpu_decode, cpu_regions=_cpu_regions
    )
    stream.synchronize()
    assert out.errors == [None] * 8
    assert out.sources == ["cpu"] * 6 + ["fallback"] * 2
    for i, (data, roi) in enumerate(zip(batch, rois)):
        region = None if roi is None else (roi[0], roi[1], roi[0] + roi[2], roi[1] + roi[3])
        expected = image_codec.decode(data, output_type="RGB", roi=region)
        np.testing.assert_array_equal(cupy.asnumpy(out.images[i]), expected, err_msg=str(i))
        np.testing.assert_array_equal(cupy.asnumpy(bgr.images[i]), expected[..., ::-1])
    d.close()


def test_turbo_cpu_share_auto_balances_and_keeps_every_sample(jpegs):
    from chute.ops.decoders.image_gpu import _cpu_decode, _cpu_regions

    d = BatchDecoder(0, cpu_share="auto", cpu_backend="turbo", cpu_threads=2)
    batch = jpegs * 20
    for _ in range(4):
        out = d.decode(batch, cpu_decode=_cpu_decode, cpu_regions=_cpu_regions)
        assert out.errors == [None] * len(batch)
        assert [img.shape[:2] for img in out.images] == [(h, w) for h, w in SHAPES] * 20
    assert set(d._balancer._rates) >= {"cpu"}
    assert d._balancer.low <= d._balancer.share() <= d._balancer.high
    d.close()


def test_staging_buffers_of_different_sizes_reuse_the_pinned_pool():
    """CuPy's pinned pool reuses a block only for a request of its size: rounded sizes
    make the CPU share's staging buffers (a different size every batch) reuse one."""
    from chute.gpu.cpu_decode import pinned_buffer

    pool = cupy.get_default_pinned_memory_pool()
    pool.free_all_blocks()
    for nbytes in (9_000_001, 9_437_184, 12_345_678, 16_000_000, 10_000_000):
        buffer = pinned_buffer(nbytes)
        assert buffer.nbytes == nbytes and buffer.dtype == np.uint8
        buffer[:] = 7  # writable host memory
        del buffer
    assert pool.n_free_blocks() == 1  # one 16 MiB block, handed out five times


def test_buffers_of_growing_sizes_reuse_one_block_of_the_device_pool():
    """CuPy's pool reuses a freed block only for a request no larger than it: each batch's
    buffer a little larger than the last took new device memory; on the size grid one
    block serves them all, and the arrays are exactly as long as asked."""
    from chute.gpu.runtime import device_empty, device_size

    pool = cupy.get_default_memory_pool()
    pool.free_all_blocks()
    start = pool.total_bytes()
    mib = 1 << 20
    sizes = [73 * mib + 5, 75 * mib, 78 * mib + 3, 80 * mib]
    assert {device_size(n) for n in sizes} == {80 * mib}
    for n in sizes:
        buf = device_empty(cupy, n, np.uint8)
        assert buf.shape == (n,) and buf.flags.c_contiguous
        buf[-1] = 7
        del buf
    assert pool.total_bytes() - start == 80 * mib
    floats = device_empty(cupy, 3 * mib + 1, np.float32)
    assert floats.shape == (3 * mib + 1,) and floats.dtype == np.float32
    assert floats.base.nbytes == device_size(floats.nbytes)
    dense = device_empty(cupy, 3 * mib + 1, np.float32, exact=True)  # one size every batch
    assert dense.base is None or dense.base.nbytes == dense.nbytes


def test_split_shares():
    d = BatchDecoder(0, hw_decoder_load=0.75, cpu_share=0.2, cpu_threads=2)
    assert d.split(256) == {"cpu": 51, "hw": 154, "cuda": 51}
    assert BatchDecoder(0, use_hw_decoder=False).split(10) == {"cpu": 0, "hw": 0, "cuda": 10}


def test_images_without_cupy_wrapping_feed_the_kernels(decoder, jpegs):
    from chute.gpu.kernels import resize_crop_mirror_normalize

    parsed = decoder.parse(jpegs)
    decoder.prepare(parsed, ROIS)  # ROI host work ahead of decode, as a prep thread does
    raw = decoder.decode(parsed, as_cupy=False)
    wrapped = decoder.decode(jpegs, ROIS)
    assert not isinstance(raw.images[0], cupy.ndarray)
    np.testing.assert_array_equal(raw.windows, wrapped.windows)
    a = resize_crop_mirror_normalize(raw.images, raw.windows, (32, 32), dtype=np.float32)
    b = resize_crop_mirror_normalize(wrapped.images, wrapped.windows, (32, 32), dtype=np.float32)
    np.testing.assert_array_equal(cupy.asnumpy(a), cupy.asnumpy(b))


def test_a_batch_decodes_into_one_buffer_that_lives_with_its_images(jpegs):
    from chute.gpu.codec_api import DeviceImage

    d = BatchDecoder(0, hw_decoder_load=1.0)
    out = d.decode(jpegs, as_cupy=False)
    assert all(isinstance(img, DeviceImage) for img in out.images)
    assert len({id(img.owner) for img in out.images}) == 1  # one allocation per batch
    view = cupy.asarray(out.images[2])
    del out
    ref = pillow_rgb(jpegs[2])
    diff = np.abs(cupy.asnumpy(view).astype(np.int16) - ref)
    assert view.shape == ref.shape and np.percentile(diff, 99.5) <= 2
    d.close()


def test_decoding_does_not_wait_behind_a_busy_python_thread(jpegs):
    """The decoder lets go of the GIL once per call, not per sample (see codec_api)."""
    import threading
    import time

    d = BatchDecoder(0, hw_decoder_load=1.0)
    batch = jpegs * 40
    d.decode(batch, as_cupy=False)
    start = time.perf_counter()
    d.decode(batch, as_cupy=False)
    alone = time.perf_counter() - start
    stop = []

    def spin() -> None:
        while not stop:
            pass

    spinner = threading.Thread(target=spin)
    spinner.start()
    try:
        start = time.perf_counter()
        d.decode(batch, as_cupy=False)
        busy = time.perf_counter() - start
    finally:
        stop.append(1)
        spinner.join()
    # nvImageCodec's Python binding took ~100x longer here (a 5 ms GIL wait per sample)
    assert busy < alone * 4 + 0.1, (alone, busy)
    d.close()
