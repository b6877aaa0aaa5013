"""DALI's "WebDataset" data loading example, ported: readers.webdataset over a tar of samples.

Only the imports differ from the DALI program. A preamble packs JPEGs and their class
ids into a WebDataset tar (DALI's tutorial downloads one); no index is needed.
"""

import io
import os
import sys
import tarfile
import tempfile

import numpy as np

import chute.fn as fn
import chute.types as types
from chute import pipeline_def
from chute.tools.sample_data import make_imagenet_like

# preamble: a tar of <key>.jpg + <key>.cls members
image_dir = make_imagenet_like(tempfile.mkdtemp(), n=int(sys.argv[1]) if len(sys.argv) > 1 else 8)
tar_dataset_path = os.path.join(tempfile.mkdtemp(), "data.tar")
with tarfile.open(tar_dataset_path, "w") as tar:
    classes = sorted(d for d in os.listdir(image_dir) if not d.startswith("."))
    for label, name in enumerate(classes):
        for jpeg in sorted(os.listdir(os.path.join(image_dir, name))):
            key = f"{name}_{jpeg[:-4]}"
            tar.add(os.path.join(image_dir, name, jpeg), arcname=f"{key}.jpg")
            cls = str(label).encode()
            info = tarfile.TarInfo(f"{key}.cls")
            info.size = len(cls)
            tar.addfile(info, io.BytesIO(cls))

batch_size = 4


@pipeline_def(batch_size=batch_size, num_threads=2, device_id=0)
def webdataset_pipeline(tar_file):
    img_raw, cls = fn.readers.webdataset(
        paths=tar_file, ext=["jpg", "cls"], missing_component_behavior="error"
    )
    img = fn.decoders.image(img_raw, device="mixed", output_type=types.RGB)
    img = fn.resize(img, resize_x=64, resize_y=64)
    img = fn.crop_mirror_normalize(
        img,
        dtype=types.FLOAT,
        mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
        std=[0.229 * 255, 0.224 * 255, 0.225 * 255],
    )
    return img, cls


pipe = webdataset_pipeline(tar_dataset_path)
pipe.build()
for _ in range(2):
    images, classes = pipe.run()
print("images:", images.as_cpu().shape()[0], images.as_cpu().layout(), images.as_cpu().dtype)
print("classes:", [bytes(np.array(classes.at(i))).decode() for i in range(len(classes))])
