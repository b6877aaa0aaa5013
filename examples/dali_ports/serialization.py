"""DALI's pipeline serialization, ported: serialize() a pipeline, deserialize() it elsewhere.

Only the imports differ from the DALI program. DALI writes a protobuf; chute writes its
own versioned JSON form (docs/serialization.md), through the same methods and arguments.
"""

import os
import sys
import tempfile

import numpy as np

import chute.fn as fn
import chute.types as types
from chute import pipeline_def
from chute.pipeline import Pipeline
from chute.tools.sample_data import make_imagenet_like

image_dir = make_imagenet_like(tempfile.mkdtemp(), n=int(sys.argv[1]) if len(sys.argv) > 1 else 16)


@pipeline_def(batch_size=4, num_threads=2, device_id=0, seed=99)
def train_pipeline():
    jpegs, labels = fn.readers.file(file_root=image_dir, random_shuffle=True, name="Reader")
    images = fn.decoders.image(jpegs, device="mixed", output_type=types.RGB)
    images = fn.random_resized_crop(images, size=(32, 32))
    images = fn.crop_mirror_normalize(
        images,
        dtype=types.FLOAT,
        output_layout="CHW",
        mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
        std=[0.229 * 255, 0.224 * 255, 0.225 * 255],
        mirror=fn.random.coin_flip(),
    )
    return images, labels


pipe = train_pipeline()
serialized_pipe = pipe.serialize()
print("serialized:", type(serialized_pipe).__name__, len(serialized_pipe) > 0)

filename = os.path.join(tempfile.mkdtemp(), "serialized_pipe")
pipe.serialize(filename=filename)

pipe_from_string = Pipeline.deserialize(serialized_pipeline=serialized_pipe)
pipe_from_file = Pipeline.deserialize(filename=filename, num_threads=1)
print("deserialized batch size:", pipe_from_string.batch_size, pipe_from_file.num_threads)

same = True
for _ in range(3):
    a = pipe.run()
    b = pipe_from_string.run()
    c = pipe_from_file.run()
    for x, y, z in zip(a, b, c):
        x, y, z = x.as_cpu(), y.as_cpu(), z.as_cpu()
        same &= all(
            np.array_equal(x.at(i), y.at(i)) and np.array_equal(x.at(i), z.at(i))
            for i in range(len(x))
        )
print("same outputs:", same)
