"""DALI's conditional-execution tutorial, ported: `if` on per-sample DataNodes.

The pipelines are the tutorial's; only the imports differ (`nvidia.dali` -> `chute`). A
preamble makes a small ImageNet-like folder in place of DALI_extra's images, and the
tutorial's matplotlib grids become printed checks. On a machine without a GPU the
`device="mixed"` decoder runs on the CPU (chute's device fallback, with a warning).
"""

import random
import sys
import tempfile
import warnings

import numpy as np

from chute import fn, pipeline_def
from chute.tools.sample_data import make_imagenet_like
from chute.types import DALIDataType

# preamble: a small ImageNet-like folder instead of DALI_extra's images
image_dir = make_imagenet_like(tempfile.mkdtemp(), n=int(sys.argv[1]) if len(sys.argv) > 1 else 16)
warnings.filterwarnings("ignore", message="no GPU is available")


# Simple example: rotate 25% of the images by a random angle in [10, 30), the rest untouched.
@pipeline_def(enable_conditionals=True, batch_size=4, num_threads=4, device_id=0, seed=42)
def rotate_pipe():
    jpegs, _ = fn.readers.file(device="cpu", file_root=image_dir)
    images = fn.decoders.image(jpegs, device="mixed")
    do_rotate = fn.random.coin_flip(probability=0.25, dtype=DALIDataType.BOOL)
    angle = fn.random.uniform(range=(10, 30))

    if do_rotate:
        result = fn.rotate(images, angle=angle, fill_value=0)
    else:
        result = images

    resized = fn.resize(result, resize_x=400, resize_y=400)
    return resized


pipe = rotate_pipe()
pipe.build()


def rotated(image):
    """A rotated image has the fill value (black) in its four corners."""
    image = np.asarray(image.as_cpu() if hasattr(image, "as_cpu") else image)
    corners = [image[:2, :2], image[:2, -2:], image[-2:, :2], image[-2:, -2:]]
    return all(int(c.max()) <= 2 for c in corners)


shapes, count, total = set(), 0, 0
for _ in range(4):
    (output,) = pipe.run()
    batch = output.as_cpu() if hasattr(output, "as_cpu") else output
    for i in range(len(batch)):
        shapes.add(tuple(batch.at(i).shape))
        count += rotated(batch.at(i))
        total += 1
print("output shapes", sorted(shapes))
print(f"rotated {count} of {total}: {0 < count < total}")


# Python statements and tracing: only an `if` on a DataNode traces both branches.
@pipeline_def(enable_conditionals=True, batch_size=4, num_threads=4, device_id=0, seed=42)
def pipe_with_dali_conditional():
    jpegs, _ = fn.readers.file(device="cpu", file_root=image_dir)
    images = fn.decoders.image(jpegs, device="mixed")
    dali_random_value = fn.random.coin_flip(dtype=DALIDataType.BOOL)

    if dali_random_value:
        print("Tracing True branch")
        result = images + 10
    else:
        print("Tracing False branch")
        result = images
    return result


@pipeline_def(enable_conditionals=True, batch_size=4, num_threads=4, device_id=0, seed=42)
def pipe_with_python_conditional():
    jpegs, _ = fn.readers.file(device="cpu", file_root=image_dir)
    images = fn.decoders.image(jpegs, device="mixed")
    dali_random_value = fn.random.coin_flip(dtype=DALIDataType.BOOL)  # noqa: F841 (as in DALI)

    if random.choice([True, False]):
        print("Tracing True branch")
        result = images + 10
    else:
        print("Tracing False branch")
        result = images
    return result


print("-- pipe_with_dali_conditional")
pipe_with_dali_conditional()
print("-- pipe_with_python_conditional")
pipe_with_python_conditional()
