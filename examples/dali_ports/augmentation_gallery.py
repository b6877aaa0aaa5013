"""DALI's "Augmentation Gallery", ported: one pipeline, many augmentations of the same images.

Only the imports differ from the DALI program (DALI's gallery plots the images; here
each augmentation prints its output's size). A preamble makes the images. Left out:
jitter, water and sphere, which run on the GPU in DALI's gallery and have only CPU
backends in chute (their GPU input is refused at trace time).
"""

import sys
import tempfile

import numpy as np

import chute.fn as fn
import chute.types as types
from chute import pipeline_def
from chute.tools.sample_data import make_imagenet_like

image_dir = make_imagenet_like(tempfile.mkdtemp(), n=int(sys.argv[1]) if len(sys.argv) > 1 else 8)
batch_size = 4

augmentations = {}

# rotates the image, enlarging the canvas
augmentations["rotate"] = lambda images: fn.rotate(
    images, angle=30, fill_value=0, interp_type=types.INTERP_LINEAR
)
# applies affine transform
augmentations["warp_affine"] = lambda images: fn.warp_affine(
    images, matrix=[1.0, 0.8, 0.0, 0.0, 1.2, 0.0], fill_value=0, interp_type=types.INTERP_LINEAR
)
# manipulates brightness and contrast of the image
augmentations["brightness_contrast"] = lambda images: fn.brightness_contrast(
    images, brightness=0.5, contrast=1.5
)
# twists colors of the image
augmentations["hue"] = lambda images: fn.hue(images, hue=90)
# changes saturation of the image
augmentations["saturation"] = lambda images: fn.saturation(images, saturation=0.2)
# crops and resizes the image
augmentations["resize_crop"] = lambda images: fn.crop(
    fn.resize(images, resize_x=200, resize_y=120), crop=(100, 100)
)
# mirrors the image
augmentations["flip"] = lambda images: fn.flip(images, horizontal=1)
# blurs the image
augmentations["gaussian_blur"] = lambda images: fn.gaussian_blur(images, window_size=9)
# converts to grayscale
augmentations["color_space_conversion"] = lambda images: fn.color_space_conversion(
    images, image_type=types.RGB, output_type=types.GRAY
)
# grid of erased squares
augmentations["grid_mask"] = lambda images: fn.grid_mask(images, ratio=0.3, tile=40, angle=0.5)


@pipeline_def(batch_size=batch_size, num_threads=2, device_id=0, seed=1234)
def augmentation_gallery_pipe(path):
    encoded, labels = fn.readers.file(file_root=path)
    images = fn.decoders.image(encoded, device="mixed", output_type=types.RGB)
    return tuple([labels, images] + [aug(images) for aug in augmentations.values()])


pipe = augmentation_gallery_pipe(image_dir)
pipe.build()
pipe_out = pipe.run()
labels, images = pipe_out[0], pipe_out[1].as_cpu()
for name, output in zip(augmentations, pipe_out[2:]):
    output = output.as_cpu()
    print(f"{name}: {output.shape()[0]} {output.dtype}")
changed = [
    name
    for name, output in zip(augmentations, pipe_out[2:])
    if output.as_cpu().shape()[0] != images.shape()[0]
    or not np.array_equal(output.as_cpu().at(0), images.at(0))
]
print("every augmentation changed the image:", changed == list(augmentations))
