"""An ImageNet-like sample dataset drawn procedurally with NumPy and OpenCV.

Twelve classes of scenes (a sky over hills, a brick wall, grass, gravel, a checkerboard,
bubbles, ...), each drawn from its own random parameters at 600 x 800, so every file is
different; each file is a random crop of its scene, rescaled to ImageNet-like size (short
side 300-500, aspect 3:4..3:2, some portrait), color-jittered, with sensor-like noise,
saved as 4:2:0 JPEG at quality 88-95. The class folder is the scene's name, so a picture of
the batch shows whether labels are right. Nothing beyond chute's own dependencies is needed
(it used scikit-image's photographs, an extra install for one picture).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

import cv2
import numpy as np

SCENE_H, SCENE_W = 600, 800


def _smooth_noise(rng: np.random.Generator, scale: int, channels: int = 1) -> np.ndarray:
    """Noise in [0, 1] with features about ``scale`` pixels wide (upsampled, blurred)."""
    small = rng.random((SCENE_H // scale + 2, SCENE_W // scale + 2, channels)).astype(np.float32)
    big = cv2.resize(small, (SCENE_W, SCENE_H), interpolation=cv2.INTER_CUBIC)
    return np.clip(big.reshape(SCENE_H, SCENE_W, channels), 0, 1)


def _color(rng: np.random.Generator, base: tuple[int, int, int], spread: int = 30) -> tuple:
    return tuple(int(np.clip(c + rng.integers(-spread, spread + 1), 0, 255)) for c in base)


def _landscape(rng: np.random.Generator) -> np.ndarray:
    y = np.linspace(0, 1, SCENE_H, dtype=np.float32)[:, None, None]
    sky = np.array(_color(rng, (90, 150, 230)), np.float32) * (1 - 0.4 * y)
    img = np.broadcast_to(sky, (SCENE_H, SCENE_W, 3)).copy()
    x = np.arange(SCENE_W)
    for layer, base in enumerate(((70, 120, 60), (50, 100, 40), (40, 80, 30))):
        horizon = SCENE_H * (0.45 + 0.15 * layer) + 40 * np.sin(
            x / rng.uniform(60, 160) + rng.uniform(0, 6)
        )
        mask = np.arange(SCENE_H)[:, None] > horizon[None, :]
        img[mask] = _color(rng, base)
    return img + 40 * (_smooth_noise(rng, 16) - 0.5)


def _bricks(rng: np.random.Generator) -> np.ndarray:
    img = np.full((SCENE_H, SCENE_W, 3), _color(rng, (200, 200, 190), 15), np.float32)
    bh, bw = int(rng.integers(30, 50)), int(rng.integers(70, 110))
    for row, y in enumerate(range(0, SCENE_H, bh)):
        for x in range(-(row % 2) * bw // 2, SCENE_W, bw):
            cv2.rectangle(
                img, (x + 3, y + 3), (x + bw - 3, y + bh - 3), _color(rng, (160, 70, 50)), -1
            )
    return img + 50 * (_smooth_noise(rng, 3) - 0.5)


def _grass(rng: np.random.Generator) -> np.ndarray:
    img = np.zeros((SCENE_H, SCENE_W, 3), np.float32) + _color(rng, (60, 120, 40))
    for _ in range(1200):
        x, y = int(rng.integers(0, SCENE_W)), int(rng.integers(0, SCENE_H))
        tip = (x + int(rng.integers(-8, 9)), y - int(rng.integers(15, 40)))
        cv2.line(img, (x, y), tip, _color(rng, (80, 160, 50), 40), 3)
    return img


def _gravel(rng: np.random.Generator) -> np.ndarray:
    img = np.zeros((SCENE_H, SCENE_W, 3), np.float32) + _color(rng, (120, 115, 105))
    for _ in range(1500):
        center = (int(rng.integers(0, SCENE_W)), int(rng.integers(0, SCENE_H)))
        axes = (int(rng.integers(4, 14)), int(rng.integers(3, 10)))
        grey = int(rng.integers(80, 200))
        cv2.ellipse(
            img, center, axes, float(rng.uniform(0, 180)), 0, 360, (grey, grey, grey - 10), -1
        )
    return img


def _checker(rng: np.random.Generator) -> np.ndarray:
    cell = int(rng.integers(30, 80))
    yy, xx = np.mgrid[0:SCENE_H, 0:SCENE_W]
    on = ((yy // cell + xx // cell) % 2).astype(bool)
    img = np.zeros((SCENE_H, SCENE_W, 3), np.float32)
    img[on], img[~on] = _color(rng, (230, 230, 230), 20), _color(rng, (30, 30, 30), 20)
    return img


def _bubbles(rng: np.random.Generator) -> np.ndarray:
    img = np.zeros((SCENE_H, SCENE_W, 3), np.float32) + _color(rng, (20, 40, 90))
    for _ in range(80):
        center = (int(rng.integers(0, SCENE_W)), int(rng.integers(0, SCENE_H)))
        cv2.circle(img, center, int(rng.integers(10, 70)), _color(rng, (120, 200, 240), 60), -1)
    return img


def _stripes(rng: np.random.Generator) -> np.ndarray:
    angle, period = rng.uniform(0, np.pi), rng.uniform(20, 60)
    yy, xx = np.mgrid[0:SCENE_H, 0:SCENE_W].astype(np.float32)
    wave = 0.5 + 0.5 * np.sin((xx * np.cos(angle) + yy * np.sin(angle)) * 2 * np.pi / period)
    a, b = (
        np.array(_color(rng, (240, 200, 40)), np.float32),
        np.array(_color(rng, (40, 40, 160)), np.float32),
    )
    return wave[..., None] * a + (1 - wave[..., None]) * b


def _sunset(rng: np.random.Generator) -> np.ndarray:
    y = np.linspace(0, 1, SCENE_H, dtype=np.float32)[:, None, None]
    top, bottom = (
        np.array(_color(rng, (60, 30, 110)), np.float32),
        np.array(_color(rng, (250, 140, 40)), np.float32),
    )
    img = np.broadcast_to(top * (1 - y) + bottom * y, (SCENE_H, SCENE_W, 3)).copy()
    sun = (int(rng.integers(150, SCENE_W - 150)), int(SCENE_H * rng.uniform(0.5, 0.7)))
    cv2.circle(img, sun, int(rng.integers(50, 90)), (255, 230, 150), -1)
    img[int(SCENE_H * 0.75) :] = _color(rng, (20, 20, 30), 10)
    return img


def _marble(rng: np.random.Generator) -> np.ndarray:
    yy, xx = np.mgrid[0:SCENE_H, 0:SCENE_W].astype(np.float32)
    veins = np.sin((xx + yy) / rng.uniform(30, 80) + 8 * _smooth_noise(rng, 40)[..., 0])
    light = 0.5 + 0.5 * np.abs(veins)
    return light[..., None] * np.array(_color(rng, (235, 230, 220), 15), np.float32)


def _clouds(rng: np.random.Generator) -> np.ndarray:
    cloud = _smooth_noise(rng, 60) * 0.6 + _smooth_noise(rng, 15) * 0.4
    sky = np.array(_color(rng, (80, 140, 220)), np.float32)
    return sky * (1 - cloud) + 255 * cloud


def _mosaic(rng: np.random.Generator) -> np.ndarray:
    small = rng.integers(0, 256, (SCENE_H // 40 + 1, SCENE_W // 40 + 1, 3)).astype(np.float32)
    img = cv2.resize(small, (SCENE_W + 40, SCENE_H + 40), interpolation=cv2.INTER_NEAREST)
    img = img[:SCENE_H, :SCENE_W].copy()
    img[::40], img[:, ::40] = 20, 20
    return img


def _night(rng: np.random.Generator) -> np.ndarray:
    img = np.zeros((SCENE_H, SCENE_W, 3), np.float32) + _color(rng, (10, 10, 35), 8)
    stars = rng.random((SCENE_H, SCENE_W)) > 0.997
    img[stars] = 255
    moon = (int(rng.integers(100, SCENE_W - 100)), int(rng.integers(80, 250)))
    cv2.circle(img, moon, int(rng.integers(30, 60)), (230, 230, 200), -1)
    return img


SCENES: dict[str, Callable[[np.random.Generator], np.ndarray]] = {
    "bricks": _bricks,
    "bubbles": _bubbles,
    "checker": _checker,
    "clouds": _clouds,
    "grass": _grass,
    "gravel": _gravel,
    "landscape": _landscape,
    "marble": _marble,
    "mosaic": _mosaic,
    "night": _night,
    "stripes": _stripes,
    "sunset": _sunset,
}


def scene(name: str, rng: np.random.Generator) -> np.ndarray:
    """One SCENE_H x SCENE_W RGB uint8 picture of class ``name``."""
    return np.clip(SCENES[name](rng), 0, 255).astype(np.uint8)


def _make_one(args: tuple[str, int, int]) -> str:
    from PIL import Image, ImageEnhance

    out_dir, index, seed = args
    names = sorted(SCENES)
    rng = np.random.default_rng([seed, index])
    name = names[index % len(names)]
    src = scene(name, rng)
    h, w = src.shape[:2]
    short = int(rng.integers(300, 501))
    aspect = float(rng.uniform(0.75, 1.5))
    if rng.random() < 0.2:
        aspect = 1 / aspect
    tw, th = (int(short * aspect), short) if aspect >= 1 else (short, int(short / aspect))
    cw = int(rng.integers(max(32, w // 3), w + 1))
    ch = min(h, max(32, int(cw * th / tw)))
    x0, y0 = int(rng.integers(0, w - cw + 1)), int(rng.integers(0, h - ch + 1))
    img = Image.fromarray(src[y0 : y0 + ch, x0 : x0 + cw]).resize((tw, th), Image.BILINEAR)
    if rng.random() < 0.5:
        img = img.transpose(Image.FLIP_LEFT_RIGHT)
    img = ImageEnhance.Color(img).enhance(float(rng.uniform(0.6, 1.4)))
    img = ImageEnhance.Brightness(img).enhance(float(rng.uniform(0.8, 1.2)))
    noisy = np.asarray(img, np.int16) + rng.normal(0, 12, (th, tw, 3)).astype(np.int16)
    folder = os.path.join(out_dir, name)
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{index:06d}.jpg")
    Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8)).save(
        path, "JPEG", quality=int(rng.integers(88, 96)), subsampling=2
    )
    return path


def make_imagenet_like(
    out_dir: str, n: int = 2048, seed: int = 0, jobs: int | None = None, progress: bool = False
) -> str:
    """Write ``n`` JPEGs into class folders under ``out_dir`` (kept if already complete)."""
    marker = os.path.join(out_dir, f".complete-{n}-{seed}")
    if os.path.exists(marker):
        return out_dir
    os.makedirs(out_dir, exist_ok=True)
    tasks = [(out_dir, i, seed) for i in range(n)]
    jobs = jobs or os.cpu_count() or 1
    with ProcessPoolExecutor(jobs) as pool:
        results = pool.map(_make_one, tasks, chunksize=32)
        if progress:
            from tqdm import tqdm

            results = tqdm(results, total=n, desc="making sample images", unit="img")
        for _ in results:
            pass
    open(marker, "w").close()
    return out_dir
