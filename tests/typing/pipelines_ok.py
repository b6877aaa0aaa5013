"""A pipeline that a type checker must accept: mypy runs on it in `nox -s lint`."""

from __future__ import annotations

import numpy as np

from chute import fn, ops, pipeline_def, types
from chute.graph.node import DataNode


@pipeline_def(batch_size=2, num_threads=1, device_id=None)
def pipe() -> tuple[DataNode, DataNode]:
    jpegs, labels = fn.readers.file(file_root="images", random_shuffle=True)
    images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
    images = fn.resize(images, resize_x=224, resize_y=fn.random.uniform(range=(200, 240)))
    images = fn.rotate(images, angle=15.0, interp_type=types.INTERP_LINEAR, fill_value=0)
    images = fn.crop_mirror_normalize(
        images,
        dtype=types.FLOAT,
        output_layout="CHW",
        mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
        std=np.array([58.4, 57.1, 57.4]),
        mirror=fn.random.coin_flip(probability=0.5),
    )
    images = fn.math.clamp(images, 0.0, 1.0)
    flip = ops.Flip(horizontal=1, device="cpu")
    return flip(images), labels
