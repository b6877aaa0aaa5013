"""chute.torch across ranks: 2 nodes x 2 processes on gloo, and 2 GPUs on NCCL (multigpu).

Every rank builds its pipeline from a callable (shard_id = global rank, num_shards =
world size, device_id = its local rank's GPU), gathers its sample ids, and rank 0
writes what all of them saw; the test checks that the union is the epoch, that the
ranks are disjoint, that every rank has the same len() and really runs that many steps
(a collective per step would hang otherwise), and that a checkpoint taken on every
rank resumes the rest of the epoch.
"""

from __future__ import annotations

import datetime
import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import torch.distributed as dist  # noqa: E402
from _torch_ranks import run_ranks  # noqa: E402

import chute.distributed  # noqa: E402
import chute.torch  # noqa: E402
from chute import LastBatchPolicy, fn, pipeline_def  # noqa: E402

SAMPLES = 11  # over 4 shards: 2, 3, 3, 3 samples — uneven on purpose
POLICIES = ("fill", "drop", "partial")


def index_files(folder) -> list[str]:
    """SAMPLES one-byte files whose content is their index."""
    paths = []
    for i in range(SAMPLES):
        path = os.path.join(folder, f"{i:02d}.bin")
        with open(path, "wb") as f:
            f.write(bytes([i]))
        paths.append(path)
    return paths


def pipeline_fn(files: list[str], gpu: bool = False):
    """A @pipeline_def factory taking shard_id / num_shards (device_id comes as a pipeline arg)."""

    @pipeline_def(batch_size=2, num_threads=1, seed=17)
    def pipe(shard_id=0, num_shards=1):
        data, label = fn.readers.file(
            files=files, random_shuffle=True, shard_id=shard_id, num_shards=num_shards, name="R"
        )
        return (data.gpu(), label.gpu()) if gpu else (data, label)

    return pipe


def gather(value):
    out = [None] * dist.get_world_size()
    dist.all_gather_object(out, value)
    return out


def run_epoch(iterator, device) -> tuple[list[int], int]:
    """The real sample ids this rank saw in one epoch, and its step count (one collective a step)."""
    ids, steps = [], 0
    for (batch,) in iterator:
        label = batch["label"]
        assert label.device == device and batch["data"].device == device
        assert torch.equal(batch["data"].flatten().long(), label.flatten().long())  # file = index
        ids += label[: batch.real].flatten().tolist()
        steps += 1
        tick = torch.ones(1, device=device)
        dist.all_reduce(tick)  # a rank that ran out early would leave the others waiting here
        assert int(tick.item()) == dist.get_world_size()
    return ids, steps


def rank_main(rank: int, folder: str, gpu: bool) -> None:
    backend = "nccl" if gpu else "gloo"
    if not gpu:  # CPU ranks, also on a machine with GPUs (before CUDA is first asked)
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
    if gpu:
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group(backend, timeout=datetime.timedelta(seconds=60))
    try:
        report = rank_report(folder, gpu)
        everyone = gather(report)
        if rank == 0:
            with open(os.path.join(folder, "report.json"), "w") as f:
                json.dump(everyone, f)
    finally:
        dist.destroy_process_group()


def rank_report(folder: str, gpu: bool) -> dict:
    files = index_files(folder) if dist.get_rank() == 0 else None
    files = gather(files)[0]  # one rank writes the dataset; shards index the same list
    make = pipeline_fn(files, gpu)
    place = chute.torch.placement()
    device = torch.device("cuda", place.device_id) if gpu else torch.device("cpu")
    report: dict = {"placement": [place.rank, place.world_size, place.local_rank, place.node_rank]}
    report["device_id"] = place.device_id
    # on a node with one GPU per process (none here on gloo): the local rank's, not the rank's
    report["device_if_gpus"] = chute.distributed.placement_from(
        place.rank, place.world_size, int(os.environ["LOCAL_WORLD_SIZE"])
    ).device_id
    for policy in POLICIES:
        it = chute.torch.DataIterator(
            make, ["data", "label"], reader_name="R", last_batch_policy=policy
        )
        pipe = it.pipelines[0]
        epochs = []
        for _ in range(2):
            ids, steps = run_epoch(it, device)
            epochs.append({"ids": ids, "steps": steps, "len": len(it)})
            it.reset()
        report[policy] = {
            "shard": [pipe.reader_meta("R")["shard_id"], pipe.reader_meta("R")["number_of_shards"]],
            "pipeline_device": pipe.device_id,
            "epochs": epochs,
        }
    report["resume"] = resume_report(make, folder, device)
    return report


