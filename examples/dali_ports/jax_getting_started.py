"""DALI's JAX plugin tutorial, ported: @data_iterator, a training step, peekable iterator."""

import sys
import tempfile

import jax
import jax.numpy as jnp

from chute import fn, types
from chute.jax import data_iterator
from chute.jax.clu import peekable_data_iterator
from chute.tools.sample_data import make_imagenet_like

image_dir = make_imagenet_like(tempfile.mkdtemp(), n=int(sys.argv[1]) if len(sys.argv) > 1 else 20)


@data_iterator(output_map=["images", "labels"], reader_name="image_reader")
def iterator_fn():
    jpegs, labels = fn.readers.file(file_root=image_dir, name="image_reader")
    images = fn.decoders.image(jpegs, device="cpu")
    images = fn.resize(images, resize_x=32, resize_y=32)
    images = fn.cast(images, dtype=types.FLOAT) / 255.0
    return images, labels


iterator = iterator_fn(batch_size=8, num_threads=2, device_id=None, seed=0)
batch = next(iterator)
print("images", batch["images"].shape, batch["images"].dtype)
print("labels", batch["labels"].shape, batch["labels"].dtype)

weights = jnp.zeros((32 * 32 * 3, 16))


@jax.jit
def step(weights, images, labels):
    def loss(w):
        logits = images.reshape(images.shape[0], -1) @ w
        return -jnp.mean(jax.nn.log_softmax(logits)[jnp.arange(labels.shape[0]), labels[:, 0]])

    value, grad = jax.value_and_grad(loss)(weights)
    return weights - 0.1 * grad, value


losses = []
for batch in iterator:
    weights, value = step(weights, batch["images"], batch["labels"])
    losses.append(float(value))
print(f"one epoch: {len(losses) + 1} batches, len {len(iterator)}")


@peekable_data_iterator(output_map=["images", "labels"], reader_name="image_reader")
def peekable_fn():
    jpegs, labels = fn.readers.file(file_root=image_dir, name="image_reader")
    return fn.resize(fn.decoders.image(jpegs), resize_x=16, resize_y=16), labels


peekable = peekable_fn(batch_size=4, num_threads=1, device_id=None, seed=0)
spec = peekable.element_spec
print("peek spec", spec["images"].shape, spec["images"].dtype)
same = bool((peekable.peek()["labels"] == next(peekable)["labels"]).all())
print("peek equals next:", same)
