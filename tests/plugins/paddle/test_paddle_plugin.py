"""chute.paddle: import rule, reader generator, IterableDataset + DataLoader, shards, training."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

paddle = pytest.importorskip("paddle")

import chute.paddle  # noqa: E402
from chute import fn, pipeline_def, types  # noqa: E402


@pytest.fixture(scope="module")
def index_files(tmp_path_factory):
    """10 files whose content is their index, of varying length (ragged)."""
    root = tmp_path_factory.mktemp("index")
    paths = []
    for i in range(10):
        path = root / f"{i:02d}.bin"
        path.write_bytes(bytes([i]) * (1 + i % 3))
        paths.append(str(path))
    return paths


def index_pipe_fn(files, batch_size=4, shuffle=True):
    @pipeline_def(batch_size=batch_size, num_threads=1, seed=4)
    def pipe(shard_id=0, num_shards=1):
        return fn.readers.file(
            files=files,
            random_shuffle=shuffle,
            shard_id=shard_id,
            num_shards=num_shards,
            name="Reader",
        )

    return pipe


@pytest.fixture(scope="module")
def image_root(tmp_path_factory):
    """Two classes of 8x8 PNGs, dark and bright."""
    root = tmp_path_factory.mktemp("images")
    rng = np.random.default_rng(0)
    for cls, level in enumerate((40, 200)):
        (root / f"c{cls}").mkdir()
        for i in range(8):
            pixels = np.clip(rng.normal(level, 20, (8, 8, 3)), 0, 255).astype(np.uint8)
            Image.fromarray(pixels).save(root / f"c{cls}" / f"{i}.png")
    return str(root)


def image_pipe(root):
    @pipeline_def(batch_size=8, num_threads=2, seed=1)
    def pipe():
        encoded, label = fn.readers.file(file_root=root, random_shuffle=True, name="R")
        image = fn.decoders.image(encoded, output_type=types.RGB)
        image = fn.crop_mirror_normalize(image, dtype=types.FLOAT, mean=[128.0] * 3, std=[64.0] * 3)
        return image, label

    return pipe()


def test_import_without_paddle_says_what_to_install():
    code = (
        "import sys; sys.modules['paddle'] = None\n"
        "import chute\n"
        "try:\n    import chute.paddle\nexcept ImportError as e:\n    print('ERR', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "ERR" in out.stdout and "pip install paddlepaddle" in out.stdout


def test_reader_generator_runs_one_epoch_per_call(index_files):
    read = chute.paddle.reader(
        index_pipe_fn(index_files),
        ["data", "label"],
        reader_name="Reader",
        last_batch_policy="partial",
    )
    epochs = []
    for _ in range(2):
        batches = list(read())
        assert len(batches) == 3
        data, label = batches[0]
        # ragged files padded to the longest in the batch (which files depends on the shuffle)
        assert isinstance(data, paddle.Tensor) and data.shape[0] == 4 and 1 <= data.shape[1] <= 3
        epochs.append([int(x) for _, label in batches for x in label.numpy().flatten()])
        assert sorted(epochs[-1]) == list(range(10))
    assert epochs[0] != epochs[1]


def test_iterable_dataset_with_dataloader(index_files):
    dataset = chute.paddle.IterableDataset(
        index_pipe_fn(index_files),
        ["data", "label"],
        reader_name="Reader",
        last_batch_policy="partial",
    )
    assert isinstance(dataset, paddle.io.IterableDataset) and len(dataset) == 3
    loader = paddle.io.DataLoader(dataset, batch_size=None)
    for _ in range(2):
        labels = [int(x) for _, label in loader for x in np.asarray(label).flatten()]
        assert sorted(labels) == list(range(10))


def test_classification_iterator(index_files):
    it = chute.paddle.ClassificationIterator(
        index_pipe_fn(index_files, shuffle=False)(), reader_name="Reader"
    )
    ((batch,),) = [next(it)]
    assert batch["label"].numpy().flatten().tolist() == [0, 1, 2, 3]
    assert [t.numpy().tolist() for t in batch["data"]] == [[0], [1, 1], [2, 2, 2], [3]]


def test_shard_info_from_paddle_distributed_environment(index_files):
    """PADDLE_TRAINER_ID / PADDLE_TRAINERS_NUM (set by paddle.distributed.launch) pick the shard."""
    code = "import chute.paddle, sys\nprint(chute.paddle.shard_info())\n"
    env = {**os.environ, "PADDLE_TRAINER_ID": "1", "PADDLE_TRAINERS_NUM": "2"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip().splitlines()[-1] == "(1, 2)"
    assert chute.paddle.shard_info() == (0, 1)


def test_training_loop_loss_goes_down(image_root):
    """A linear classifier in dygraph mode trains on decoded PNGs; its loss falls."""
    paddle.seed(0)
    it = chute.paddle.DataIterator(
        image_pipe(image_root), ["image", "label"], reader_name="R", auto_reset=True
    )
    model = paddle.nn.Sequential(paddle.nn.Flatten(), paddle.nn.Linear(3 * 8 * 8, 2))
    opt = paddle.optimizer.SGD(learning_rate=0.05, parameters=model.parameters())
    losses = []
    for _ in range(5):
        for (batch,) in it:
            loss = paddle.nn.functional.cross_entropy(
                model(batch["image"]), batch["label"].astype("int64")
            )
            loss.backward()
            opt.step()
            opt.clear_grad()
            losses.append(float(loss))
    assert len(losses) == 10
    assert np.mean(losses[-2:]) < 0.5 * np.mean(losses[:2])


def test_paddle_model_fit(image_root):
    """paddle.Model.fit (the high-level API) takes the IterableDataset; the loss falls."""
    paddle.seed(0)
    dataset = chute.paddle.IterableDataset(
        image_pipe(image_root), ["image", "label"], reader_name="R"
    )
    net = paddle.nn.Sequential(paddle.nn.Flatten(), paddle.nn.Linear(3 * 8 * 8, 2))
    model = paddle.Model(net)
    model.prepare(
        paddle.optimizer.SGD(learning_rate=0.05, parameters=net.parameters()),
        paddle.nn.CrossEntropyLoss(),
    )
    loader = paddle.io.DataLoader(dataset, batch_size=None)
    first = model.evaluate(loader, verbose=0)["loss"]
    model.fit(loader, epochs=5, verbose=0)
    last = model.evaluate(loader, verbose=0)["loss"]
    assert np.mean(last) < 0.5 * np.mean(first)
