"""An ImageNet-like sample dataset made from the photographs scikit-image ships.

Each file is a random crop of one photo, rescaled to ImageNet-like size
(short side 300-500, aspect 3:4..3:2, some portrait), color-jittered, with
sensor-like noise, saved as 4:2:0 JPEG at quality 88-95. The class folder is
the photo's name, so a picture of the batch shows whether labels are right.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor

import numpy as np

PHOTOS = (
    "astronaut.png",
    "chelsea.png",
    "coffee.png",
    "hubble_deep_field.jpg",
    "ihc.png",
    "motorcycle_left.png",
    "retina.jpg",
    "rocket.jpg",
    "brick.png",
    "grass.png",
    "gravel.png",
    "color.png",
)

_photos: dict[str, np.ndarray] | None = None


def _load_photos() -> dict[str, np.ndarray]:
    global _photos
    if _photos is None:
        try:
            import skimage
        except ImportError:
            raise ImportError(
                "the sample dataset is made from scikit-image's photos: pip install scikit-image "
                "(or pip install 'chute[demo]')"
            ) from None
        from PIL import Image

        folder = os.path.join(os.path.dirname(skimage.__file__), "data")
        _photos = {}
        for name in PHOTOS:
            path = os.path.join(folder, name)
            if os.path.exists(path):
                _photos[name.split(".")[0]] = np.asarray(Image.open(path).convert("RGB"))
        if not _photos:
            raise RuntimeError(f"no photographs found in {folder}")
    return _photos


def _make_one(args: tuple[str, int, int]) -> str:
    from PIL import Image, ImageEnhance

    out_dir, index, seed = args
    photos = _load_photos()
    names = sorted(photos)
    rng = np.random.default_rng([seed, index])
    name = names[index % len(names)]
    src = photos[name]
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
    _load_photos()  # fail early, in this process, if scikit-image is missing
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
