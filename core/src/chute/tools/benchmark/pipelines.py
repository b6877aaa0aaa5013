"""chute's side of the benchmark: the ResNet-50 train and validation pipelines."""

from __future__ import annotations

from typing import Any

MEAN = [0.485 * 255, 0.456 * 255, 0.406 * 255]
STD = [0.229 * 255, 0.224 * 255, 0.225 * 255]


def imagenet_input(fn: Any, types: Any, images: Any, mirror: Any = 0) -> Any:
    """crop_mirror_normalize to ResNet-50's input: a 224x224 centre crop, fp16 CHW (``fn``
    and ``types`` are chute's or DALI's: both libraries' pipelines end the same way)."""
    return fn.crop_mirror_normalize(
        images,
        dtype=types.FLOAT16,
        output_layout="CHW",
        crop=(224, 224),
        mean=MEAN,
        std=STD,
        mirror=mirror,
    )


def train_pipeline(
    root: str,
    batch_size: int,
    threads: int,
    device: str = "cpu",
    seed: int = 0,
    device_id: int = 0,
    shard_id: int = 0,
    num_shards: int = 1,
    decoder_args: dict[str, Any] | None = None,
    **kw: Any,
) -> Any:
    """readers.file -> image_random_crop -> resize 224 -> crop_mirror_normalize (fp16 CHW, random flip).

    ``device_id`` is the GPU of a ``device="gpu"`` pipeline; ``shard_id`` /
    ``num_shards`` give the reader its shard (one pipeline per GPU or rank);
    ``decoder_args`` go to the decoder, ``kw`` to the pipeline.
    """
    from chute import fn, pipeline_def, types

    gpu = device == "gpu"

    @pipeline_def(
        batch_size=batch_size,
        num_threads=threads,
        seed=seed,
        device_id=device_id if gpu else None,
        **kw,
    )
    def pipe():
        jpegs, labels = fn.readers.file(
            file_root=root,
            random_shuffle=True,
            shard_id=shard_id,
            num_shards=num_shards,
            name="Reader",
        )
        images = fn.decoders.image_random_crop(
            jpegs,
            device="mixed" if gpu else "cpu",
            output_type=types.RGB,
            random_area=[0.08, 1.0],
            random_aspect_ratio=[0.75, 4 / 3],
            num_attempts=100,
            **(decoder_args or {}),
        )
        images = fn.resize(images, resize_x=224, resize_y=224)
        return imagenet_input(fn, types, images, fn.random.coin_flip()), labels

    return pipe()


def val_pipeline(
    root: str, batch_size: int, threads: int, device: str = "cpu", seed: int = 0, **kw: Any
) -> Any:
    """readers.file -> decoders.image -> resize shorter side 256 -> centre crop 224, fp16 CHW."""
    from chute import fn, pipeline_def, types

    gpu = device == "gpu"

    @pipeline_def(
        batch_size=batch_size, num_threads=threads, seed=seed, device_id=0 if gpu else None, **kw
    )
    def pipe():
        jpegs, labels = fn.readers.file(file_root=root, name="Reader")
        images = fn.decoders.image(jpegs, device="mixed" if gpu else "cpu", output_type=types.RGB)
        images = fn.resize(images, resize_shorter=256)
        return imagenet_input(fn, types, images), labels

    return pipe()


def decode_pipeline(
    root: str,
    batch_size: int,
    threads: int,
    device: str = "cpu",
    seed: int = 0,
    random_crop: bool = False,
    **kw: Any,
) -> Any:
    """readers.file -> decoders.image (or image_random_crop): decoding alone."""
    from chute import fn, pipeline_def, types

    gpu = device == "gpu"

    @pipeline_def(
        batch_size=batch_size, num_threads=threads, seed=seed, device_id=0 if gpu else None, **kw
    )
    def pipe():
        jpegs, labels = fn.readers.file(file_root=root, random_shuffle=True, name="Reader")
        dev = "mixed" if gpu else "cpu"
        if random_crop:
            images = fn.decoders.image_random_crop(jpegs, device=dev, output_type=types.RGB)
        else:
            images = fn.decoders.image(jpegs, device=dev, output_type=types.RGB)
        return images, labels

    return pipe()


def random_crop_pipeline(
    root: str, batch_size: int, threads: int, device: str = "cpu", seed: int = 0, **kw: Any
) -> Any:
    """readers.file -> decoders.image_random_crop: decoding of random-resized-crop windows."""
    return decode_pipeline(root, batch_size, threads, device, seed, random_crop=True, **kw)


PRESETS = {
    "train": train_pipeline,
    "val": val_pipeline,
    "decode": decode_pipeline,
    "random-crop": random_crop_pipeline,
}


def chute_batches(preset: str, root: str, batch_size: int, threads: int, device: str) -> Any:
    """An endless generator of chute batches (the data output)."""
    return endless_batches(PRESETS[preset](root, batch_size, threads, device))


def endless_batches(pipe: Any) -> Any:
    """Batches of output "data" of a pipeline with outputs (data, label) read by "Reader"."""
    from chute import Iterator, LastBatchPolicy

    it = Iterator(
        pipe,
        ["data", "label"],
        reader_name="Reader",
        last_batch_policy=LastBatchPolicy.DROP,
        auto_reset=True,
    )
    while True:
        for (batch,) in it:
            yield batch["data"]
