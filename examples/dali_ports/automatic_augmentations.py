"""DALI's automatic augmentations guide (nvidia.dali.auto_aug), ported: AutoAugment,
RandAugment and TrivialAugment in a training pipeline, then a custom AutoAugment policy
made of an @augmentation of one's own and the library's augmentations.

As in DALI's guide the images are decoded with device="mixed" and augmented on the GPU;
without a GPU chute runs the pipeline on the CPU (its device fallback)."""

import sys
import tempfile

import numpy as np

from chute import fn, pipeline_def, types
from chute.auto_aug import augmentations, auto_augment, rand_augment, trivial_augment
from chute.auto_aug.core import Policy, augmentation
from chute.tools.sample_data import make_imagenet_like

# preamble: a small ImageNet-like folder instead of an ImageNet directory
data_dir = make_imagenet_like(tempfile.mkdtemp(), n=int(sys.argv[1]) if len(sys.argv) > 1 else 16)
image_size = 64
batch_size = 8


@pipeline_def(enable_conditionals=True)
def training_pipe(data_dir, image_size, policy):
    jpegs, labels = fn.readers.file(file_root=data_dir, random_shuffle=True, name="Reader")
    shapes = fn.peek_image_shape(jpegs)
    images = fn.decoders.image(jpegs, device="mixed", output_type=types.RGB)

    if policy == "auto_augment":
        # the AutoAugment policy tuned for ImageNet
        augmented_images = auto_augment.auto_augment_image_net(images, shape=shapes)
    elif policy == "rand_augment":
        # 3 random operations per sample, each at magnitude bin 17 (of 31)
        augmented_images = rand_augment.rand_augment(images, shape=shapes, n=3, m=17)
    else:
        # one random operation per sample, at a random magnitude
        augmented_images = trivial_augment.trivial_augment_wide(images, shape=shapes)

    resized_images = fn.resize(augmented_images, size=[image_size, image_size])
    return resized_images, labels


for policy in ("auto_augment", "rand_augment", "trivial_augment"):
    pipe = training_pipe(
        data_dir, image_size, policy, batch_size=batch_size, num_threads=2, device_id=0, seed=42
    )
    pipe.build()
    images, labels = pipe.run()
    images = images.as_cpu()
    print(policy, images.as_array().shape, images.dtype, "labels", len(labels))


# A custom augmentation: the magnitude bin picks the strength, the decorator computes the
# parameter (here a darkening factor from 0 to 0.8 over the bins).
@augmentation(mag_range=(0, 0.8))
def darken(data, amount):
    return fn.brightness(data, brightness=1.0 - amount)


# wider shears than the library's default range
strong_shear_x = augmentations.shear_x.augmentation(mag_range=(0, 0.5))

policy = Policy(
    name="CustomPolicy",
    num_magnitude_bins=11,
    sub_policies=[
        [(darken, 0.8, 7), (augmentations.rotate, 0.5, 4)],
        [(augmentations.invert, 0.2, None), (augmentations.equalize, 0.6, None)],
        [(strong_shear_x, 0.7, 6), (augmentations.posterize, 0.3, 2)],
        [(augmentations.solarize, 0.5, 3)],
    ],
)
print("custom policy:", policy.name, "with", sorted(policy.augmentations))


@pipeline_def(enable_conditionals=True)
def custom_pipe(data_dir, image_size):
    jpegs, _ = fn.readers.file(file_root=data_dir, name="Reader")
    images = fn.decoders.image(jpegs, device="mixed", output_type=types.RGB)
    images = fn.resize(images, size=[image_size, image_size])
    augmented = auto_augment.apply_auto_augment(policy, images, seed=7)
    return augmented, images


def run_custom():
    pipe = custom_pipe(data_dir, image_size, batch_size=batch_size, num_threads=2, device_id=0)
    pipe.build()
    augmented, originals = pipe.run()
    return augmented.as_cpu().as_array(), originals.as_cpu().as_array()


first, originals = run_custom()
again, _ = run_custom()
changed = sum(not np.array_equal(a, o) for a, o in zip(first, originals))
print("custom", first.shape, first.dtype)
print("some samples augmented:", 0 < changed <= batch_size)
print("same seed, same images:", np.array_equal(first, again))
