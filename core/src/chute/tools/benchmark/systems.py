"""The anchors beside chute: DALI (CPU and mixed), torchvision GPU decode, Pillow loaders.

Each returns an endless generator of batches, or raises ImportError when its
packages (or a GPU) are missing, so the table shows what the machine has.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Iterator
from typing import Any

import numpy as np

from chute.tools.benchmark.pipelines import MEAN, STD, imagenet_input


def files_of(root: str) -> list[tuple[str, int]]:
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    return [
        (os.path.join(root, c, f), i)
        for i, c in enumerate(classes)
        for f in sorted(os.listdir(os.path.join(root, c)))
    ]


def rrc_window(h: int, w: int, rng: random.Random) -> tuple[int, int, int, int]:
    """torchvision's RandomResizedCrop window (scale 0.08-1, ratio 3/4-4/3)."""
    area = h * w
    for _ in range(10):
        target = area * rng.uniform(0.08, 1.0)
        ratio = math.exp(rng.uniform(math.log(3 / 4), math.log(4 / 3)))
        cw, ch = round(math.sqrt(target * ratio)), round(math.sqrt(target / ratio))
        if 0 < cw <= w and 0 < ch <= h:
            return rng.randint(0, h - ch), rng.randint(0, w - cw), ch, cw
    return 0, 0, h, w


def dali_batches(
    preset: str,
    root: str,
    batch: int,
    threads: int,
    device: str,
    cpu_decode: bool = False,
    hw_decoder_load: float | None = None,
) -> Iterator[Any]:
    """DALI's version; with ``cpu_decode`` decoding and resizing stay on the CPU (DALI's CPU
    path); ``hw_decoder_load`` overrides its mixed decoders' default share for the hardware
    decoder."""
    p = dali_pipeline(
        preset, root, batch, threads, device, cpu_decode, hw_decoder_load=hw_decoder_load
    )
    p.build()
    while True:
        images, _ = p.run()
        yield images


def dali_pipeline(
    preset: str,
    root: str,
    batch: int,
    threads: int,
    device: str,
    cpu_decode: bool = False,
    device_id: int = 0,
    shard_id: int = 0,
    num_shards: int = 1,
    hw_decoder_load: float | None = None,
) -> Any:
    """The DALI pipeline of ``preset`` (outputs images, labels; reader "Reader"), not built.

    ``hw_decoder_load`` (mixed decoders only) replaces DALI's default share of the JPEGs
    sent to the hardware decoder; the rest are decoded with Huffman decoding on the CPU.
    """
    from nvidia.dali import fn, pipeline_def, types

    gpu = device == "gpu"
    load = (
        {}
        if hw_decoder_load is None or not gpu or cpu_decode
        else {"hw_decoder_load": hw_decoder_load}
    )

    @pipeline_def(
        batch_size=batch,
        num_threads=threads,
        device_id=device_id if gpu else None,
        prefetch_queue_depth=2,
        seed=0,
    )
    def pipe():
        jpegs, labels = fn.readers.file(
            file_root=root,
            random_shuffle=preset == "train",
            shard_id=shard_id,
            num_shards=num_shards,
            name="Reader",
        )
        dev = "mixed" if gpu and not cpu_decode else "cpu"
        if preset in ("decode", "random-crop"):
            if preset == "decode":
                return fn.decoders.image(jpegs, device=dev, output_type=types.RGB, **load), labels
            crop = fn.decoders.image_random_crop(jpegs, device=dev, output_type=types.RGB, **load)
            return crop, labels
        if preset == "train":
            images = fn.decoders.image_random_crop(
                jpegs,
                device=dev,
                output_type=types.RGB,
                random_area=[0.08, 1.0],
                random_aspect_ratio=[0.75, 4 / 3],
                num_attempts=100,
                **load,
            )
            images = fn.resize(images, resize_x=224, resize_y=224)
            mirror = fn.random.coin_flip()
        else:
            images = fn.decoders.image(jpegs, device=dev, output_type=types.RGB, **load)
            images = fn.resize(images, resize_shorter=256)
            mirror = 0
        return imagenet_input(fn, types, images, mirror), labels

    return pipe()


def tv_gpu_batches(preset: str, root: str, batch: int, threads: int, device: str) -> Iterator[Any]:
    from concurrent.futures import ThreadPoolExecutor

    import torch
    import torchvision
    from torchvision.io import decode_jpeg
    from torchvision.transforms.v2 import functional as F

    if not torch.cuda.is_available():
        raise ImportError("torchvision GPU decoding needs CUDA")
    files = files_of(root)
    pool = ThreadPoolExecutor(threads)
    mean = torch.tensor(MEAN, device="cuda").view(1, 3, 1, 1) / 255
    std = torch.tensor(STD, device="cuda").view(1, 3, 1, 1) / 255
    rng = random.Random(0)
    while True:
        rng.shuffle(files)
        for s in range(0, len(files) - batch + 1, batch):
            datas = list(pool.map(lambda f: torchvision.io.read_file(f[0]), files[s : s + batch]))
            out = []
            for im in decode_jpeg(datas, device="cuda"):
                if preset == "train":
                    top, left, h, w = rrc_window(im.shape[1], im.shape[2], rng)
                    im = F.resized_crop(im, top, left, h, w, [224, 224], antialias=True)
                    if rng.random() < 0.5:
                        im = F.horizontal_flip(im)
                else:
                    im = F.center_crop(F.resize(im, [256], antialias=True), [224, 224])
                out.append(im)
            yield torch.stack(out).float().div_(255).sub_(mean).div_(std).half()


