"""chute.jax: import rule, NamedSharding over 4 host devices, data_iterator, peek, training."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

jax = pytest.importorskip("jax")

import jax.numpy as jnp  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import chute.jax  # noqa: E402
from chute import fn, pipeline_def, types  # noqa: E402


@pytest.fixture(scope="module")
def index_files(tmp_path_factory):
    """22 files whose content is their index, of varying length (ragged)."""
    root = tmp_path_factory.mktemp("index")
    paths = []
    for i in range(22):
        path = root / f"{i:02d}.bin"
        path.write_bytes(bytes([i]) * (1 + i % 3))
        paths.append(str(path))
    return paths


@pytest.fixture
def four_devices():
    if jax.device_count() < 4:
        pytest.skip("needs XLA_FLAGS=--xla_force_host_platform_device_count=4 before jax starts")
    return jax.devices()[:4]


def test_import_without_jax_says_what_to_install():
    code = (
        "import sys; sys.modules['jax'] = None\n"
        "import chute\n"
        "try:\n    import chute.jax\nexcept ImportError as e:\n    print('ERR', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "ERR" in out.stdout and "pip install jax" in out.stdout


def test_data_iterator_named_sharding_four_devices(four_devices, index_files):
    """One pipeline per device, each its shard: every sample once per epoch in the global batch."""
    mesh = Mesh(np.array(four_devices), ("batch",))
    sharding = NamedSharding(mesh, P("batch"))

    @chute.jax.data_iterator(
        output_map=["data", "label"],
        reader_name="Reader",
        sharding=sharding,
        pad_ragged=True,
        auto_reset=True,
    )
    def iterator_fn(shard_id, num_shards):
        data, label = fn.readers.file(
            files=index_files,
            random_shuffle=True,
            shard_id=shard_id,
            num_shards=num_shards,
            name="Reader",
        )
        return data, label

    it = iterator_fn(batch_size=8, num_threads=1, seed=3)
    assert [p.reader_meta("Reader")["shard_id"] for p in it.pipelines] == [0, 1, 2, 3]
    spec = it.element_spec
    assert spec["label"].shape == (8, 1) and spec["label"].dtype == jnp.int32
    assert spec["label"].sharding == sharding
    orders = []
    for _ in range(2):
        seen = []
        for batch in it:
            label = batch["label"]
            assert isinstance(label, jax.Array) and label.sharding == sharding
            assert {s.device for s in label.addressable_shards} == set(four_devices)
            assert all(s.data.shape == (2, 1) for s in label.addressable_shards)
            seen.append(np.asarray(label))
        # 22 samples over 4 shards = 5 or 6 each, 2 per device and step: 3 steps
        assert len(seen) == len(it) == 3
        assert batch.real == 22 - 2 * 8  # 6 real samples in the last global batch
        orders.append(seen)
    assert not all(np.array_equal(a, b) for a, b in zip(orders[0], orders[1]))  # reshuffled


def test_sharded_epoch_covers_dataset(four_devices, index_files):
    """Manual pipelines + sharding, PARTIAL refused, FILL: union of real samples = dataset."""
    mesh = Mesh(np.array(four_devices), ("batch",))
    sharding = NamedSharding(mesh, P("batch"))

    def make(shard_id):
        @pipeline_def(batch_size=2, num_threads=1, seed=5)
        def pipe():
            return fn.readers.file(
                files=index_files,
                random_shuffle=True,
                shard_id=shard_id,
                num_shards=4,
                name="Reader",
            )

        return pipe()

    with pytest.raises(ValueError, match="FILL or DROP"):
        chute.jax.DataIterator(
            [make(i) for i in range(4)],
            ["d", "l"],
            reader_name="Reader",
            sharding=sharding,
            last_batch_policy="partial",
        )
    it = chute.jax.DataIterator(
        [make(i) for i in range(4)],
        ["d", "l"],
        reader_name="Reader",
        sharding=sharding,
        pad_ragged=True,
    )
    raw = [chute.Iterator(make(i), ["d", "l"], reader_name="Reader") for i in range(4)]
    seen = []
    for batch in it:
        labels = np.asarray(batch["l"]).reshape(4, 2)
        steps = [next(r)[0] for r in raw]
        assert batch.real == sum(s.real for s in steps)
        for shard, step in enumerate(steps):
            assert labels[shard].tolist() == step["l"].as_array().flatten().tolist()
            seen += labels[shard, : step.real].tolist()
    assert sorted(seen) == list(range(22))


def test_peek_does_not_consume(index_files):
    @pipeline_def(batch_size=4, num_threads=1, seed=1)
    def pipe():
        return fn.readers.file(files=index_files, name="Reader")

    it = chute.jax.DataIterator(pipe(), ["d", "l"], reader_name="Reader")
    peeked = it.peek()
    assert it.peek() is peeked
    assert np.asarray(next(it)["l"]).flatten().tolist() == [0, 1, 2, 3]
    assert np.asarray(next(it)["l"]).flatten().tolist() == [4, 5, 6, 7]
    assert isinstance(peeked["d"], list)  # ragged files: one array per sample


def test_shard_info_is_process_index():
    assert chute.jax.shard_info() == (jax.process_index(), jax.process_count()) == (0, 1)


def test_training_loop_loss_goes_down(tmp_path):
    """A linear classifier in plain JAX trains on decoded PNGs; its loss falls."""
    rng = np.random.default_rng(0)
    for cls, level in enumerate((40, 200)):
        (tmp_path / f"c{cls}").mkdir()
        for i in range(8):
            pixels = np.clip(rng.normal(level, 20, (8, 8, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(tmp_path / f"c{cls}" / f"{i}.png")

    @chute.jax.data_iterator(output_map=["image", "label"], reader_name="R", auto_reset=True)
    def iterator_fn():
        encoded, label = fn.readers.file(file_root=str(tmp_path), random_shuffle=True, name="R")
        image = fn.decoders.image(encoded, output_type=types.RGB)
        image = fn.crop_mirror_normalize(image, dtype=types.FLOAT, mean=[128.0] * 3, std=[64.0] * 3)
        return image, label

    it = iterator_fn(batch_size=8, num_threads=2, seed=1)
    params = {"w": jnp.zeros((3 * 8 * 8, 2)), "b": jnp.zeros(2)}

    def loss_fn(params, x, y):
        logits = x.reshape(x.shape[0], -1) @ params["w"] + params["b"]
        return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y, axis=1))

    step = jax.jit(jax.value_and_grad(loss_fn))
    losses = []
    for _ in range(5):
        for batch in it:
            loss, grads = step(params, batch["image"], batch["label"])
            params = jax.tree_util.tree_map(lambda p, g: p - 0.05 * g, params, grads)
            losses.append(float(loss))
    assert len(losses) == 10
    assert np.mean(losses[-2:]) < 0.5 * np.mean(losses[:2])


def test_sharding_pads_across_pipelines(four_devices, tmp_path):
    """Each pipeline's batch dense but of a different shape: padded to one global shape."""
    mesh = Mesh(np.array(four_devices), ("batch",))
    sharding = NamedSharding(mesh, P("batch"))
    files = []
    for i in range(8):
        path = tmp_path / f"{i}.bin"
        path.write_bytes(bytes([i]) * (1 + i // 2))  # shard i holds two files of length i + 1
        files.append(str(path))

    def make(shard_id):
        @pipeline_def(batch_size=2, num_threads=1, seed=5)
        def pipe():
            return fn.readers.file(files=files, shard_id=shard_id, num_shards=4, name="Reader")

        return pipe()

    it = chute.jax.DataIterator(
        [make(i) for i in range(4)],
        ["d", "l"],
        reader_name="Reader",
        sharding=sharding,
        pad_ragged=True,
    )
    data = np.asarray(next(it)["d"])
    assert data.shape == (8, 4)
    assert data[7].tolist() == [7, 7, 7, 7] and data[5].tolist() == [5, 5, 5, 0]
    assert data[2].tolist() == [2, 2, 0, 0]
