"""Region-of-interest and DCT-scaled JPEG decoding through libjpeg-turbo 3 (chute.ops.decoders.turbo)."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from chute.ops.decoders import image_codec, turbo
from chute.ops.decoders.image_codec import DecodeError, decode, decode_scaled

decoder = turbo.load()
needs_turbo = pytest.mark.skipif(decoder is None, reason="no libturbojpeg 3 found")


def _photo(height: int, width: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (height // 6 + 2, width // 6 + 2, 3), dtype=np.uint8)
    big = np.asarray(Image.fromarray(small).resize((width, height), Image.BICUBIC), np.int16)
    # sharp colour noise on top, so that chroma edges differ from pixel to pixel
    return np.clip(big + rng.integers(-40, 40, big.shape), 0, 255).astype(np.uint8)


def _jpeg(pixels: np.ndarray, **options) -> bytes:
    out = io.BytesIO()
    Image.fromarray(pixels).save(out, "JPEG", quality=90, **options)
    return out.getvalue()


FILES = {
    f"{sub}{'-progressive' if prog else ''}-{h}x{w}": _jpeg(
        _photo(h, w, i), subsampling=sub, progressive=prog
    )
    for i, (sub, prog, (h, w)) in enumerate(
        [
            ("4:2:0", False, (75, 101)),
            ("4:2:0", True, (64, 64)),
            ("4:2:2", False, (37, 53)),
            ("4:4:4", False, (75, 101)),
            ("4:4:4", True, (33, 47)),
        ]
    )
}
GRAY = _jpeg(_photo(40, 57, 9)[:, :, 0])


@needs_turbo
def test_the_library_is_the_version_3_api():
    header = decoder.header(np.frombuffer(FILES["4:2:0-75x101"], np.uint8))
    assert (header.height, header.width, header.colorspace) == (75, 101, "YCbCr")
    assert header.subsampling == 2  # TJSAMP_420


@needs_turbo
@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.parametrize("numerator", [8, 4, 2])
def test_any_region_equals_the_same_pixels_of_a_full_decode(name, numerator):
    buf = np.frombuffer(FILES[name], np.uint8)
    full, y, x = decoder.decode(buf, "RGB", numerator)
    assert (y, x) == (0, 0)
    height, width = full.shape[:2]
    rng = np.random.default_rng(numerator)
    for _ in range(40):
        y0, y1 = sorted(rng.choice(height + 1, 2, replace=False))
        x0, x1 = sorted(rng.choice(width + 1, 2, replace=False))
        part, oy, ox = decoder.decode(buf, "RGB", numerator, (y0, x0, y1, x1))
        assert oy <= y0 and ox <= x0
        assert part.shape[0] >= y1 - oy and part.shape[1] >= x1 - ox
        np.testing.assert_array_equal(
            part[y0 - oy : y1 - oy, x0 - ox : x1 - ox], full[y0:y1, x0:x1]
        )


@pytest.fixture(params=["native", "ctypes"])
def region_path(request, monkeypatch):
    """decode_region through chute.runtime._native (one GIL-free call) or the ctypes binding."""
    if decoder is None:
        pytest.skip("no libturbojpeg 3 found")
    if request.param == "ctypes":
        monkeypatch.setattr(decoder, "native", None)
    elif decoder.native is None:
        pytest.skip("chute.runtime._native is not built")
    return request.param


@pytest.mark.parametrize("name", sorted(FILES))
@pytest.mark.parametrize("numerator", [8, 4, 2, 1])
def test_decode_region_gives_exactly_the_region_of_a_full_decode(region_path, name, numerator):
    buf = np.frombuffer(FILES[name], np.uint8)
    full, _, _ = decoder.decode(buf, "RGB", numerator)
    height, width = full.shape[:2]
    rng = np.random.default_rng(numerator)
    rects = [(0, 0, height, width), (0, 0, 1, 1), (height - 1, width - 1, height, width)]
    for _ in range(40):
        y0, y1 = sorted(rng.choice(height + 1, 2, replace=False))
        x0, x1 = sorted(rng.choice(width + 1, 2, replace=False))
        rects.append((int(y0), int(x0), int(y1), int(x1)))
    for y0, x0, y1, x1 in rects:
        for fmt, channels in (("RGB", slice(None)), ("BGR", slice(None, None, -1))):
            part = decoder.decode_region(buf, fmt, numerator, (y0, x0, y1, x1))
            assert part.flags.c_contiguous and part.shape == (y1 - y0, x1 - x0, 3)
            np.testing.assert_array_equal(part, full[y0:y1, x0:x1, channels])


def test_decode_region_of_gray_and_bad_data(region_path):
    import simplejpeg

    gray = decoder.decode_region(np.frombuffer(GRAY, np.uint8), "GRAY", 8, (3, 4, 30, 50))
    np.testing.assert_array_equal(gray, simplejpeg.decode_jpeg(GRAY, colorspace="GRAY")[3:30, 4:50])
    data = np.frombuffer(FILES["4:2:0-75x101"], np.uint8)
    with pytest.raises(ValueError, match="Premature end"):
        decoder.decode_region(data[: data.size // 2].copy(), "RGB", 8, (60, 0, 75, 101))
    with pytest.raises(ValueError, match="Not a JPEG"):
        decoder.decode_region(np.zeros(64, np.uint8), "RGB", 8, (0, 0, 1, 1))
    with pytest.raises(ValueError, match="outside"):
        decoder.decode_region(data, "RGB", 4, (0, 0, 38, 52))  # the 1/2 image is 38x51
    # the thread's decoder is fine afterwards
    np.testing.assert_array_equal(
        decoder.decode_region(data, "RGB", 8, (0, 0, 75, 101)), decoder.decode(data, "RGB")[0]
    )


def test_decode_region_in_several_threads(region_path):
    from concurrent.futures import ThreadPoolExecutor

    buf = np.frombuffer(_jpeg(_photo(200, 300, 5)), np.uint8)
    full = decoder.decode(buf, "RGB")[0]
    rects = [(i, 2 * i, 100 + 3 * i, 150 + 4 * i) for i in range(32)]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda r: decoder.decode_region(buf, "RGB", 8, r), rects))
    for (y0, x0, y1, x1), part in zip(rects, got):
        np.testing.assert_array_equal(part, full[y0:y1, x0:x1])


@needs_turbo
def test_a_small_region_decodes_less_than_the_whole_image():
    buf = np.frombuffer(_jpeg(_photo(480, 640, 3)), np.uint8)
    part, oy, ox = decoder.decode(buf, "RGB", 8, (100, 200, 150, 260))
    assert part.shape[0] < 60 and part.shape[1] <= 60 + 32
    assert (oy, ox) == (99, 192)  # one row above; the MCU column left of x = 199


@needs_turbo
def test_full_decode_equals_simplejpeg_and_gray_output():
    import simplejpeg

    data = FILES["4:2:0-75x101"]
    full, _, _ = decoder.decode(np.frombuffer(data, np.uint8), "RGB")
    np.testing.assert_array_equal(full, simplejpeg.decode_jpeg(data))
    gray, _, _ = decoder.decode(np.frombuffer(GRAY, np.uint8), "GRAY")
    np.testing.assert_array_equal(gray, simplejpeg.decode_jpeg(GRAY, colorspace="GRAY"))


@needs_turbo
def test_corrupt_and_truncated_data_raise_value_errors():
    data = np.frombuffer(FILES["4:2:0-75x101"], np.uint8)
    with pytest.raises(ValueError, match="Premature end"):
        decoder.decode(data[: data.size // 2].copy(), "RGB")
    with pytest.raises(ValueError, match="Not a JPEG"):
        decoder.header(np.zeros(64, np.uint8))
    truncated = data[: data.size // 2].tobytes()
    # A truncated file is refused whatever region is asked (the structure check), even
    # one above the damage that the decoder would never read past: every decoder, on the
    # CPU or the GPU, keeps the same files.
    for roi in ((65, 0, 75, 10), (0, 0, 10, 10)):
        with pytest.raises(DecodeError, match="truncated"):
            decode(truncated, roi=roi)
    # Well-formed markers around a scan cut short: the decoder finds it, below the region.
    cut = truncated + b"\xff\xd9"
    with pytest.raises(DecodeError, match="jpeg"):
        decode(cut, roi=(65, 0, 75, 10))
    np.testing.assert_array_equal(decode(cut, roi=(0, 0, 10, 10)), decode(data)[:10, :10])


@needs_turbo
def test_decoders_in_several_threads_agree():
    from concurrent.futures import ThreadPoolExecutor

    buf = np.frombuffer(_jpeg(_photo(200, 300, 5)), np.uint8)
    rects = [(i, 2 * i, 100 + i, 150 + 2 * i) for i in range(32)]
    expected = [decoder.decode(buf, "RGB", 8, r) for r in rects]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda r: decoder.decode(buf, "RGB", 8, r), rects))
    for (a, ay, ax), (b, by, bx) in zip(expected, got):
        assert (ay, ax) == (by, bx)
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("backend", ["turbo", "simplejpeg"])
def test_image_codec_roi_and_scale_match_with_either_backend(backend, monkeypatch):
    if backend == "turbo" and decoder is None:
        pytest.skip("no libturbojpeg 3 found")
    if backend == "simplejpeg":
        monkeypatch.setattr(turbo, "load", lambda: None)
    data = _jpeg(_photo(120, 160, 7))
    full = decode(data)
    for roi in [(0, 0, 120, 160), (7, 13, 90, 77), (119, 0, 120, 1), (50, 150, 60, 160)]:
        y0, x0, y1, x1 = roi
        np.testing.assert_array_equal(decode(data, roi=roi), full[y0:y1, x0:x1])
    scaled = decode_scaled(data, (20, 20), roi=(8, 16, 104, 144))
    assert scaled.scale == 0.25
    y0, x0, y1, x1 = scaled.window
    assert (y1 - y0, x1 - x0) == (24.0, 32.0)


def test_the_library_can_be_switched_off(monkeypatch):
    monkeypatch.setenv("CHUTE_LIBTURBOJPEG", "")
    assert turbo._first_loadable() is None
    monkeypatch.setenv("CHUTE_LIBTURBOJPEG", "/nonexistent/libturbojpeg.so")
    found = turbo._first_loadable()  # falls through to the bundled or system copy
    assert found is None or found.path != "/nonexistent/libturbojpeg.so"
    assert image_codec.turbo is turbo


@needs_turbo
def test_decoded_images_never_share_the_scratch_buffer():
    first_data, second_data = _jpeg(_photo(64, 80, 11)), _jpeg(_photo(64, 80, 12))
    for roi in (None, (0, 0, 64, 80), (5, 16, 40, 64)):
        first = decode(first_data, roi=roi)
        kept = first.copy()
        decode(second_data, roi=roi)  # reuses this thread's scratch buffer
        np.testing.assert_array_equal(first, kept)
        assert first.flags.c_contiguous and first.flags.writeable