def pil_loader_batches(
    preset: str, root: str, batch: int, threads: int, device: str
) -> Iterator[Any]:
    import torch
    import torchvision
    from torchvision import transforms as T

    norm = T.Normalize([m / 255 for m in MEAN], [s / 255 for s in STD])
    if preset == "train":
        tf = T.Compose([T.RandomResizedCrop(224), T.RandomHorizontalFlip(), T.ToTensor(), norm])
    else:
        tf = T.Compose([T.Resize(256), T.CenterCrop(224), T.ToTensor(), norm])
    ds = torchvision.datasets.ImageFolder(root, tf)
    dl = torch.utils.data.DataLoader(
        ds,
        batch_size=batch,
        shuffle=preset == "train",
        num_workers=threads,
        drop_last=True,
        persistent_workers=True,
        prefetch_factor=4,
    )
    gpu = device == "gpu"
    while True:
        for x, _ in dl:
            yield x.cuda(non_blocking=True).half() if gpu else x.half()


def pil_threads_batches(
    preset: str, root: str, batch: int, threads: int, device: str
) -> Iterator[Any]:
    """Pillow + NumPy on a thread pool (what a user writes without a framework)."""
    from concurrent.futures import ThreadPoolExecutor

    from PIL import Image

    files = files_of(root)
    pool = ThreadPoolExecutor(threads)
    mean = np.asarray(MEAN, np.float32)
    inv_std = 1 / np.asarray(STD, np.float32)

    def load(args: tuple[str, int]) -> np.ndarray:
        path, seed = args
        rng = random.Random(seed)
        with Image.open(path) as im:
            im = im.convert("RGB")
            if preset == "decode":
                return np.asarray(im)
            if preset == "random-crop":
                top, left, h, w = rrc_window(im.height, im.width, rng)
                return np.asarray(im.crop((left, top, left + w, top + h)))
            if preset == "train":
                top, left, h, w = rrc_window(im.height, im.width, rng)
                im = im.resize((224, 224), Image.BILINEAR, box=(left, top, left + w, top + h))
                if rng.random() < 0.5:
                    im = im.transpose(Image.FLIP_LEFT_RIGHT)
            else:
                scale = 256 / min(im.size)
                im = im.resize((round(im.width * scale), round(im.height * scale)), Image.BILINEAR)
                left, top = (im.width - 224) // 2, (im.height - 224) // 2
                im = im.crop((left, top, left + 224, top + 224))
            x = (np.asarray(im, np.float32) - mean) * inv_std
        return x.transpose(2, 0, 1).astype(np.float16)

    rng = random.Random(0)
    while True:
        rng.shuffle(files)
        for s in range(0, len(files) - batch + 1, batch):
            chunk = [(f, rng.getrandbits(32)) for f, _ in files[s : s + batch]]
            images = list(pool.map(load, chunk))
            yield np.stack(images) if preset in ("train", "val") else images


def chute_gen(preset: str, root: str, batch: int, threads: int, device: str) -> Iterator[Any]:
    from chute.tools.benchmark.pipelines import chute_batches

    return chute_batches(preset, root, batch, threads, device)


def chute_cpu_gen(preset: str, root: str, batch: int, threads: int, device: str) -> Iterator[Any]:
    return chute_gen(preset, root, batch, threads, "cpu")


def dali_cpu_batches(
    preset: str, root: str, batch: int, threads: int, device: str
) -> Iterator[Any]:
    return dali_batches(preset, root, batch, threads, device, cpu_decode=True)


def dali_hw_batches(preset: str, root: str, batch: int, threads: int, device: str) -> Iterator[Any]:
    """DALI with every JPEG on the hardware decoder (hw_decoder_load=1): what DALI gets from
    the decoding engines alone, beside chute, which decodes on them only by default."""
    return dali_batches(preset, root, batch, threads, device, hw_decoder_load=1.0)


SYSTEMS = {
    "chute": chute_gen,
    "chute-cpu": chute_cpu_gen,
    "dali": dali_batches,
    "dali-cpu": dali_cpu_batches,
    "dali-hw": dali_hw_batches,
    "tv-gpu": tv_gpu_batches,
    "pil-loader": pil_loader_batches,
    "pil-threads": pil_threads_batches,
}
