"""chute.iteration and the plugins read only Pipeline's public surface, and that surface works.

The scan needs no framework, so every plugin session runs it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import chute
from chute import LastBatchPolicy, fn, pipeline_def, types
from chute.iteration import Epochs, FrameworkIterator

ROOT = Path(__file__).resolve().parents[3]
FRAMEWORKS = ("torch", "tf", "paddle", "jax")
# namedtuple's public API carries an underscore so as not to clash with field names
NAMEDTUPLE_API = {"_asdict", "_field_defaults", "_fields", "_make", "_replace"}


def scanned_files() -> list[Path]:
    """chute.iteration's modules and every module of every plugin."""
    files = sorted((ROOT / "core/src/chute/iteration").rglob("*.py"))
    for framework in FRAMEWORKS:
        files += sorted((ROOT / "plugins" / framework / "src").rglob("*.py"))
    return files


def private_reaches(source: str) -> list[str]:
    """``obj._name`` where obj is not self, cls or an imported module (dunders are fine)."""
    tree = ast.parse(source)
    modules = {"self", "cls"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update((a.asname or a.name).split(".")[0] for a in node.names)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            base, name = node.value, node.attr
        elif (  # getattr(obj, "_name"), hasattr(...), setattr(...)
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("getattr", "hasattr", "setattr")
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
        ):
            base, name = node.args[0], node.args[1].value
        else:
            continue
        if not name.startswith("_") or (name.startswith("__") and name.endswith("__")):
            continue
        if name in NAMEDTUPLE_API:
            continue
        if isinstance(base, ast.Name) and base.id in modules:
            continue
        found.append((node.lineno, node.col_offset, ast.unparse(node)))
    return [f"line {line}: {text}" for line, _, text in sorted(found)]


def test_the_scan_sees_private_reaches():
    """The checker itself: it flags what chute.iteration and the plugins used to do."""
    source = (
        "import torch\n"
        "meta = pipe._executor.last_meta\n"
        "spec = self.pipelines[0]._plan.spec(node)\n"
        "nodes = pipeline._graph.nodes\n"
        "late = getattr(ref, '_announce', False)\n"
        "ok = self._batches, cls._x, torch._C, x.__dlpack__(), getattr(self, '_y', 0)\n"
    )
    assert [r.split(": ")[1] for r in private_reaches(source)] == [
        "pipe._executor",
        "self.pipelines[0]._plan",
        "pipeline._graph",
        "getattr(ref, '_announce', False)",
    ]


def test_iteration_and_plugins_use_only_public_attributes():
    files = scanned_files()
    assert len(files) >= 10  # the scan found the plugins' sources
    reaches = {str(path.relative_to(ROOT)): private_reaches(path.read_text()) for path in files}
    assert {path: found for path, found in reaches.items() if found} == {}


# ---- the public surface itself ---------------------------------------------------------------
@pytest.fixture(scope="module")
def index_files(tmp_path_factory):
    """10 one-byte files whose content is their index."""
    root = tmp_path_factory.mktemp("surface")
    paths = []
    for i in range(10):
        path = root / f"{i:02d}.bin"
        path.write_bytes(bytes([i]))
        paths.append(str(path))
    return paths


def reader_pipe(files, batch_size=4):
    @pipeline_def(batch_size=batch_size, num_threads=1, seed=3)
    def pipe():
        data, label = fn.readers.file(files=files, name="Reader")
        return data, fn.cast(label, dtype=types.FLOAT)

    return pipe()


def test_output_specs_before_running(index_files):
    specs = reader_pipe(index_files).output_specs()
    assert len(specs) == 2
    assert specs[0].dtype == np.uint8 and specs[0].ndim == 1
    assert specs[1].dtype == np.float32


def test_last_batch_meta_marks_padding(index_files):
    pipe = reader_pipe(index_files)
    assert pipe.last_batch_meta() == []
    pipe.set_last_batch_policy("Reader", LastBatchPolicy.FILL)
    reals = []
    for _ in range(3):  # 10 samples in batches of 4: 4, 4, 2 real + 2 padding
        pipe.run()
        meta = pipe.last_batch_meta()
        reals.append([m["real"] for m in meta])
        assert [m["epoch"] for m in meta] == [0] * 4
    assert reals == [[True] * 4, [True] * 4, [True, True, False, False]]


def test_set_last_batch_policy_changes_epoch_length(index_files):
    pipe = reader_pipe(index_files)
    pipe.set_last_batch_policy("Reader", LastBatchPolicy.DROP)
    assert pipe.reader_meta("Reader")["batches_per_epoch"] == 2
    pipe.set_last_batch_policy("Reader", LastBatchPolicy.PARTIAL)
    assert pipe.reader_meta("Reader")["batches_per_epoch"] == 3
    with pytest.raises(KeyError, match="no reader named 'Nope'"):
        pipe.set_last_batch_policy("Nope", LastBatchPolicy.FILL)


def test_seek_reader_starts_an_epoch(index_files):
    pipe = reader_pipe(index_files)
    (data, _), _ = pipe.run(), pipe.run()
    pipe.seek_reader("Reader", 5)
    data, _ = pipe.run()
    assert [m["epoch"] for m in pipe.last_batch_meta()] == [5] * 4
    assert data.as_array().ravel().tolist() == [0, 1, 2, 3]
    with pytest.raises(KeyError):
        pipe.seek_reader("Nope", 0)


def test_external_source_names_are_the_feedable_ones():
    pipe = chute.Pipeline(batch_size=2, num_threads=1)
    with pipe:
        fed = fn.external_source(name="fed")
        fn.external_source(name="sourced", source=lambda: [np.zeros(1)] * 2)
        pipe.set_outputs(fed + 1)
    assert pipe.external_source_names() == ["fed"]


def test_framework_iterator_needs_a_to_tensor(index_files):
    with pytest.raises(TypeError, match="to_tensor"):
        FrameworkIterator(reader_pipe(index_files), ["data", "label"])


def test_iterator_builds_a_callable_with_its_shard(index_files):
    """A callable given as pipelines gets the iterator's shard_info()."""
    calls = []

    class SecondOfTwo(chute.Iterator):
        def shard_info(self):
            return 1, 2

    def make(shard_id, num_shards):
        calls.append((shard_id, num_shards))

        @pipeline_def(batch_size=5, num_threads=1, seed=3)
        def pipe():
            return fn.readers.file(
                files=index_files, shard_id=shard_id, num_shards=num_shards, name="Reader"
            )

        return pipe()

    it = SecondOfTwo(make, ["data", "label"], reader_name="Reader")
    (batch,) = next(it)
    assert calls == [(1, 2)]
    assert batch["data"].as_array().ravel().tolist() == [5, 6, 7, 8, 9]


def test_epochs_runs_the_next_epoch_on_each_iter(index_files):
    epochs = Epochs(
        lambda: chute.Iterator(reader_pipe(index_files), ["d", "l"], reader_name="Reader"), "test"
    )
    first = [b["d"].as_array().ravel().tolist() for b in epochs]
    assert len(first) == 3 and first[0] == [0, 1, 2, 3]
    half = iter(epochs)
    next(half)  # epoch 1 abandoned after one batch
    assert [b.real for b in epochs] == [4, 4, 2]  # epoch 2, whole
    assert epochs.iterator.epoch == 2
    two = Epochs(lambda: chute.Iterator([reader_pipe(index_files)] * 2, ["d", "l"]), "Two")
    with pytest.raises(ValueError, match="Two takes one pipeline"):
        iter(two).__next__()
