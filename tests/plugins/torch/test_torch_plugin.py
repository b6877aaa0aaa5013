"""chute.torch: import rule, IterableDataset with DataLoader, shards from torch.distributed, training."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

torch = pytest.importorskip("torch")

import chute.torch  # noqa: E402
from chute import fn, pipeline_def, types  # noqa: E402


@pytest.fixture(scope="module")
def index_files(tmp_path_factory):
    """10 one-byte files whose content is their index."""
    root = tmp_path_factory.mktemp("index")
    paths = []
    for i in range(10):
        path = root / f"{i:02d}.bin"
        path.write_bytes(bytes([i]))
        paths.append(str(path))
    return paths


def index_pipe_fn(files, batch_size=3, shuffle=True):
    """A @pipeline_def function taking shard_id / num_shards, as the plugins expect."""

    @pipeline_def(batch_size=batch_size, num_threads=1, seed=11)
    def pipe(shard_id=0, num_shards=1):
        data, label = fn.readers.file(
            files=files,
            random_shuffle=shuffle,
            shard_id=shard_id,
            num_shards=num_shards,
            name="Reader",
        )
        return data, label

    return pipe


def test_import_without_torch_says_what_to_install():
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import chute\n"
        "try:\n    import chute.torch\nexcept ImportError as e:\n    print('ERR', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "ERR" in out.stdout and "pip install torch" in out.stdout


def test_import_chute_imports_no_framework():
    code = "import sys, chute; print(sorted({'torch', 'tensorflow', 'jax', 'paddle'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_iterable_dataset_with_dataloader(index_files):
    """DataLoader(batch_size=None) hands out chute's batches; each iter() is the next epoch."""
    dataset = chute.torch.IterableDataset(
        index_pipe_fn(index_files),
        ["data", "label"],
        reader_name="Reader",
        last_batch_policy="partial",
    )
    assert isinstance(dataset, torch.utils.data.IterableDataset)
    loader = torch.utils.data.DataLoader(dataset, batch_size=None)
    assert len(loader) == len(dataset) == 4
    epochs = []
    for _ in range(2):
        labels = [int(x) for batch in loader for x in batch["label"].flatten()]
        assert sorted(labels) == list(range(10))
        epochs.append(labels)
    assert epochs[0] != epochs[1]  # a new permutation: the dataset moved to the next epoch
    # direct iteration, no DataLoader; breaking off half-way skips to the next epoch
    first = next(iter(dataset))
    assert first["data"].dtype == torch.uint8 and first["label"].dtype == torch.int32
    assert len([b for b in dataset]) == 4


def test_dataloader_workers_are_refused(index_files):
    dataset = chute.torch.IterableDataset(index_pipe_fn(index_files), ["d", "l"], size=10)
    with pytest.raises(Exception, match="num_workers=0"):
        next(iter(torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=1)))


def test_classification_iterator_and_pad_ragged(index_files):
    it = chute.torch.ClassificationIterator(
        index_pipe_fn(index_files, shuffle=False)(), reader_name="Reader", pad_ragged=True
    )
    ((batch,),) = [next(it)]
    assert set(batch) == {"data", "label"}
    assert batch["data"].shape == (3, 1) and batch["data"].flatten().tolist() == [0, 1, 2]


def test_classification_iterator_signature_is_the_frameworks(index_files):
    """Its keywords are FrameworkIterator's after output_map (what its stub spells out)."""
    import inspect

    from chute.iteration import FrameworkIterator

    names = list(inspect.signature(chute.torch.ClassificationIterator.__init__).parameters)
    framework = list(inspect.signature(FrameworkIterator.__init__).parameters)
    assert names == ["self", "pipelines", *framework[3:]]
    it = chute.torch.ClassificationIterator(index_pipe_fn(index_files, shuffle=False)(), 3)
    assert it.size == 3  # DALI's positional order: size after pipelines
    with pytest.raises(TypeError, match="reader_name"):
        chute.torch.ClassificationIterator(
            index_pipe_fn(index_files, shuffle=False)(), reder_name="Reader"
        )


