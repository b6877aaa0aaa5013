"""fn.debayer / fn.experimental.debayer on the CPU, and the GPU kernel's rule in NumPy.

A Bayer mosaic of a linear RGB ramp demosaics back to the ramp inside the border
(bilinear averages of a linear function are exact), with the outer rows and columns
repeating their neighbours; every pattern and algorithm equals cv2.demosaicing (what
DALI's CPU runs); the GPU kernel's integer rule, mirrored in NumPy, equals OpenCV's.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from chute import fn, pipeline_def
from chute.runtime.errors import OperatorError

PATTERNS = {(0, 0): "BG", (0, 1): "GB", (1, 0): "GR", (1, 1): "RG"}


def run(graph, data, layout="HW", **sources):
    @pipeline_def(batch_size=len(data), num_threads=2, device_id=None)
    def pipe():
        x = fn.external_source(source=lambda: data, layout=layout)
        named = {k: fn.external_source(source=lambda v=v: v) for k, v in sources.items()}
        return graph(x, **named)

    p = pipe()
    p.build()
    (out,) = p.run()
    return [np.asarray(out.at(i)) for i in range(len(data))], out.layout()


def mosaic(rgb: np.ndarray, blue: tuple[int, int]) -> np.ndarray:
    """The sensor image of ``rgb``: red where (y + by, x + bx) are both even, blue where both
    are odd, green elsewhere (blue at ``blue`` in the tile from the second row and column)."""
    h, w, _ = rgb.shape
    yy, xx = np.mgrid[0:h, 0:w]
    py, px = (yy + blue[0]) % 2, (xx + blue[1]) % 2
    channel = np.where((py == 0) & (px == 0), 0, np.where((py == 1) & (px == 1), 2, 1))
    return np.take_along_axis(rgb, channel[..., None], axis=2)[..., 0]


def ramp(h: int, w: int, dtype=np.uint8) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    scale = 1 if dtype == np.uint8 else 200
    rgb = np.stack([10 + 2 * xx + 3 * yy, 200 - 4 * xx + yy, 50 + xx + 5 * yy], axis=-1) * scale
    return rgb.astype(dtype)


@pytest.mark.parametrize("blue", sorted(PATTERNS))
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_mosaic_of_a_linear_ramp_demosaics_back(blue, dtype):
    rgb = ramp(8, 12, dtype)
    (out,), layout = run(lambda x: fn.debayer(x, blue_position=list(blue)), [mosaic(rgb, blue)])
    assert layout == "HWC" and out.dtype == dtype and out.shape == (8, 12, 3)
    np.testing.assert_array_equal(out[1:-1, 1:-1], rgb[1:-1, 1:-1])
    # OpenCV (and DALI) repeat the inner rows and columns at the border
    inner = rgb[1:-1, 1:-1]
    expected = np.pad(inner, ((1, 1), (1, 1), (0, 0)), mode="edge")
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize(
    "algorithm", ["default", "bilinear_ocv", "edgeaware_ocv", "vng_ocv", "gray_ocv"]
)
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_every_pattern_and_algorithm_equals_opencv(algorithm, dtype):
    if algorithm == "vng_ocv" and dtype == np.uint16:
        pytest.skip("VNG takes uint8 only")
    rng = np.random.default_rng(1)
    hi = 256 if dtype == np.uint8 else 65536
    raws = [rng.integers(0, hi, (6, 10)).astype(dtype) for _ in PATTERNS]
    positions = [np.array(p, np.int32) for p in PATTERNS]
    out, _ = run(
        lambda x, b: fn.experimental.debayer(x, blue_position=b, algorithm=algorithm),
        raws,
        b=positions,
    )
    suffix = {"gray_ocv": "2GRAY", "edgeaware_ocv": "2RGB_EA", "vng_ocv": "2RGB_VNG"}.get(
        algorithm, "2RGB"
    )
    for o, raw, pos in zip(out, raws, PATTERNS):
        ref = cv2.demosaicing(raw, getattr(cv2, f"COLOR_Bayer{PATTERNS[pos]}{suffix}"))
        np.testing.assert_array_equal(o, ref.reshape(6, 10, -1))


def test_sequences_and_single_channel_hwc():
    rng = np.random.default_rng(2)
    seq = [rng.integers(0, 256, (3, 4, 6)).astype(np.uint8)]
    out, layout = run(lambda x: fn.debayer(x, blue_position=[1, 1]), seq, layout="FHW")
    assert layout == "FHWC" and out[0].shape == (3, 4, 6, 3)
    for frame, o in zip(seq[0], out[0]):
        np.testing.assert_array_equal(o, cv2.demosaicing(frame, cv2.COLOR_BayerRG2RGB))
    hwc = [seq[0][0][..., None]]
    out, _ = run(lambda x: fn.debayer(x, blue_position=[1, 1]), hwc, layout="HWC")
    np.testing.assert_array_equal(out[0], cv2.demosaicing(seq[0][0], cv2.COLOR_BayerRG2RGB))


def kernel_mirror(raw: np.ndarray, blue: tuple[int, int]) -> np.ndarray:
    """debayer_gpu's kernel, pixel by pixel, in NumPy integers."""
    h, w = raw.shape
    out = np.zeros((h, w, 3), raw.dtype)
    if h < 3 or w < 3:
        return out
    p = raw.astype(np.int64)
    for y in range(h):
        for x in range(w):
            cy, cx = min(max(y, 1), h - 2), min(max(x, 1), w - 2)
            v = p[cy, cx]
            up, down, left, right = p[cy - 1, cx], p[cy + 1, cx], p[cy, cx - 1], p[cy, cx + 1]
            cross = (up + down + left + right + 2) >> 2
            diag = (
                p[cy - 1, cx - 1] + p[cy - 1, cx + 1] + p[cy + 1, cx - 1] + p[cy + 1, cx + 1] + 2
            ) >> 2
            horiz, vert = (left + right + 1) >> 1, (up + down + 1) >> 1
            py, px = (cy + blue[0]) & 1, (cx + blue[1]) & 1
            if not py and not px:
                rgb = (v, cross, diag)
            elif py and px:
                rgb = (diag, cross, v)
            elif not py:
                rgb = (horiz, v, vert)
            else:
                rgb = (vert, v, horiz)
            out[y, x] = rgb
    return out


