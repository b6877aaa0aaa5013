"""DALI's PyTorch plugin tutorial, ported: readers.file -> decode -> augment -> DALI iterators."""

import sys
import tempfile

import torch

from chute import fn, pipeline_def, types
from chute.tools.sample_data import make_imagenet_like
from chute.torch import DALIClassificationIterator, DALIGenericIterator, LastBatchPolicy

# preamble: a small ImageNet-like folder instead of DALI_extra's images
image_dir = make_imagenet_like(tempfile.mkdtemp(), n=int(sys.argv[1]) if len(sys.argv) > 1 else 20)
batch_size = 8


@pipeline_def(batch_size=batch_size, num_threads=2, device_id=None, seed=12)
def image_pipeline(shard_id=0, num_shards=1):
    jpegs, labels = fn.readers.file(
        file_root=image_dir,
        random_shuffle=True,
        shard_id=shard_id,
        num_shards=num_shards,
        name="Reader",
    )
    images = fn.decoders.image(jpegs, device="cpu", output_type=types.RGB)
    images = fn.random_resized_crop(images, size=(64, 64))
    images = fn.crop_mirror_normalize(
        images,
        dtype=types.FLOAT,
        output_layout="CHW",
        mean=[0.485 * 255, 0.456 * 255, 0.406 * 255],
        std=[0.229 * 255, 0.224 * 255, 0.225 * 255],
        mirror=fn.random.coin_flip(),
    )
    return images, labels


# one pipeline per device; here two CPU "shards" of the same data set
pipes = [image_pipeline(shard_id=i, num_shards=2) for i in range(2)]
loader = DALIGenericIterator(
    pipes,
    ["data", "label"],
    reader_name="Reader",
    last_batch_policy=LastBatchPolicy.PARTIAL,
    auto_reset=True,
)
for epoch in range(2):
    seen = 0
    for step, per_pipe in enumerate(loader):
        for batch in per_pipe:  # one dict per pipeline
            seen += batch["data"].shape[0]
            if epoch == 0 and step == 0 and batch is per_pipe[0]:
                print("data", tuple(batch["data"].shape), batch["data"].dtype)
                print("label", tuple(batch["label"].shape), batch["label"].dtype)
    print(f"epoch {epoch}: {seen} samples in {len(loader)} steps")

# the classification iterator names the two outputs "data" and "label"
classify = DALIClassificationIterator(image_pipeline(), reader_name="Reader")
labels = torch.cat([b[0]["label"].flatten() for b in classify])
print("labels in range:", bool((labels >= 0).all() and (labels < 16).all()))