def test_torch_python_function_takes_python_functions_arguments():
    """Its stub is fn.python_function's signature: the same arguments, batch_processing on."""
    import chute.torch.fn
    from chute.ops.python import PythonFunction
    from chute.torch.python_function import TorchPythonFunction

    schema = TorchPythonFunction.schema
    assert [a.name for a in schema.args] == [a.name for a in PythonFunction.schema.args]
    assert schema.arg("batch_processing").default is True
    assert chute.torch.fn.torch_python_function is chute.torch.torch_python_function
    assert chute.torch.fn.__name__ == "chute.torch.fn"  # DALI's plugin.pytorch.fn, a module


def test_shard_info_from_environment(monkeypatch, index_files):
    """A pipeline callable is built with the rank / world size of the running job."""
    monkeypatch.setenv("RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "2")
    assert chute.torch.shard_info() == (1, 2)
    it = chute.torch.DataIterator(
        index_pipe_fn(index_files, shuffle=False), ["d", "l"], reader_name="Reader"
    )
    assert it.pipelines[0].reader_meta("Reader")["shard_id"] == 1
    assert [int(x) for (b,) in it for x in b["l"][: b.real].flatten()] == [5, 6, 7, 8, 9]


def _rank_main(rank, world_size, init_file, files, result_dir):
    import torch.distributed as dist

    dist.init_process_group(
        "gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size
    )
    try:
        it = chute.torch.DataIterator(
            index_pipe_fn(files, batch_size=2),
            ["data", "label"],
            reader_name="Reader",
            auto_reset=True,
        )
        lengths = [len(it)]
        per_epoch = []
        for _ in range(2):
            labels = torch.cat([b["label"][: b.real].flatten() for (b,) in it])
            gathered = [torch.zeros(0, dtype=torch.int32)] * world_size
            dist.all_gather_object(gathered, labels.tolist())
            per_epoch.append(gathered)
            dist.all_gather_object(lengths_all := [None] * world_size, len(it))
            lengths.append(lengths_all)
        np.save(
            os.path.join(result_dir, f"rank{rank}.npy"),
            np.array([per_epoch, lengths], dtype=object),
            allow_pickle=True,
        )
    finally:
        dist.destroy_process_group()


def test_two_gloo_ranks_read_disjoint_shards(tmp_path, index_files):
    """Two ranks, shuffled reader, shards from torch.distributed: each sample once per epoch."""
    files = index_files[:9]  # 9 samples: ranks get 4 and 5, so the epochs' padding matters
    torch.multiprocessing.spawn(
        _rank_main, args=(2, str(tmp_path / "init"), files, str(tmp_path)), nprocs=2, join=True
    )
    results = [np.load(tmp_path / f"rank{r}.npy", allow_pickle=True) for r in range(2)]
    per_epoch, lengths = results[0]
    orders = []
    for gathered in per_epoch:
        union = [x for rank_labels in gathered for x in rank_labels]
        assert sorted(union) == list(range(9))
        orders.append(union)
    assert orders[0] != orders[1]  # reshuffled each epoch
    assert lengths[1] == lengths[2] == [3, 3]  # same len() on both ranks, every epoch


def test_training_loop_loss_goes_down(tmp_path):
    """A tiny classifier trains on decoded PNGs from fn.readers.file; its loss falls."""
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
        image = fn.crop_mirror_normalize(image, dtype=types.FLOAT, mean=[128.0] * 3, std=[64.0] * 3)
        return image, label

    it = chute.torch.DataIterator(pipe(), ["image", "label"], reader_name="R", auto_reset=True)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 8 * 8, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    losses = []
    for _ in range(5):
        for (batch,) in it:
            loss = torch.nn.functional.cross_entropy(
                model(batch["image"]), batch["label"].flatten().long()
            )
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    assert len(losses) == 10
    assert np.mean(losses[-2:]) < 0.5 * np.mean(losses[:2])


def test_iterable_dataset_state_resumes_mid_epoch(index_files):
    """state_dict() after two batches; a new dataset restored from it yields the rest."""

    def make():
        return chute.torch.IterableDataset(
            index_pipe_fn(index_files)(), ["data", "label"], reader_name="Reader"
        )

    dataset = make()
    epoch = iter(dataset)
    next(epoch), next(epoch)
    state = dataset.state_dict()
    rest = [b["label"].flatten().tolist() for b in epoch]
    restored = make()
    restored.load_state_dict(state)
    assert [b["label"].flatten().tolist() for b in restored] == rest
    assert len(rest) == 2
