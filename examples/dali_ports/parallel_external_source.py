"""DALI's "Parallel External Source" tutorial, ported: a per-sample callable in worker processes.

Only the imports differ from the DALI program. A preamble makes the images and their
file_list.txt. As in DALI, the callable is a picklable class defined at module level
and the pipeline starts its workers with "spawn" (so the script guards its main part).
"""

import os
import sys
import tempfile

import numpy as np

import chute.fn as fn
import chute.types as types
from chute import pipeline_def
from chute.tools.sample_data import make_imagenet_like

batch_size = 4


class ExternalInputCallable:
    def __init__(self, images_dir, batch_size):
        self.images_dir = images_dir
        self.batch_size = batch_size
        with open(os.path.join(images_dir, "file_list.txt")) as f:
            file_label = [line.rstrip().split(" ") for line in f if line != ""]
            self.files, self.labels = zip(*file_label)
        self.full_iterations = len(self.files) // batch_size

    def __call__(self, sample_info):
        sample_idx = sample_info.idx_in_epoch
        if sample_info.iteration >= self.full_iterations:
            # Indicate end of the epoch
            raise StopIteration()
        jpeg_filename = self.files[sample_idx]
        label = np.int32([self.labels[sample_idx]])
        with open(os.path.join(self.images_dir, jpeg_filename), "rb") as f:
            encoded_img = np.frombuffer(f.read(), dtype=np.uint8)
        return encoded_img, label


@pipeline_def(
    batch_size=batch_size, num_threads=2, device_id=0, py_num_workers=2, py_start_method="spawn"
)
def parallel_pipeline(images_dir):
    jpegs, labels = fn.external_source(
        source=ExternalInputCallable(images_dir, batch_size),
        num_outputs=2,
        batch=False,
        parallel=True,
        dtype=[types.UINT8, types.INT32],
    )
    decode = fn.decoders.image(jpegs, device="mixed")
    return decode, labels


if __name__ == "__main__":
    # preamble: the images and a file_list.txt of "path label" lines
    images_dir = make_imagenet_like(
        tempfile.mkdtemp(), n=int(sys.argv[1]) if len(sys.argv) > 1 else 10
    )
    classes = sorted(
        d for d in os.listdir(images_dir) if os.path.isdir(os.path.join(images_dir, d))
    )
    with open(os.path.join(images_dir, "file_list.txt"), "w") as f:
        for label, name in enumerate(classes):
            for jpeg in sorted(os.listdir(os.path.join(images_dir, name))):
                f.write(f"{name}/{jpeg} {label}\n")

    pipe = parallel_pipeline(images_dir)
    pipe.build()
    for epoch in range(2):
        batches = 0
        try:
            while True:
                images, labels = pipe.run()
                batches += 1
        except StopIteration:
            pipe.reset()
        print(f"epoch {epoch}: {batches} batches of {batch_size}")
    print("labels:", labels.dtype, [int(labels.at(i)[0]) for i in range(len(labels))])
