"""DALI's "ExternalSource Operator" tutorial, ported: an iterator of encoded JPEGs and labels.

Only the imports differ from the DALI program. A preamble makes the images and their
file_list.txt; the "mixed" decoder runs on the CPU where there is no GPU.
"""

import os
import sys
import tempfile
from random import shuffle

import numpy as np

import chute.fn as fn
import chute.types as types
from chute.pipeline import Pipeline
from chute.tools.sample_data import make_imagenet_like

# preamble: the images and a file_list.txt of "path label" lines
images_dir = (
    make_imagenet_like(tempfile.mkdtemp(), n=int(sys.argv[1]) if len(sys.argv) > 1 else 12) + "/"
)
classes = sorted(d for d in os.listdir(images_dir) if os.path.isdir(images_dir + d))
with open(images_dir + "file_list.txt", "w") as f:
    for label, name in enumerate(classes):
        for jpeg in sorted(os.listdir(images_dir + name)):
            f.write(f"{name}/{jpeg} {label}\n")

batch_size = 4


class ExternalInputIterator:
    def __init__(self, batch_size):
        self.images_dir = images_dir
        self.batch_size = batch_size
        with open(self.images_dir + "file_list.txt") as f:
            self.files = [line.rstrip() for line in f if line != ""]
        shuffle(self.files)

    def __iter__(self):
        self.i = 0
        self.n = len(self.files)
        return self

    def __next__(self):
        batch = []
        labels = []
        for _ in range(self.batch_size):
            jpeg_filename, label = self.files[self.i].split(" ")
            with open(self.images_dir + jpeg_filename, "rb") as f:
                batch.append(np.frombuffer(f.read(), dtype=np.uint8))
            labels.append(np.array([label], dtype=np.uint8))
            self.i = (self.i + 1) % self.n
        return (batch, labels)


eii = ExternalInputIterator(batch_size)
pipe = Pipeline(batch_size=batch_size, num_threads=2, device_id=0)
with pipe:
    jpegs, labels = fn.external_source(source=eii, num_outputs=2, dtype=types.UINT8)
    decode = fn.decoders.image(jpegs, device="mixed", output_type=types.RGB)
    enhance = fn.brightness_contrast(decode, contrast=2)
    pipe.set_outputs(enhance, labels)

pipe.build()
pipe_out = pipe.run()
batch_cpu = pipe_out[0].as_cpu()
labels_cpu = pipe_out[1]
print("images:", len(batch_cpu), batch_cpu.layout(), batch_cpu.dtype)
print("labels:", labels_cpu.dtype, labels_cpu.shape()[0])
img = batch_cpu.at(2)
print("image 2:", img.ndim, img.shape[2], img.dtype)

# the same data given with iter_setup / feed_input (the older form of the tutorial)


class ExternalSourcePipeline(Pipeline):
    def __init__(self, batch_size, num_threads, device_id, external_data):
        super().__init__(batch_size, num_threads, device_id, seed=12)
        self.input = fn.external_source
        self.external_data = external_data
        self.iterator = iter(self.external_data)

    def define_graph(self):
        self.jpegs = fn.external_source(name="jpegs")
        self.labels = fn.external_source(name="labels")
        images = fn.decoders.image(self.jpegs, device="cpu", output_type=types.RGB)
        return (images, self.labels)

    def iter_setup(self):
        (images, labels) = next(self.iterator)
        self.feed_input(self.jpegs, images)
        self.feed_input(self.labels, labels)


pipe = ExternalSourcePipeline(batch_size=batch_size, num_threads=2, device_id=0, external_data=eii)
pipe.build()
for _ in range(3):
    images, labels = pipe.run()
print("fed with feed_input:", len(images), labels.dtype)
