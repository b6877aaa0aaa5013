"""The CPU image codec against Pillow's decode: formats, colour, dtype, orientation, roi, errors."""

from __future__ import annotations

import io
import struct
import time
import zlib

import cv2
import numpy as np
import pytest
from _decoder_samples import encode, photo, pillow_decode
from PIL import Image, ImageFile, ImageOps, features

from chute.ops.decoders.image_codec import (
    DecodeError,
    decode,
    decode_resized,
    decode_scaled,
    peek_shape,
)
from chute.ops.decoders.image_headers import detect_format

RGB = photo(75, 101, seed=1)
GRAY = photo(75, 101, seed=2, channels=1)
RGBA = np.concatenate([RGB, photo(75, 101, seed=3, channels=1)], axis=2)


def _cmyk_jpeg() -> bytes:
    return encode(Image.fromarray(RGB).convert("CMYK"), "JPEG", quality=90)


def _palette_png(transparent: bool) -> bytes:
    image = Image.fromarray(RGB).quantize(64)
    if transparent:
        return encode(image, "PNG", transparency=5)
    return encode(image, "PNG")


def _png16(channels: int) -> tuple[bytes, np.ndarray]:
    rng = np.random.default_rng(7)
    array = rng.integers(0, 65536, (40, 30, channels), dtype=np.uint16)
    if channels == 1:
        return encode(Image.fromarray(array[:, :, 0]), "PNG"), array
    ok, data = cv2.imencode(".png", cv2.cvtColor(array, cv2.COLOR_RGB2BGR))
    assert ok
    return data.tobytes(), array


def _animated_gif() -> bytes:
    frames = [Image.fromarray(photo(30, 40, seed=s)).quantize(32) for s in (4, 5)]
    buffer = io.BytesIO()
    frames[0].save(buffer, "GIF", save_all=True, append_images=frames[1:])
    return buffer.getvalue()


# name -> (encoded bytes, format, max |difference| per channel to Pillow's RGB, source channels)
# JPEG: simplejpeg and Pillow both run libjpeg-turbo's accurate IDCT, so
# they agree; ±1 allows for a different libjpeg-turbo build.
CASES = {
    "jpeg_baseline": (encode(RGB, "JPEG", quality=90), "jpeg", 1, 3),
    "jpeg_444": (encode(RGB, "JPEG", quality=90, subsampling=0), "jpeg", 1, 3),
    "jpeg_progressive": (encode(RGB, "JPEG", quality=90, progressive=True), "jpeg", 1, 3),
    "jpeg_gray": (encode(GRAY, "JPEG", quality=90), "jpeg", 1, 1),
    "jpeg_cmyk": (_cmyk_jpeg(), "jpeg", 1, 3),
    "png_rgb": (encode(RGB, "PNG"), "png", 0, 3),
    "png_rgba": (encode(RGBA, "PNG"), "png", 0, 4),
    "png_gray": (encode(GRAY, "PNG"), "png", 0, 1),
    "png_gray_alpha": (encode(Image.fromarray(RGBA).convert("LA"), "PNG"), "png", 0, 2),
    "png_palette": (_palette_png(False), "png", 0, 3),
    "png_palette_alpha": (_palette_png(True), "png", 0, 4),
    "png_16bit_rgb": (_png16(3)[0], "png", 0, 3),
    "bmp": (encode(RGB, "BMP"), "bmp", 0, 3),
    "bmp_palette": (encode(Image.fromarray(RGB).quantize(16), "BMP"), "bmp", 0, 3),
    "tiff": (encode(RGB, "TIFF"), "tiff", 0, 3),
    "tiff_lzw": (encode(RGBA, "TIFF", compression="tiff_lzw"), "tiff", 0, 4),
    "ppm": (encode(RGB, "PPM"), "pnm", 0, 3),
    "pgm": (encode(GRAY, "PPM"), "pnm", 0, 1),
    "pbm": (encode(Image.fromarray(GRAY[:, :, 0]).convert("1"), "PPM"), "pnm", 0, 1),
    "webp_lossless": (encode(RGB, "WEBP", lossless=True), "webp", 0, 3),
    "webp_lossy": (encode(RGB, "WEBP", quality=80), "webp", 1, 3),
    "gif": (encode(Image.fromarray(RGB).quantize(64), "GIF"), "gif", 0, 3),
    "gif_animated": (_animated_gif(), "gif", 0, 3),
}
if features.check("jpg_2000"):
    CASES["jpeg2000"] = (encode(RGB, "JPEG2000"), "jpeg2000", 0, 3)


