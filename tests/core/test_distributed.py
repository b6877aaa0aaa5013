"""chute.distributed: local rank and GPU from the launcher's variables, pipelines built per rank."""

from __future__ import annotations

import functools

import pytest

from chute import fn, pipeline_def
from chute.distributed import (
    device_for_local_rank,
    env_int,
    pipelines_for_shard,
    placement_from,
    takes_argument,
)

# torchrun's variables for 2 nodes x 2 GPUs: global rank -> the node's view of it
TWO_BY_TWO = {
    rank: {
        "RANK": str(rank),
        "WORLD_SIZE": "4",
        "LOCAL_RANK": str(rank % 2),
        "LOCAL_WORLD_SIZE": "2",
        "GROUP_RANK": str(rank // 2),
    }
    for rank in range(4)
}


@pytest.mark.parametrize("rank", range(4))
def test_two_nodes_two_gpus_each(rank):
    """Rank 3 is node 1's second process: GPU 1 of its node, shard 3 of 4."""
    place = placement_from(rank, 4, gpus=2, environ=TWO_BY_TWO[rank])
    assert place.shard == (rank, 4)
    assert (place.local_rank, place.local_world_size, place.node_rank) == (rank % 2, 2, rank // 2)
    assert place.device_id == rank % 2
    assert placement_from(rank, 4, gpus=0, environ=TWO_BY_TWO[rank]).device_id is None


def test_launchers_other_than_torchrun():
    assert placement_from(5, 8, 4, {"OMPI_COMM_WORLD_LOCAL_RANK": "1"}).device_id == 1
    assert placement_from(5, 8, 4, {"SLURM_LOCALID": "3", "SLURM_NODEID": "1"}).node_rank == 1
    # LOCAL_RANK wins over the others; empty values count as unset
    assert placement_from(5, 8, 4, {"LOCAL_RANK": "2", "SLURM_LOCALID": "0"}).device_id == 2
    assert placement_from(5, 8, 4, {"LOCAL_RANK": "", "SLURM_LOCALID": "0"}).device_id == 0


def test_without_launcher_variables_the_rank_modulo_the_gpus():
    place = placement_from(6, 8, 4, {})
    assert place.device_id == 2 and place.local_rank is None and place.node_rank is None


def test_one_visible_gpu_per_process():
    """CUDA_VISIBLE_DEVICES per process: every local rank drives the GPU it sees."""
    assert placement_from(3, 4, 1, TWO_BY_TWO[3]).device_id == 0
    assert device_for_local_rank(5, 1) == 0


def test_more_processes_than_gpus_is_refused():
    with pytest.raises(ValueError, match="local rank 3 has no GPU of its own: this node shows 2"):
        placement_from(3, 4, 2, {"LOCAL_RANK": "3"})
    with pytest.raises(ValueError, match="no GPU is visible"):
        device_for_local_rank(0, 0)


def test_bad_variables_are_named():
    with pytest.raises(ValueError, match="LOCAL_RANK='one' is not an integer"):
        env_int(["LOCAL_RANK"], {"LOCAL_RANK": "one"})
    with pytest.raises(ValueError, match="GROUP_RANK='-1' is negative"):
        placement_from(0, 2, 0, {"GROUP_RANK": "-1"})
    with pytest.raises(ValueError, match="outside the 2 processes of its node"):
        placement_from(0, 4, 0, {"LOCAL_RANK": "2", "LOCAL_WORLD_SIZE": "2"})
    with pytest.raises(ValueError, match="rank 4 is outside the world of 4"):
        placement_from(4, 4, 0, {})


@pipeline_def(batch_size=2, num_threads=1)
def reader_pipe(shard_id=0, num_shards=1, files=()):
    return fn.readers.file(files=list(files), shard_id=shard_id, num_shards=num_shards, name="R")


def test_takes_argument():
    assert takes_argument(reader_pipe, "device_id")  # every @pipeline_def function
    assert takes_argument(reader_pipe, "shard_id")
    assert takes_argument(functools.partial(reader_pipe, files=[]), "device_id")
    assert not takes_argument(lambda shard_id, num_shards: None, "device_id")
    assert takes_argument(lambda **kw: None, "device_id")
    assert takes_argument(lambda shard_id, num_shards, device_id: None, "device_id")


def test_pipelines_for_shard_passes_the_device_to_factories_that_take_it(tmp_path):
    files = []
    for i in range(4):
        (tmp_path / f"{i}.bin").write_bytes(bytes([i]))
        files.append(str(tmp_path / f"{i}.bin"))
    seen = []

    def plain(shard_id, num_shards):
        seen.append((shard_id, num_shards))
        return reader_pipe(shard_id=shard_id, num_shards=num_shards, files=files)

    pipe = pipelines_for_shard(plain, lambda: (1, 2), lambda: 1)
    assert seen == [(1, 2)] and pipe.device_id is None  # plain() takes no device_id
    pipe = pipelines_for_shard(
        lambda shard_id, num_shards, device_id: reader_pipe(
            shard_id=shard_id, num_shards=num_shards, device_id=device_id, files=files
        ),
        lambda: (1, 2),
        lambda: 1,
    )
    assert pipe.device_id == 1
    pipe = pipelines_for_shard(
        lambda **kw: reader_pipe(files=files, **kw), lambda: (1, 2), lambda: None
    )
    assert pipe.device_id is None  # no GPU: the factory's own choice stands
    built = pipelines_for_shard(lambda **kw: reader_pipe(files=files, **kw), lambda: (1, 2), None)
    assert built.reader_meta("R")["shard_id"] == 1
    assert [int(x) for x in built.run()[1].as_array().flatten()] == [2, 3]
