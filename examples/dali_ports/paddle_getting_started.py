"""DALI's PaddlePaddle plugin tutorial, ported: DALIGenericIterator feeding a small paddle model."""

import sys
import tempfile

import paddle

from chute import fn, pipeline_def, types
from chute.paddle import DALIGenericIterator, LastBatchPolicy
from chute.tools.sample_data import make_imagenet_like

image_dir = make_imagenet_like(tempfile.mkdtemp(), n=int(sys.argv[1]) if len(sys.argv) > 1 else 20)
BATCH_SIZE = 8


@pipeline_def(batch_size=BATCH_SIZE, num_threads=2, device_id=None, seed=5)
def image_pipeline():
    jpegs, labels = fn.readers.file(file_root=image_dir, random_shuffle=True, name="Reader")
    images = fn.decoders.image(jpegs, output_type=types.RGB)
    images = fn.resize(images, resize_x=24, resize_y=24)
    images = fn.crop_mirror_normalize(
        images, dtype=types.FLOAT, output_layout="CHW", mean=[128.0] * 3, std=[64.0] * 3
    )
    return images, labels


loader = DALIGenericIterator(
    image_pipeline(),
    ["data", "label"],
    reader_name="Reader",
    last_batch_policy=LastBatchPolicy.DROP,
)
model = paddle.nn.Sequential(paddle.nn.Flatten(), paddle.nn.Linear(3 * 24 * 24, 16))
optimizer = paddle.optimizer.SGD(learning_rate=0.01, parameters=model.parameters())
loss_fn = paddle.nn.CrossEntropyLoss()
for epoch in range(2):
    steps = 0
    for (batch,) in loader:  # one dict per pipeline
        logits = model(batch["data"])
        loss = loss_fn(logits, batch["label"].astype("int64").reshape([-1]))
        loss.backward()
        optimizer.step()
        optimizer.clear_grad()
        if epoch == 0 and steps == 0:
            print("data", tuple(batch["data"].shape), batch["data"].dtype)
        steps += 1
    print(f"epoch {epoch}: {steps} steps of {BATCH_SIZE}, len {len(loader)}")