@pytest.mark.parametrize("name", sorted(CASES))
def test_format_detected_from_content(name):
    data, fmt, _, _ = CASES[name]
    assert detect_format(data) == fmt
    assert detect_format(np.frombuffer(data, dtype=np.uint8)) == fmt


@pytest.mark.parametrize("name", sorted(CASES))
def test_rgb_decode_matches_pillow(name):
    data, _, tolerance, _ = CASES[name]
    reference = pillow_decode(data, "RGB")
    image = decode(data)
    assert image.dtype == np.uint8 and image.flags.c_contiguous
    assert image.shape == reference.shape
    assert np.abs(image.astype(int) - reference).max() <= tolerance


@pytest.mark.parametrize("name", sorted(CASES))
def test_any_data_keeps_source_channels_and_peek_agrees(name):
    data, _, _, channels = CASES[name]
    image = decode(data, "ANY_DATA")
    assert image.shape[2] == channels
    assert peek_shape(data) == image.shape


def test_first_frame_of_animated_gif():
    data = _animated_gif()
    first = Image.open(io.BytesIO(data))
    np.testing.assert_array_equal(decode(data), np.asarray(first.convert("RGB")))


def test_png_named_jpg_is_decoded_as_png(tmp_path):
    path = tmp_path / "actually_a_png.jpg"
    path.write_bytes(encode(RGB, "PNG"))
    data = path.read_bytes()
    assert detect_format(data) == "png"
    np.testing.assert_array_equal(decode(data), RGB)


@pytest.mark.parametrize("name", ["png_rgb", "png_rgba", "jpeg_baseline", "tiff"])
def test_bgr_is_reversed_rgb(name):
    data = CASES[name][0]
    np.testing.assert_array_equal(decode(data, "BGR"), decode(data, "RGB")[:, :, ::-1])


@pytest.mark.parametrize("name", ["png_rgb", "png_rgba", "png_gray_alpha", "png_palette", "bmp"])
def test_gray_matches_pillow_within_one(name):
    data = CASES[name][0]
    image = decode(data, "GRAY")
    assert image.shape[2] == 1
    # OpenCV and Pillow round the BT.601 luma sum differently: ±1.
    assert np.abs(image.astype(int) - pillow_decode(data, "L")).max() <= 1


def test_gray_from_colour_jpeg_is_its_luma_channel():
    data = CASES["jpeg_baseline"][0]
    difference = np.abs(decode(data, "GRAY").astype(int) - pillow_decode(data, "L"))
    # libjpeg-turbo returns the stored Y plane; Pillow recomputes luma from
    # clipped RGB, so saturated pixels may differ by a few levels.
    assert difference.mean() < 0.1
    assert np.percentile(difference, 99) <= 1


@pytest.mark.parametrize("name", ["png_rgb", "jpeg_baseline", "png_gray"])
def test_ycbcr_is_bt601_limited_range(name):
    data = CASES[name][0]
    rgb = decode(data).astype(np.float64)
    matrix = np.array(
        [[65.481, 128.553, 24.966], [-37.797, -74.203, 112.0], [112.0, -93.786, -18.214]]
    )
    expected = rgb @ (matrix.T / 255) + [16, 128, 128]
    ycbcr = decode(data, "YCbCr")
    assert ycbcr.dtype == np.uint8
    # OpenCV rounds through fixed point: within one level of the exact value.
    assert np.abs(ycbcr - expected).max() < 1
    assert np.abs(ycbcr - expected).mean() < 0.3
    assert ycbcr[..., 0].min() >= 16 and ycbcr[..., 0].max() <= 235