def resume_report(make, folder: str, device) -> dict:
    """Take one batch, checkpoint every rank to a file, finish; a new iterator resumes."""
    rank = dist.get_rank()
    it = chute.torch.DataIterator(make, ["data", "label"], reader_name="R")
    (first,) = next(it)
    before = first["label"][: first.real].flatten().tolist()
    dist.all_reduce(torch.ones(1, device=device))
    path = os.path.join(folder, f"checkpoint-{rank}.json")
    with open(path, "w") as f:
        json.dump(it.checkpoints(), f)
    dist.barrier()  # every rank's checkpoint is written
    rest, _ = run_epoch(it, device)
    resumed_it = chute.torch.DataIterator(make, ["data", "label"], reader_name="R")
    with open(path) as f:
        resumed_it.load_checkpoints(json.load(f))
    resumed, _ = run_epoch(resumed_it, device)
    # the next rank's file, loaded by mistake, is refused: it belongs to another shard
    other = os.path.join(folder, f"checkpoint-{(rank + 1) % dist.get_world_size()}.json")
    wrong = chute.torch.DataIterator(make, ["data", "label"], reader_name="R")
    try:
        with open(other) as f:
            wrong.load_checkpoints(json.load(f))
        refused = ""
    except ValueError as exc:
        refused = str(exc)
    return {"before": before, "rest": rest, "resumed": resumed, "refused": refused}


def check_report(report: list[dict], world: int, per_node: int) -> None:
    for rank, r in enumerate(report):
        assert r["placement"] == [rank, world, rank % per_node, rank // per_node]
        assert r["device_if_gpus"] == rank % per_node  # the local rank's GPU, not the rank's
    for policy in POLICIES:
        for epoch in range(2):
            views = [r[policy]["epochs"][epoch] for r in report]
            lengths = {(v["len"], v["steps"]) for v in views}
            assert len(lengths) == 1, f"{policy}: ranks disagree on len() / steps: {lengths}"
            ids = [i for v in views for i in v["ids"]]
            assert len(ids) == len(set(ids)), f"{policy}: a sample reached two ranks"
            if policy != "drop":
                assert sorted(ids) == list(range(SAMPLES)), f"{policy}: epoch {epoch} incomplete"
        assert [r[policy]["shard"] for r in report] == [[k, world] for k in range(world)]
        first = [i for r in report for i in r[policy]["epochs"][0]["ids"]]
        second = [i for r in report for i in r[policy]["epochs"][1]["ids"]]
        assert first != second  # reshuffled for the second epoch, still exact
    for r in report:
        assert r["resume"]["resumed"] == r["resume"]["rest"]
        assert "saved for another setup: shard_id" in r["resume"]["refused"]
    after_checkpoint = [i for r in report for i in r["resume"]["before"] + r["resume"]["rest"]]
    assert sorted(after_checkpoint) == list(range(SAMPLES))


def test_two_nodes_of_two_ranks_on_gloo(tmp_path):
    """4 CPU processes with torchrun's variables for 2 nodes x 2 GPUs: exact, disjoint epochs."""
    run_ranks(rank_main, nodes=2, per_node=2, args=(str(tmp_path), False), timeout=240)
    report = json.loads((tmp_path / "report.json").read_text())
    check_report(report, world=4, per_node=2)
    for r in report:
        assert r["device_id"] is None  # no CUDA here: the pipelines run on the CPU
        assert r["fill"]["pipeline_device"] is None
    # 11 samples, 2 per batch, shards of 2-3: every policy gives every rank the same length
    assert {p: report[0][p]["epochs"][0]["len"] for p in POLICIES} == {
        "fill": 2,
        "drop": 1,
        "partial": 2,
    }


@pytest.mark.gpu
@pytest.mark.multigpu
def test_two_gpus_on_nccl(tmp_path):
    """One process per GPU (torchrun's variables, NCCL): batches on the rank's own GPU."""
    gpus = min(torch.cuda.device_count(), 4)
    run_ranks(rank_main, nodes=1, per_node=gpus, args=(str(tmp_path), True), timeout=300)
    report = json.loads((tmp_path / "report.json").read_text())
    check_report(report, world=gpus, per_node=gpus)
    for rank, r in enumerate(report):
        assert r["device_id"] == rank and r["fill"]["pipeline_device"] == rank


def stream_main(rank: int, folder: str) -> None:
    """Batches read on a side stream of the rank's GPU hold the pipeline's finished values."""
    torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    files = index_files(os.path.join(folder, str(rank)))
    side = torch.cuda.Stream()
    sums = []
    with torch.cuda.stream(side):  # the first batch is converted in the constructor
        it = chute.torch.DataIterator(
            pipeline_fn(files, gpu=True), ["data", "label"], reader_name="R", auto_reset=True
        )
        for _ in range(3):
            for (batch,) in it:
                data = batch["data"].long() * 3  # queued on `side`, after the pipeline's work
                sums.append(int((data.flatten() - 3 * batch["label"].flatten().long()).abs().sum()))
                assert data.device == torch.device("cuda", rank)
    np.save(os.path.join(folder, f"sums-{rank}.npy"), np.array(sums))


@pytest.mark.gpu
@pytest.mark.multigpu
def test_batches_on_a_side_stream_of_each_rank(tmp_path):
    for rank in range(2):
        (tmp_path / str(rank)).mkdir()
    run_ranks(stream_main, nodes=1, per_node=2, args=(str(tmp_path),), timeout=300)
    for rank in range(2):
        sums = np.load(tmp_path / f"sums-{rank}.npy")
        assert len(sums) == 3 * 3 and not sums.any()


def test_policy_names_match_the_enum():
    assert {LastBatchPolicy(p) for p in POLICIES} == set(LastBatchPolicy)
