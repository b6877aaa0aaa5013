"""gaussian_blur against scipy.ndimage (float64) and cv2.GaussianBlur, for every border."""

from __future__ import annotations

import math

import cv2
import numpy as np
import pytest
from scipy import ndimage

from chute.ops.image.filter_kernels import gaussian_blur, gaussian_window

RNG = np.random.default_rng(3)
BORDERS = ["constant", "reflect", "reflect_101", "replicate", "wrap"]
SCIPY_MODE = {
    "constant": "constant",
    "reflect": "reflect",  # fedcba|abcdef
    "reflect_101": "mirror",  # fedcb|abcdef
    "replicate": "nearest",
    "wrap": "wrap",
}
CV2_BORDER = {
    "constant": cv2.BORDER_CONSTANT,
    "reflect": cv2.BORDER_REFLECT,
    "reflect_101": cv2.BORDER_REFLECT_101,
    "replicate": cv2.BORDER_REPLICATE,
}


def _kernel(sigma: float, window: int) -> np.ndarray:
    t = np.arange(window) - window // 2
    g = np.exp(-(t**2) / (2 * sigma * sigma))
    return g / g.sum()


def _reference(x: np.ndarray, sig: tuple, win: tuple, border: str, fill: float) -> np.ndarray:
    y = x.astype(np.float64)
    for axis in (0, 1):
        y = ndimage.correlate1d(
            y, _kernel(sig[axis], win[axis]), axis=axis, mode=SCIPY_MODE[border], cval=fill
        )
    return y


def test_window_rules() -> None:
    assert gaussian_window(1.0, 0) == (1.0, 7)  # radius ceil(3 sigma)
    assert gaussian_window(0.6, 0) == (0.6, 5)  # ceil(1.8) = 2
    sigma, window = gaussian_window(0.0, 9)
    assert window == 9 and math.isclose(sigma, (4 - 1) * 0.3 + 0.8)
    assert gaussian_window(2.0, 3) == (2.0, 3)
    with pytest.raises(ValueError):
        gaussian_window(0.0, 4)
    with pytest.raises(ValueError):
        gaussian_window(0.0, 0)


@pytest.mark.parametrize("border", BORDERS)
@pytest.mark.parametrize("shape", [(37, 53, 3), (5, 3, 1), (9, 11), (31, 17, 4)])
@pytest.mark.parametrize(("sigma", "window"), [((1.3, 0.7), 0), (3.0, 0), (0.0, (5, 9))])
def test_float_matches_scipy(border: str, shape: tuple, sigma: object, window: object) -> None:
    x = RNG.random(shape).astype(np.float32)
    sig = np.broadcast_to(np.asarray(sigma, float), (2,))
    win = np.broadcast_to(np.asarray(window), (2,))
    s_h, w_h = gaussian_window(float(sig[0]), int(win[0]))
    s_w, w_w = gaussian_window(float(sig[1]), int(win[1]))
    got = gaussian_blur(x, sigma, window, border=border, fill_value=0.25)
    assert got.shape == x.shape and got.dtype == np.float32
    # float32 accumulation: 1e-5 absolute on data in [0, 1].
    want = _reference(x, (s_h, s_w), (w_h, w_w), border, 0.25)
    np.testing.assert_allclose(got, want, atol=1e-5)


@pytest.mark.parametrize("border", BORDERS)
def test_uint8_within_one_of_exact(border: str) -> None:
    x = RNG.integers(0, 256, size=(41, 29, 3), dtype=np.uint8)
    got = gaussian_blur(x, 2.0, border=border, fill_value=7)
    want = np.floor(_reference(x, (2.0, 2.0), (13, 13), border, 7) + 0.5)
    assert got.dtype == np.uint8
    # OpenCV's 8-bit path is fixed point: within 1 of the exactly rounded float result.
    assert np.abs(got.astype(np.int64) - want).max() <= 1


@pytest.mark.parametrize("border", list(CV2_BORDER))
def test_matches_cv2_gaussian_blur(border: str) -> None:
    x = RNG.random((33, 47, 3)).astype(np.float32)
    got = gaussian_blur(x, (1.5, 2.5), border=border)
    want = cv2.GaussianBlur(x, (17, 11), 2.5, sigmaY=1.5, borderType=CV2_BORDER[border])
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_output_dtype_and_single_axis() -> None:
    x = RNG.integers(0, 256, size=(15, 21, 3), dtype=np.uint8)
    f = gaussian_blur(x, 1.0, dtype=np.float32)
    np.testing.assert_allclose(f, _reference(x, (1.0, 1.0), (7, 7), "reflect_101", 0), atol=1e-4)
    # sigma 0 on H: only W is blurred.
    only_w = gaussian_blur(x.astype(np.float32), (0.0, 1.0))
    want = ndimage.correlate1d(x.astype(np.float64), _kernel(1.0, 7), axis=1, mode="mirror")
    np.testing.assert_allclose(only_w, want, atol=1e-4)
    with pytest.raises(ValueError, match="border"):
        gaussian_blur(x, 1.0, border="mirror")