def test_dtypes_from_8bit_source():
    data = CASES["png_rgb"][0]
    np.testing.assert_array_equal(decode(data, dtype=np.uint16), RGB.astype(np.uint16) * 257)
    as_float = decode(data, dtype=np.float32)
    assert as_float.dtype == np.float32
    np.testing.assert_allclose(as_float, RGB / 255, atol=1e-6)


@pytest.mark.parametrize("channels", [1, 3])
def test_16bit_png_keeps_16_bits_or_high_byte(channels):
    data, original = _png16(channels)
    output_type = "GRAY" if channels == 1 else "RGB"
    np.testing.assert_array_equal(decode(data, output_type, dtype=np.uint16), original)
    np.testing.assert_array_equal(decode(data, output_type), (original >> 8).astype(np.uint8))
    np.testing.assert_allclose(
        decode(data, output_type, dtype=np.float32), original / 65535, atol=1e-6
    )


def test_unsupported_dtype_and_output_type_are_named():
    data = CASES["png_rgb"][0]
    with pytest.raises(ValueError, match="dtype must be one of"):
        decode(data, dtype=np.int64)
    with pytest.raises(ValueError, match="output_type must be one of"):
        decode(data, output_type="LAB")


def _with_orientation(fmt: str, orientation: int, array: np.ndarray = RGB) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = orientation
    params = {"quality": 90} if fmt == "JPEG" else {}
    return encode(array, fmt, exif=exif.tobytes(), **params)


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "WEBP", "TIFF"])
@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_matches_pillow_exif_transpose(fmt, orientation):
    if fmt == "WEBP":
        data = encode(RGB, "WEBP", lossless=True, exif=_exif_bytes(orientation))
    else:
        data = _with_orientation(fmt, orientation)
    reference = np.asarray(ImageOps.exif_transpose(Image.open(io.BytesIO(data))).convert("RGB"))
    image = decode(data)
    assert image.shape == reference.shape
    assert np.abs(image.astype(int) - reference).max() <= (1 if fmt == "JPEG" else 0)
    assert peek_shape(data) == reference.shape
    raw = decode(data, adjust_orientation=False)
    assert raw.shape == RGB.shape
    if fmt != "JPEG":
        np.testing.assert_array_equal(raw, RGB)
    assert peek_shape(data, adjust_orientation=False) == RGB.shape


def _exif_bytes(orientation: int) -> bytes:
    exif = Image.Exif()
    exif[0x0112] = orientation
    return exif.tobytes()


@pytest.mark.parametrize(
    "name", ["jpeg_baseline", "jpeg_gray", "png_rgba", "tiff", "webp_lossless"]
)
@pytest.mark.parametrize("output_type", ["RGB", "ANY_DATA"])
def test_roi_equals_region_of_full_decode(name, output_type):
    data = CASES[name][0]
    full = decode(data, output_type)
    for roi in [(0, 0, 75, 101), (3, 7, 40, 60), (50, 80, 75, 101), (10, 0, 11, 1)]:
        part = decode(data, output_type, roi=roi)
        y0, x0, y1, x1 = roi
        # Decoding then cropping: exact even for JPEG (same IDCT, same pixels).
        np.testing.assert_array_equal(part, full[y0:y1, x0:x1])


@pytest.mark.parametrize("fmt", ["PNG", "TIFF", "JPEG"])
@pytest.mark.parametrize("orientation", [3, 6, 7, 8])
def test_roi_is_in_oriented_coordinates(fmt, orientation):
    data = _with_orientation(fmt, orientation)
    full = decode(data)
    roi = (5, 9, 30, 41)
    np.testing.assert_array_equal(decode(data, roi=roi), full[5:30, 9:41])


@pytest.mark.parametrize("roi", [(0, 0, 76, 10), (5, 5, 5, 9), (-1, 0, 4, 4), (0, 0, 10, 102)])
def test_roi_outside_image_raises(roi):
    with pytest.raises(ValueError, match="roi"):
        decode(CASES["png_rgb"][0], roi=roi)


def _big_photo_jpeg(orientation: int = 1) -> bytes:
    return _with_orientation("JPEG", orientation, photo(240, 320, seed=9))


