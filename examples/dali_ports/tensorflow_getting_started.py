"""DALI's TensorFlow plugin tutorial, ported: a pipeline as DALIDataset feeding model.fit."""

import sys
import tempfile

import tensorflow as tf

from chute import fn, pipeline_def, types
from chute.tf import DALIDataset
from chute.tools.sample_data import make_imagenet_like

image_dir = make_imagenet_like(tempfile.mkdtemp(), n=int(sys.argv[1]) if len(sys.argv) > 1 else 24)
BATCH_SIZE = 8
IMAGE_SIZE = 32
NUM_CLASSES = 16


@pipeline_def(batch_size=BATCH_SIZE, num_threads=2, device_id=None, seed=3)
def image_pipeline():
    jpegs, labels = fn.readers.file(file_root=image_dir, random_shuffle=True, name="Reader")
    images = fn.decoders.image(jpegs, output_type=types.GRAY)
    images = fn.resize(images, resize_x=IMAGE_SIZE, resize_y=IMAGE_SIZE)
    images = fn.crop_mirror_normalize(images, dtype=types.FLOAT, std=255.0, output_layout="HWC")
    images = fn.reshape(images, shape=[IMAGE_SIZE * IMAGE_SIZE])
    return images, labels


with tf.device("/cpu:0"):
    dataset = DALIDataset(
        pipeline=image_pipeline(),
        batch_size=BATCH_SIZE,
        output_shapes=((BATCH_SIZE, IMAGE_SIZE * IMAGE_SIZE), (BATCH_SIZE, 1)),
        output_dtypes=(tf.float32, tf.int32),
        device_id=None,
    )

images, labels = next(iter(dataset))
print("images", tuple(images.shape), images.dtype.name)
print("labels", tuple(labels.shape), labels.dtype.name)

model = tf.keras.Sequential(
    [
        tf.keras.Input(shape=(IMAGE_SIZE * IMAGE_SIZE,)),
        tf.keras.layers.Dense(32, activation="relu"),
        tf.keras.layers.Dense(NUM_CLASSES, activation="softmax"),
    ]
)
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
history = model.fit(dataset, epochs=2, steps_per_epoch=3, verbose=0)
losses = history.history["loss"]
print("epochs trained:", len(losses), "finite loss:", all(value == value for value in losses))
