"""DALI's "Getting Started" (pipeline mode), ported: read, decode, shuffle, augment, GPU.

Only the imports differ from the DALI program. A preamble makes a small folder of
class subfolders of JPEGs instead of DALI_extra's images; on a machine without a GPU
the "mixed"/"gpu" part runs on the CPU (chute's device fallback, with one warning).
"""

import sys
import tempfile

import chute.fn as fn
from chute import pipeline_def
from chute.tools.sample_data import make_imagenet_like

# preamble: the images
image_dir = make_imagenet_like(tempfile.mkdtemp(), n=int(sys.argv[1]) if len(sys.argv) > 1 else 16)
max_batch_size = 8


@pipeline_def
def simple_pipeline():
    jpegs, labels = fn.readers.file(file_root=image_dir)
    images = fn.decoders.image(jpegs, device="cpu")
    return images, labels


pipe = simple_pipeline(batch_size=max_batch_size, num_threads=1, device_id=0)
pipe.build()
pipe_out = pipe.run()
images, labels = pipe_out
print("images is_dense_tensor:", images.is_dense_tensor())
print("labels is_dense_tensor:", labels.is_dense_tensor())
print("labels:", [int(labels.at(i)[0]) for i in range(len(labels))])
print(
    "image layout:",
    images.layout(),
    "channels:",
    {images.at(i).shape[2] for i in range(len(images))},
)


@pipeline_def
def shuffled_pipeline():
    jpegs, labels = fn.readers.file(file_root=image_dir, random_shuffle=True, initial_fill=21)
    images = fn.decoders.image(jpegs, device="cpu")
    return images, labels


pipe = shuffled_pipeline(batch_size=max_batch_size, num_threads=1, device_id=0, seed=1234)
pipe.build()
images, labels = pipe.run()
print(
    "shuffled labels:",
    len(labels),
    "in range:",
    all(0 <= int(labels.at(i)[0]) < 16 for i in range(len(labels))),
)


@pipeline_def
def rotated_pipeline():
    jpegs, labels = fn.readers.file(file_root=image_dir, random_shuffle=True, initial_fill=21)
    images = fn.decoders.image(jpegs, device="cpu")
    rotated_images = fn.rotate(images, angle=10.0, fill_value=0)
    return rotated_images, labels


pipe = rotated_pipeline(batch_size=max_batch_size, num_threads=1, device_id=0, seed=1234)
pipe.build()
rotated, _ = pipe.run()
print("rotated:", len(rotated), rotated.layout(), rotated.dtype)


@pipeline_def
def random_rotated_pipeline():
    jpegs, labels = fn.readers.file(file_root=image_dir, random_shuffle=True, initial_fill=21)
    images = fn.decoders.image(jpegs, device="cpu")
    angle = fn.random.uniform(range=(-10.0, 10.0))
    rotated_images = fn.rotate(images, angle=angle, fill_value=0)
    return rotated_images, labels


pipe = random_rotated_pipeline(batch_size=max_batch_size, num_threads=1, device_id=0, seed=1234)
pipe.build()
random_rotated, _ = pipe.run()
print("random rotated:", len(random_rotated))


@pipeline_def
def random_rotated_gpu_pipeline():
    jpegs, labels = fn.readers.file(file_root=image_dir, random_shuffle=True, initial_fill=21)
    images = fn.decoders.image(jpegs, device="cpu")
    angle = fn.random.uniform(range=(-10.0, 10.0))
    rotated_images = fn.rotate(images.gpu(), angle=angle, fill_value=0)
    return rotated_images, labels


pipe = random_rotated_gpu_pipeline(batch_size=max_batch_size, num_threads=1, device_id=0, seed=1234)
pipe.build()
gpu_out, _ = pipe.run()
print("copied to the GPU:", len(gpu_out.as_cpu()), gpu_out.as_cpu().layout())


@pipeline_def
def hybrid_pipeline():
    jpegs, labels = fn.readers.file(file_root=image_dir, random_shuffle=True, initial_fill=21)
    images = fn.decoders.image(jpegs, device="mixed")
    return images, labels


pipe = hybrid_pipeline(batch_size=max_batch_size, num_threads=1, device_id=0, seed=1234)
pipe.build()
images, labels = pipe.run()
host = images.as_cpu()
print("mixed decoding:", len(host), host.layout(), host.dtype)