@pytest.mark.parametrize(
    ("min_size", "roi", "scale"),
    [
        ((30, 40), None, 1 / 8),
        ((31, 40), None, 1 / 4),
        ((100, 100), None, 1 / 2),
        ((121, 100), None, 1),
        ((0, 0), None, 1 / 8),
        ((50, 50), (20, 30, 220, 230), 1 / 4),
        ((500, 500), (20, 30, 220, 230), 1),
    ],
)
def test_scaled_decode_never_below_min_size(min_size, roi, scale):
    data = _big_photo_jpeg()
    result = decode_scaled(data, min_size, roi=roi)
    assert result.scale == scale
    roi_h, roi_w = (240, 320) if roi is None else (roi[2] - roi[0], roi[3] - roi[1])
    y0, x0, y1, x1 = result.window
    assert (y1 - y0, x1 - x0) == (roi_h * scale, roi_w * scale)
    # Never smaller than asked, unless the roi itself is smaller (then full scale).
    assert y1 - y0 >= min(min_size[0], roi_h) and x1 - x0 >= min(min_size[1], roi_w)
    assert 0 <= y0 < 1 and 0 <= x0 < 1
    assert result.image.shape[0] - 1 < y1 <= result.image.shape[0]
    assert result.image.shape[1] - 1 < x1 <= result.image.shape[1]


@pytest.mark.parametrize("orientation", [1, 6, 7])
def test_scaled_decode_looks_like_downscaled_full_decode(orientation):
    data = _big_photo_jpeg(orientation)
    roi = (16, 32, 176, 192)  # multiples of 16: whole pixels at 1/2 and 1/4
    result = decode_scaled(data, (40, 40), roi=roi)
    assert result.scale == 1 / 4
    assert result.window == (0.0, 0.0, 40.0, 40.0)
    full = decode(data, roi=roi)
    expected = cv2.resize(full, (40, 40), interpolation=cv2.INTER_AREA)
    # DCT-domain scaling is not box filtering; close, not equal.
    assert np.abs(result.image.astype(int) - expected).mean() < 3


def test_scaled_decode_of_lossless_format_is_full_scale():
    data = CASES["png_rgb"][0]
    result = decode_scaled(data, (5, 5), roi=(3, 4, 50, 60))
    assert result.scale == 1
    np.testing.assert_array_equal(result.image, RGB[3:50, 4:60])


@pytest.mark.parametrize("orientation", [1, 8])
def test_decode_resized_is_close_to_resizing_the_full_roi(orientation):
    data = _big_photo_jpeg(orientation)
    roi = (13, 27, 201, 222)
    image = decode_resized(data, (60, 70), roi=roi)
    assert image.shape == (60, 70, 3)
    full = decode(data, roi=roi)
    expected = cv2.resize(full, (70, 60), interpolation=cv2.INTER_AREA)
    assert np.abs(image.astype(int) - expected).mean() < 4


# ---- errors -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty input"),
        (b"hello, this is a text file\n", "not an image: starts with b'hello"),
        (b"%PDF-1.7\n", "unsupported format: pdf"),
        (b"\x00\x00\x00\x18ftypheic\x00\x00\x00\x00", "unsupported format: heic"),
        (bytes(np.random.default_rng(0).integers(0, 256, 4000, dtype=np.uint8)), "not an image"),
    ],
)
def test_not_an_image_raises_decode_error(data, message):
    with pytest.raises(DecodeError, match=message):
        decode(data)
    with pytest.raises(ValueError, match=message):
        peek_shape(data)


@pytest.mark.parametrize("name", ["jpeg_baseline", "jpeg_progressive", "png_rgb", "webp_lossy"])
@pytest.mark.parametrize("keep", [0.5, 0.9])
def test_truncated_image_raises_not_gray(name, keep):
    data = CASES[name][0]
    with pytest.raises(DecodeError):
        decode(data[: int(len(data) * keep)])


def test_jpeg_missing_only_its_end_marker_raises():
    data = CASES["jpeg_baseline"][0]
    assert data.endswith(b"\xff\xd9")
    with pytest.raises(DecodeError, match="jpeg"):
        decode(data[:-2])


def test_pillow_does_not_load_truncated_images_by_default():
    assert ImageFile.LOAD_TRUNCATED_IMAGES is False


