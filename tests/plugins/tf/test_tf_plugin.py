"""chute.tf: import rule, dataset element_spec and epochs, model.fit, MirroredStrategy."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

tf = pytest.importorskip("tensorflow")

import chute.tf  # noqa: E402
from chute import fn, pipeline_def, types  # noqa: E402


@pytest.fixture(scope="module")
def index_files(tmp_path_factory):
    """12 files whose content is their index, of varying length (ragged)."""
    root = tmp_path_factory.mktemp("index")
    paths = []
    for i in range(12):
        path = root / f"{i:02d}.bin"
        path.write_bytes(bytes([i]) * (1 + i % 3))
        paths.append(str(path))
    return paths


def index_pipe_fn(files, batch_size=5, shuffle=True):
    @pipeline_def(batch_size=batch_size, num_threads=1, seed=2)
    def pipe(shard_id=0, num_shards=1):
        return fn.readers.file(
            files=files,
            random_shuffle=shuffle,
            shard_id=shard_id,
            num_shards=num_shards,
            name="Reader",
        )

    return pipe


def test_import_without_tensorflow_says_what_to_install():
    code = (
        "import sys; sys.modules['tensorflow'] = None\n"
        "import chute\n"
        "try:\n    import chute.tf\nexcept ImportError as e:\n    print('ERR', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "ERR" in out.stdout and "pip install tensorflow-cpu" in out.stdout


@pytest.mark.parametrize(
    ("policy", "batch_dim", "batches"), [("fill", 5, 3), ("drop", 5, 2), ("partial", None, 3)]
)
def test_element_spec_and_epochs(index_files, policy, batch_dim, batches):
    """Declared spec (dtype, batch dim, ranks); finite epochs; each iteration the next epoch."""
    ds = chute.tf.dataset(
        index_pipe_fn(index_files),
        ["data", "label"],
        reader_name="Reader",
        last_batch_policy=policy,
    )
    data_spec, label_spec = ds.element_spec
    assert data_spec.dtype == tf.uint8 and label_spec.dtype == tf.int32
    assert data_spec.shape.as_list() == [batch_dim, None]
    assert label_spec.shape.as_list() == [batch_dim, None]
    assert int(ds.cardinality()) == batches
    epochs = []
    for _ in range(2):
        labels = [int(x) for _, label in ds for x in label.numpy().flatten()]
        if policy == "partial":
            assert sorted(labels) == list(range(12))
        epochs.append(labels)
    assert epochs[0] != epochs[1]  # the second iteration is the pipeline's next epoch


def test_ragged_outputs_are_padded(index_files):
    ds = chute.tf.dataset(
        index_pipe_fn(index_files, shuffle=False), ["data", "label"], reader_name="Reader"
    )
    data, _ = next(iter(ds))
    assert data.numpy().tolist() == [[0, 0, 0], [1, 1, 0], [2, 2, 2], [3, 0, 0], [4, 4, 0]]


def test_data_iterator_yields_tf_tensors(index_files):
    it = chute.tf.DataIterator(
        index_pipe_fn(index_files, shuffle=False), ["data", "label"], reader_name="Reader"
    )
    ((batch,),) = [next(it)]
    assert isinstance(batch["label"], tf.Tensor) and batch["label"].dtype == tf.int32
    assert isinstance(batch["data"], list) and batch["data"][2].numpy().tolist() == [2, 2, 2]


def test_input_context_picks_the_shard(index_files):
    ctx = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1)
    assert chute.tf.shard_info(ctx) == (1, 2)
    ds = chute.tf.dataset(
        index_pipe_fn(index_files, shuffle=False),
        ["data", "label"],
        reader_name="Reader",
        last_batch_policy="partial",
        input_context=ctx,
    )
    assert [int(x) for _, label in ds for x in label.numpy().flatten()] == list(range(6, 12))


def test_mirrored_strategy_two_replicas(index_files):
    """distribute_datasets_from_function over 2 logical CPUs: each sample once per epoch."""
    devices = [d.name for d in tf.config.list_logical_devices("CPU")]
    if len(devices) < 2:
        pytest.skip("the TensorFlow runtime started before 2 logical CPUs could be set")
    strategy = tf.distribute.MirroredStrategy(devices[:2])

    def dataset_fn(ctx):
        return chute.tf.dataset(
            index_pipe_fn(index_files, batch_size=3),
            ["data", "label"],
            reader_name="Reader",
            input_context=ctx,
        )

    dist = strategy.distribute_datasets_from_function(dataset_fn)
    orders = []
    for _ in range(2):
        seen, steps = [], 0
        for _, label in dist:
            per_replica = strategy.experimental_local_results(label)
            assert len(per_replica) == 2
            assert {t.device.split("/")[-1] for t in per_replica} == {
                "device:CPU:0",
                "device:CPU:1",
            }
            seen += [int(x) for t in per_replica for x in t.numpy().flatten()]
            steps += 1
        assert steps == 2  # 12 samples / (2 replicas x 3)
        assert sorted(seen) == list(range(12))
        orders.append(seen)
    assert orders[0] != orders[1]


def test_model_fit_loss_goes_down(tmp_path):
    """Keras trains on decoded PNGs through chute.tf.dataset; the loss falls over epochs."""
    rng = np.random.default_rng(0)
    for cls, level in enumerate((40, 200)):
        (tmp_path / f"c{cls}").mkdir()
        for i in range(8):
            pixels = np.clip(rng.normal(level, 20, (8, 8, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(tmp_path / f"c{cls}" / f"{i}.png")

    @pipeline_def(batch_size=8, num_threads=2, seed=1)
    def pipe():
        encoded, label = fn.readers.file(file_root=str(tmp_path), random_shuffle=True, name="R")
        image = fn.decoders.image(encoded, output_type=types.RGB)
        image = fn.crop_mirror_normalize(
            image, dtype=types.FLOAT, mean=[128.0] * 3, std=[64.0] * 3, output_layout="HWC"
        )
        return image, label

    with pytest.raises(ValueError, match="does not fit"):
        chute.tf.dataset(pipe(), ["image", "label"], reader_name="R", output_shapes=[(8, 8), None])
    ds = chute.tf.dataset(
        pipe(), ["image", "label"], reader_name="R", output_shapes=[(None, 8, 8, 3), (None, 1)]
    )
    assert ds.element_spec[0].shape.as_list() == [8, 8, 8, 3]
    assert ds.element_spec[1].shape.as_list() == [8, 1]
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential(
        [tf.keras.Input((8, 8, 3)), tf.keras.layers.Flatten(), tf.keras.layers.Dense(2)]
    )
    model.compile(
        optimizer=tf.keras.optimizers.SGD(0.05),
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    history = model.fit(ds, epochs=5, verbose=0, shuffle=False)
    losses = history.history["loss"]
    assert len(losses) == 5
    assert losses[-1] < 0.5 * losses[0]


def test_unaligned_host_samples_are_copied_not_aliased():
    # TensorFlow aborts the process in tf.pad on an unaligned imported buffer.
    import numpy as np

    from chute.tensors.cpu import TensorListCPU
    from chute.tf._iterator import to_tf

    storage = np.zeros(2 * 64 + 512, np.uint8)
    start = (-storage.ctypes.data) % 64 + 16  # 16 bytes past a 64-byte boundary
    first = storage[start : start + 60].reshape(4, 5, 3)
    second = storage[start + 128 : start + 128 + 36].reshape(3, 4, 3)
    first[:] = 7
    assert first.ctypes.data % 64 == 16
    padded = to_tf(TensorListCPU([first, second], "HWC"), pad_ragged=True)
    assert padded.shape == (2, 4, 5, 3)
    assert int(padded[0, 3, 4, 2]) == 7 and int(padded[1, 3, 4, 0]) == 0
