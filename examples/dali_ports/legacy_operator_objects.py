"""DALI's "Operator Objects (Legacy)" example, ported: a Pipeline subclass with ops.* objects.

Only the imports differ from the DALI program; a preamble makes the images.
"""

import sys
import tempfile

import chute.ops as ops
import chute.types as types
from chute.pipeline import Pipeline
from chute.tools.sample_data import make_imagenet_like

image_dir = make_imagenet_like(tempfile.mkdtemp(), n=int(sys.argv[1]) if len(sys.argv) > 1 else 16)
batch_size = 8


class SimplePipeline(Pipeline):
    def __init__(self, batch_size, num_threads, device_id):
        super().__init__(batch_size, num_threads, device_id, seed=12)
        self.input = ops.readers.File(file_root=image_dir)
        self.decode = ops.decoders.Image(device="cpu", output_type=types.RGB)

    def define_graph(self):
        jpegs, labels = self.input()
        images = self.decode(jpegs)
        return (images, labels)


pipe = SimplePipeline(batch_size, 1, 0)
pipe.build()
pipe_out = pipe.run()
images, labels = pipe_out
print("images is_dense_tensor:", images.is_dense_tensor())
print("labels:", [int(labels.at(i)[0]) for i in range(len(labels))])


class ShuffledSimplePipeline(Pipeline):
    def __init__(self, batch_size, num_threads, device_id):
        super().__init__(batch_size, num_threads, device_id, seed=12)
        self.input = ops.readers.File(file_root=image_dir, random_shuffle=True, initial_fill=21)
        self.decode = ops.decoders.Image(device="cpu", output_type=types.RGB)

    def define_graph(self):
        jpegs, labels = self.input()
        images = self.decode(jpegs)
        return (images, labels)


pipe = ShuffledSimplePipeline(batch_size, 1, 0)
pipe.build()
images, labels = pipe.run()
print("shuffled:", len(images))


class RandomRotatedSimplePipeline(Pipeline):
    def __init__(self, batch_size, num_threads, device_id):
        super().__init__(batch_size, num_threads, device_id, seed=12)
        self.input = ops.readers.File(file_root=image_dir, random_shuffle=True, initial_fill=21)
        self.decode = ops.decoders.Image(device="cpu", output_type=types.RGB)
        self.rotate = ops.Rotate()
        self.rng = ops.random.Uniform(range=(-10.0, 10.0))

    def define_graph(self):
        jpegs, labels = self.input()
        images = self.decode(jpegs)
        angle = self.rng()
        rotated_images = self.rotate(images, angle=angle)
        return (rotated_images, labels)


pipe = RandomRotatedSimplePipeline(batch_size, 1, 0)
pipe.build()
rotated, labels = pipe.run()
print("rotated:", len(rotated), rotated.layout())


class NVJpegPipeline(Pipeline):
    def __init__(self, batch_size, num_threads, device_id):
        super().__init__(batch_size, num_threads, device_id, seed=12)
        self.input = ops.readers.File(file_root=image_dir, random_shuffle=True, initial_fill=21)
        self.decode = ops.decoders.Image(device="mixed", output_type=types.RGB)

    def define_graph(self):
        jpegs, labels = self.input()
        images = self.decode(jpegs)
        return (images, labels)


pipe = NVJpegPipeline(batch_size, 1, 0)
pipe.build()
images, labels = pipe.run()
print("mixed decoding:", len(images.as_cpu()), images.as_cpu().layout())

# the pre-1.0 class names still work, and warn
legacy_reader = ops.FileReader(file_root=image_dir)
pipe = Pipeline(batch_size=batch_size, num_threads=1, device_id=0)
with pipe:
    jpegs, labels = legacy_reader()
    pipe.set_outputs(ops.ImageDecoder(device="cpu")(jpegs), labels)
pipe.build()
images, labels = pipe.run()
print("legacy names:", len(images))