def test_corrupt_jpeg_body_raises():
    data = bytearray(CASES["jpeg_baseline"][0])
    start = data.index(b"\xff\xda")  # start of scan
    data[start + 20 : start + 400] = b"\xff" * 380
    with pytest.raises(DecodeError):
        decode(bytes(data))


def _png_claiming(height: int, width: int) -> bytes:
    data = bytearray(encode(RGB[:4, :4], "PNG"))
    ihdr = struct.pack(">II", width, height) + bytes(data[24:29])
    data[16:29] = ihdr
    data[29:33] = struct.pack(">I", zlib.crc32(b"IHDR" + ihdr))
    return bytes(data)


def _jpeg_claiming(height: int, width: int) -> bytes:
    data = bytearray(encode(RGB[:8, :8], "JPEG"))
    sof = data.index(b"\xff\xc0")
    data[sof + 5 : sof + 9] = struct.pack(">HH", height, width)
    return bytes(data)


@pytest.mark.parametrize(
    ("data", "claim"),
    [
        (_png_claiming(100000, 100000), "100000x100000"),
        (_jpeg_claiming(65000, 60000), "60000x65000"),
    ],
)
def test_huge_header_is_refused_before_allocating(data, claim):
    started = time.perf_counter()
    with pytest.raises(DecodeError, match=claim):
        decode(data)
    assert time.perf_counter() - started < 1.0
    # Peeking a claim is harmless and lets a caller filter such files out.
    assert peek_shape(data)[:2] == tuple(int(v) for v in claim.split("x"))[::-1]


def _claiming(fmt: str, width: int, height: int) -> bytes:
    if fmt == "PPM":
        return f"P6\n# a comment\n{width} {height}\n255\n".encode() + bytes(64)
    data = bytearray(encode(RGB[:8, :8], fmt, **({"lossless": True} if fmt == "WEBP" else {})))
    if fmt == "GIF":
        data[6:10] = struct.pack("<HH", width, height)
    elif fmt == "BMP":
        data[18:26] = struct.pack("<ii", width, -height)  # negative: stored top-down
    else:  # lossless WebP: 14-bit sizes minus one after the 0x2f signature
        data[21:25] = struct.pack("<I", (width - 1) | (height - 1) << 14)
    return bytes(data)


@pytest.mark.parametrize("fmt", ["GIF", "BMP", "PPM", "WEBP"])
def test_size_claims_of_other_formats_are_checked_before_decoding(fmt):
    data = _claiming(fmt, 12000, 9000)
    with pytest.raises(DecodeError, match="12000x9000 = 108000000 pixels"):
        decode(data)


def test_max_pixels_is_configurable():
    data = CASES["png_rgb"][0]
    with pytest.raises(DecodeError, match="max_pixels=1000"):
        decode(data, max_pixels=1000)
    assert decode(data, max_pixels=None).shape == RGB.shape


def test_input_may_be_a_uint8_array_or_memoryview():
    data = CASES["jpeg_baseline"][0]
    expected = decode(data)
    np.testing.assert_array_equal(decode(np.frombuffer(data, dtype=np.uint8)), expected)
    np.testing.assert_array_equal(decode(memoryview(data)), expected)
    with pytest.raises(ValueError, match="1-D uint8"):
        decode(np.zeros((4, 4), dtype=np.uint8))


@pytest.mark.parametrize("name", sorted(CASES))
def test_mutated_files_decode_or_raise_decode_error(name):
    # Damage in the pixel data may go unnoticed (JPEG has no checksum), but
    # nothing other than DecodeError may escape: no IndexError, no crash.
    data = CASES[name][0]
    rng = np.random.default_rng(len(data))
    for trial in range(30):
        damaged = bytearray(data)
        if trial % 2:
            damaged = damaged[: rng.integers(1, len(damaged))]
        else:
            where = rng.integers(0, min(len(damaged), 300), size=4)
            damaged[where[0] : where[0] + 4] = rng.integers(0, 256, 4, dtype=np.uint8).tobytes()
        for attempt in (decode, peek_shape):
            try:
                attempt(bytes(damaged))
            except DecodeError:
                pass
