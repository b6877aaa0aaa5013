"""DALI's "Checkpointing" example, ported: save a pipeline's position, restore it elsewhere.

Only the imports differ from the DALI program; a preamble makes the images.
"""

import sys
import tempfile

import numpy as np

import chute.fn as fn
from chute import pipeline_def
from chute.tools.sample_data import make_imagenet_like

image_dir = make_imagenet_like(tempfile.mkdtemp(), n=int(sys.argv[1]) if len(sys.argv) > 1 else 16)


@pipeline_def(batch_size=4, num_threads=2, device_id=0, enable_checkpointing=True)
def pipeline():
    jpegs, labels = fn.readers.file(
        file_root=image_dir, random_shuffle=True, name="Reader", seed=21
    )
    images = fn.decoders.image(jpegs, device="mixed")
    images = fn.random_resized_crop(images, size=(48, 48))
    return images, labels


p = pipeline()
p.build()
for _ in range(5):
    p.run()
checkpoint = p.checkpoint()
print("checkpoint taken after 5 iterations:", len(checkpoint) > 0)

p_restored = pipeline(checkpoint=checkpoint)
p_restored.build()
print("restored:", p_restored.is_restored_from_checkpoint)

same = True
for _ in range(6):
    images, labels = p.run()
    images_restored, labels_restored = p_restored.run()
    same &= np.array_equal(labels.as_array(), labels_restored.as_array())
    same &= all(
        np.array_equal(images.as_cpu().at(i), images_restored.as_cpu().at(i))
        for i in range(len(images))
    )
print("same batches after the restore:", same)

# the checkpoint can be written to a file and read back by another process
path = tempfile.mkstemp()[1]
p.checkpoint(path)
with open(path, "rb") as f:
    p_from_file = pipeline(checkpoint=f.read())
labels_next = p.run()[1]
labels_from_file = p_from_file.run()[1]
print("from a file:", np.array_equal(labels_next.as_array(), labels_from_file.as_array()))
