"""chute.jax over several devices: one pipeline per batch slice, global arrays, exact epochs.

One process driving 4 faked CPU devices (XLA_FLAGS, see conftest.py), 2 processes of a
jax.distributed job on CPU (2 devices each, coordinator on localhost), and 2 GPUs in one
process (multigpu). Every test gathers the sample ids of every slice and checks that the
union is the epoch and that no sample reached two slices.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

import chute.jax  # noqa: E402
from chute import fn, pipeline_def  # noqa: E402

SAMPLES = 22  # over 4 shards: 5, 6, 5, 6 samples
WORKER = Path(__file__).with_name("_jax_process.py")


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    root = tmp_path_factory.mktemp("index")
    paths = []
    for i in range(SAMPLES):
        (root / f"{i:02d}.bin").write_bytes(bytes([i]))
        paths.append(str(root / f"{i:02d}.bin"))
    return paths


@pytest.fixture
def four_devices():
    if jax.device_count() < 4:
        pytest.skip("needs XLA_FLAGS=--xla_force_host_platform_device_count=4 before jax starts")
    return jax.devices()[:4]


def pipeline_fn(files, gpu=False, batch_size=2):
    @pipeline_def(batch_size=batch_size, num_threads=1, seed=29)
    def pipe(shard_id=0, num_shards=1):
        data, label = fn.readers.file(
            files=files, random_shuffle=True, shard_id=shard_id, num_shards=num_shards, name="R"
        )
        return (data.gpu(), label.gpu()) if gpu else (data, label)

    return pipe


def slice_ids(batch, name="label") -> list[list[int]]:
    """The real sample ids of each slice of this process, in slice order."""
    shards = sorted(batch[name].addressable_shards, key=lambda s: s.index[0].start)
    seen = {}
    for shard in shards:  # replicas hold the same rows: keep one
        seen.setdefault(shard.index[0].start, np.asarray(shard.data).flatten().tolist())
    rows = [seen[start] for start in sorted(seen)]
    return [r[:real] for r, real in zip(rows, batch.real_by_slice)]


@pytest.mark.parametrize("policy", ["fill", "drop"])
def test_callable_builds_one_pipeline_per_device(four_devices, files, policy):
    """A callable + NamedSharding: shard k on device k, decoded by the pipeline of shard k."""
    sharding = NamedSharding(Mesh(np.array(four_devices), ("batch",)), P("batch"))
    it = chute.jax.DataIterator(
        pipeline_fn(files), ["data", "label"], reader_name="R", sharding=sharding,
        last_batch_policy=policy, auto_reset=True,
    )  # fmt: skip
    assert [p.reader_meta("R")["shard_id"] for p in it.pipelines] == [0, 1, 2, 3]
    assert {p.reader_meta("R")["number_of_shards"] for p in it.pipelines} == {4}
    assert {p.reader_meta("R")["batches_per_epoch"] for p in it.pipelines} == {len(it)}
    raw = [
        chute.Iterator(pipeline_fn(files)(shard_id=k, num_shards=4), ["d", "l"], reader_name="R",
                       last_batch_policy=policy)
        for k in range(4)
    ]  # fmt: skip
    for _ in range(2):
        ids, steps = [], 0
        for batch in it:
            label = batch["label"]
            assert label.shape == (8, 1) and label.sharding == sharding
            expected = [next(r)[0] for r in raw]
            for shard in label.addressable_shards:
                k = shard.index[0].start // 2
                assert shard.device == four_devices[k]
                assert np.asarray(shard.data).flatten().tolist() == [
                    int(x) for x in expected[k]["l"].as_array().flatten()
                ]
            assert batch.real_by_slice == [e.real for e in expected]
            ids += [i for per_slice in slice_ids(batch) for i in per_slice]
            steps += 1
        for r in raw:
            r.reset()
        assert steps == len(it) == (3 if policy == "fill" else 2)
        assert len(ids) == len(set(ids))
        if policy == "fill":
            assert sorted(ids) == list(range(SAMPLES))


def test_replicated_slices_on_a_two_dimensional_mesh(four_devices, files):
    """P("batch") on a 2x2 mesh: 2 slices, each decoded once and copied to its replica."""
    mesh = Mesh(np.array(four_devices).reshape(2, 2), ("batch", "model"))
    sharding = NamedSharding(mesh, P("batch"))
    it = chute.jax.DataIterator(pipeline_fn(files), ["data", "label"], reader_name="R",
                                sharding=sharding)  # fmt: skip
    assert [p.reader_meta("R")["shard_id"] for p in it.pipelines] == [0, 1]
    assert {p.reader_meta("R")["number_of_shards"] for p in it.pipelines} == {2}
    ids = []
    for batch in it:
        label = batch["label"]
        assert label.shape == (4, 1) and len(label.addressable_shards) == 4
        by_row = {}
        for shard in label.addressable_shards:
            by_row.setdefault(shard.index[0].start, []).append(np.asarray(shard.data).tolist())
        assert all(len(r) == 2 and r[0] == r[1] for r in by_row.values())
        ids += [i for per_slice in slice_ids(batch) for i in per_slice]
    assert sorted(ids) == list(range(SAMPLES))


def test_checkpoint_of_four_pipelines_resumes_the_epoch(four_devices, files):
    sharding = NamedSharding(Mesh(np.array(four_devices), ("batch",)), P("batch"))

    def make():
        return chute.jax.DataIterator(pipeline_fn(files), ["data", "label"], reader_name="R",
                                      sharding=sharding)  # fmt: skip

    it = make()
    first = next(it)
    checkpoints = json.loads(json.dumps(it.checkpoints()))  # as a file would keep them
    rest = [b for b in it]
    resumed_it = make()
    resumed_it.load_checkpoints(checkpoints)
    resumed = [b for b in resumed_it]
    assert len(rest) == len(resumed) == 2
    for a, b in zip(rest, resumed):
        assert np.array_equal(np.asarray(a["label"]), np.asarray(b["label"]))
        assert a.real_by_slice == b.real_by_slice
    ids = [i for b in [first, *rest] for s in slice_ids(b) for i in s]
    assert sorted(ids) == list(range(SAMPLES))


def test_sharding_with_another_count_of_pipelines_is_refused(four_devices, files):
    sharding = NamedSharding(Mesh(np.array(four_devices), ("batch",)), P("batch"))
    pipes = [pipeline_fn(files)(shard_id=k, num_shards=2) for k in range(2)]
    with pytest.raises(ValueError, match="over 4 devices of this process but 2 pipelines"):
        chute.jax.DataIterator(pipes, ["data", "label"], reader_name="R", sharding=sharding)


def test_data_iterator_refuses_a_device_id_with_sharding(four_devices, files):
    sharding = NamedSharding(Mesh(np.array(four_devices), ("batch",)), P("batch"))

    @chute.jax.data_iterator(output_map=["d", "l"], reader_name="R", sharding=sharding)
    def iterator_fn(shard_id, num_shards):
        return fn.readers.file(files=files, shard_id=shard_id, num_shards=num_shards, name="R")

    with pytest.raises(ValueError, match="do not pass device_id"):
        iterator_fn(batch_size=8, num_threads=1, device_id=0)
    with pytest.raises(ValueError, match="batch_size 6 .* does not split evenly over .* 4"):
        iterator_fn(batch_size=6, num_threads=1)


# ---- two processes: jax.distributed on CPU ------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_two_processes(folder: Path, timeout: float = 180) -> list[dict]:
    """Start both processes of the job, wait for them (stopping both past ``timeout``)."""
    env = dict(os.environ)
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    env["JAX_PLATFORMS"] = "cpu"
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    port = free_port()
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(i), str(port), str(folder)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for i in range(2)
    ]
    outputs = []
    try:
        for proc in procs:
            out, _ = proc.communicate(timeout=timeout)
            outputs.append(out)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
    for i, proc in enumerate(procs):
        assert proc.returncode == 0, f"process {i} failed:\n{outputs[i][-4000:]}"
    return [json.loads((folder / f"report-{i}.json").read_text()) for i in range(2)]


def test_two_processes_of_two_devices(tmp_path, files):
    """jax.distributed.initialize with 2 processes: global batches, exact epochs, resume."""
    (tmp_path / "files.json").write_text(json.dumps(files))
    reports = run_two_processes(tmp_path)
    assert [r["process"] for r in reports] == [[0, 2], [1, 2]]
    assert [r["decorated_shards"] for r in reports] == [[0, 1], [2, 3]]
    for policy, length in (("fill", 3), ("drop", 2)):
        for epoch in range(2):
            views = [r[policy][epoch] for r in reports]
            assert {v["len"] for v in views} == {length}
            assert [len(v["steps"]) for v in views] == [length, length]
            ids = []
            for step in zip(*(v["steps"] for v in views)):
                for process, view in enumerate(step):
                    assert view["shape"] == [8, 1]  # the global batch of both processes
                    starts = [row[0] for row in view["rows"]]
                    assert starts == ([0, 2] if process == 0 else [4, 6])
                    assert [row[2] for row in view["rows"]] == reports[process]["local_devices"]
                    for (_, labels, _), real in zip(view["rows"], view["real_by_slice"]):
                        ids += labels[:real]
            assert len(ids) == len(set(ids)), f"{policy}: a sample reached two slices"
            if policy == "fill":
                assert sorted(ids) == list(range(SAMPLES))
    for policy in ("fill", "drop", "partial"):
        views = [r["unsharded"][policy] for r in reports]
        assert [v["shard"] for v in views] == [[0, 2], [1, 2]]
        assert len({(v["len"], v["steps"]) for v in views}) == 1
        ids = views[0]["ids"] + views[1]["ids"]
        assert len(ids) == len(set(ids))
        if policy != "drop":
            assert sorted(ids) == list(range(SAMPLES))
    for r in reports:
        assert r["resume"]["resumed"] == r["resume"]["rest"] and len(r["resume"]["rest"]) == 2


# ---- two GPUs in one process -----------------------------------------------------------------------
def gpu_devices() -> list:
    try:
        return jax.devices("gpu")
    except RuntimeError:
        return []


@pytest.mark.gpu
@pytest.mark.multigpu
def test_two_gpus_one_pipeline_each(files):
    """Each slice decoded on its own GPU (device_id = the jax device's) and left there."""
    gpus = gpu_devices()
    if len(gpus) < 2:
        pytest.skip(f"jax sees {len(gpus)} GPUs (needs jax with CUDA and 2 GPUs)")
    gpus = gpus[:2]
    sharding = NamedSharding(Mesh(np.array(gpus), ("batch",)), P("batch"))
    it = chute.jax.DataIterator(pipeline_fn(files, gpu=True, batch_size=4), ["data", "label"],
                                reader_name="R", sharding=sharding, auto_reset=True)  # fmt: skip
    assert [p.device_id for p in it.pipelines] == [chute.jax.gpu_id(d) for d in gpus]
    assert [p.reader_meta("R")["shard_id"] for p in it.pipelines] == [0, 1]
    for _ in range(2):
        ids = []
        for batch in it:
            label, data = batch["label"], batch["data"]
            assert label.shape == (8, 1)
            for shard in label.addressable_shards:
                assert shard.device == gpus[shard.index[0].start // 4]
            assert np.array_equal(np.asarray(data).astype(np.int64), np.asarray(label))
            ids += [i for s in slice_ids(batch) for i in s]
        assert sorted(ids) == list(range(SAMPLES))