@pytest.mark.parametrize("shape", [(6, 8), (2, 4), (4, 2), (10, 6)])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16])
def test_gpu_kernel_rule_equals_opencv_bilinear(shape, dtype):
    rng = np.random.default_rng(3)
    raw = rng.integers(0, 256 if dtype == np.uint8 else 65536, shape).astype(dtype)
    for pos, name in PATTERNS.items():
        ref = cv2.demosaicing(raw, getattr(cv2, f"COLOR_Bayer{name}2RGB"))
        np.testing.assert_array_equal(kernel_mirror(raw, pos), ref)


def test_debayer_argument_errors():
    raw = [np.zeros((4, 6), np.uint8)]
    with pytest.raises(ValueError, match="'blue_position' must be two values in"):
        run(lambda x: fn.debayer(x, blue_position=[2, 0]), raw)
    with pytest.raises(OperatorError, match="must be even, got 5x6"):
        run(lambda x: fn.debayer(x, blue_position=[0, 0]), [np.zeros((5, 6), np.uint8)])
    with pytest.raises(OperatorError, match="'vng_ocv' takes uint8 images only"):
        run(
            lambda x: fn.debayer(x, blue_position=[0, 0], algorithm="vng_ocv"),
            [np.zeros((4, 6), np.uint16)],
        )
    with pytest.raises(OperatorError, match="uint8 or uint16"):
        run(lambda x: fn.debayer(x, blue_position=[0, 0]), [np.zeros((4, 6), np.int16)])
    with pytest.raises(OperatorError, match="single-channel"):
        run(lambda x: fn.debayer(x, blue_position=[0, 0]), [np.zeros((4, 6, 3), np.uint8)], "HWC")
    with pytest.raises(OperatorError, match="'default_npp' has no CPU backend"):
        run(lambda x: fn.debayer(x, blue_position=[0, 0], algorithm="default_npp"), raw)
    with pytest.raises(ValueError, match="accepted values"):
        run(lambda x: fn.debayer(x, blue_position=[0, 0], algorithm="bilinear_npp"), raw)
