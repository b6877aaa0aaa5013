"""Eager (debug=True) and graph pipelines give equal batches: they share the executor's run_node."""

from __future__ import annotations

import numpy as np
import pytest
from test_debug import assert_same, cycling_source, jpeg_files

from chute import fn, pipeline_def, types


def decode_random_crop_cmn(files):
    jpegs, labels = fn.readers.file(files=files, random_shuffle=True, name="Reader")
    images = fn.decoders.image_random_crop(jpegs, output_type=types.RGB)
    images = fn.resize(images, size=(10, 10))
    out = fn.crop_mirror_normalize(
        images,
        crop=(8, 8),
        crop_pos_x=fn.random.uniform(range=(0, 1)),
        mirror=fn.random.coin_flip(),
        mean=[128.0] * 3,
        std=[64.0] * 3,
        output_layout="CHW",
    )
    return out, labels


def arithmetic(files):
    x = fn.external_source(source=cycling_source(), layout="HWC")
    y = fn.cast(x, dtype=types.FLOAT)
    z = fn.math.clamp(fn.math.sqrt(y) * fn.random.uniform(range=(0.5, 2.0)) - 3, 0.0, 9.0)
    return z, (x // 3) % 7, x >= 128, -y + fn.random.normal(shape=(1,))


def python_functions(files):
    x = fn.external_source(source=cycling_source(), layout="HWC")
    s = fn.python_function(x, function=lambda a: a.astype(np.int64).sum(axis=(0, 1)))
    b = fn.python_function(x, function=lambda xs: [a[::-1] for a in xs], batch_processing=True)
    return s, b


def random_geometry(files):
    x = fn.external_source(source=cycling_source(), layout="HWC")
    matrix = fn.transforms.rotation(angle=fn.random.uniform(range=(-30, 30)), center=(3, 2.5))
    warped = fn.warp_affine(x, matrix=matrix, fill_value=0)
    crop = fn.random_resized_crop(x, size=(4, 4))
    return warped, crop, fn.flip(x, vertical=fn.random.coin_flip(probability=0.3))


def readers_and_properties(files):
    jpegs, labels = fn.readers.file(files=files, random_shuffle=True, name="Reader")
    shapes = fn.peek_image_shape(jpegs)
    return labels, shapes, fn.get_property(jpegs, key="source_info")


# (pipeline, reads files): the readers' epochs are 7 files in 3 batches of 3, run twice with
# a reset between; the external sources give 3 batches of 4 (test_debug.BATCHES)
PIPELINES = [
    (decode_random_crop_cmn, True),
    (arithmetic, False),
    (python_functions, False),
    (random_geometry, False),
    (readers_and_properties, True),
]


@pytest.mark.parametrize("body,reads", PIPELINES, ids=[b.__name__ for b, _ in PIPELINES])
def test_eager_equals_graph(body, reads, tmp_path):
    files = jpeg_files(tmp_path, 7)
    results = []
    for debug in (False, True):
        batch_size = 3 if reads else 4
        pipe = pipeline_def(batch_size=batch_size, num_threads=3, seed=5, debug=debug)(body)(files)
        pipe.build()
        outs = []
        for _epoch in range(2 if reads else 1):
            for _ in range(3):
                outs.append([[np.array(s) for s in o.as_cpu()] for o in pipe.run()])
            pipe.reset()
        results.append(outs)
        pipe.close()
    assert_same(*results)
