"""Where a process stands in a distributed job: its shard of the data and its GPU.

A framework plugin knows the global rank and world size (torch.distributed's
process group, jax's process index and count); what only the launcher knows —
the rank of a process among those of its own node — comes from its
environment variables. Nothing here assumes one host: the shard is the global
rank, the GPU is the local rank's, and no two ranks share anything but the
dataset. No framework is imported.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
from collections.abc import Callable, Mapping, Sequence

from chute.pipeline import PIPELINE_ARGS, Pipeline

__all__ = [
    "LOCAL_RANK_VARIABLES",
    "NODE_RANK_VARIABLES",
    "Placement",
    "PipelineSource",
    "device_for_local_rank",
    "env_int",
    "placement_from",
    "pipelines_for_shard",
    "takes_argument",
]

# What a plugin iterator takes: pipelines, or ``fn(shard_id=..., num_shards=...)``.
PipelineSource = Pipeline | Sequence[Pipeline] | Callable[..., Pipeline]

# A process's rank on its node, as launchers set it: torchrun / torch.distributed.launch,
# Open MPI, MVAPICH, Slurm's srun (one task per GPU). The first one set wins.
LOCAL_RANK_VARIABLES = (
    "LOCAL_RANK",
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "MV2_COMM_WORLD_LOCAL_RANK",
    "SLURM_LOCALID",
)
LOCAL_WORLD_SIZE_VARIABLES = ("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE")
# The node's index among the nodes: torchrun's GROUP_RANK (NODE_RANK is what users pass it).
NODE_RANK_VARIABLES = ("GROUP_RANK", "NODE_RANK", "SLURM_NODEID")


def env_int(names: Sequence[str], environ: Mapping[str, str] | None = None) -> int | None:
    """The first of the variables ``names`` that is set, as an int (None if none is set).

    A value that is not a non-negative integer is a ValueError naming the variable.
    """
    environ = os.environ if environ is None else environ
    for name in names:
        text = environ.get(name)
        if text is None or text.strip() == "":
            continue
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"{name}={text!r} is not an integer") from None
        if value < 0:
            raise ValueError(f"{name}={text!r} is negative")
        return value
    return None


def device_for_local_rank(local_rank: int, device_count: int) -> int:
    """The GPU (an index among the visible ones) of the process with this local rank.

    One process per GPU: local rank r drives GPU r. A process that sees a single
    GPU (a launcher that sets ``CUDA_VISIBLE_DEVICES`` per process) drives that one.
    """
    if device_count < 1:
        raise ValueError("device_for_local_rank: no GPU is visible")
    if device_count == 1:
        return 0
    if local_rank >= device_count:
        raise ValueError(
            f"local rank {local_rank} has no GPU of its own: this node shows {device_count} "
            "GPUs; start at most that many processes per node (torchrun --nproc_per_node), "
            "or give each process one GPU with CUDA_VISIBLE_DEVICES"
        )
    return local_rank


@dataclasses.dataclass(frozen=True)
class Placement:
    """One process of a distributed job: its shard of the data and the GPU of its pipelines.

    ``rank`` / ``world_size`` are global (they become ``shard_id`` / ``num_shards``);
    ``local_rank`` / ``local_world_size`` / ``node_rank`` are what the launcher said
    of this node (None where it said nothing); ``device_id`` is the GPU its
    pipelines run on, None without a GPU.
    """

    rank: int
    world_size: int
    local_rank: int | None
    local_world_size: int | None
    node_rank: int | None
    device_id: int | None

    @property
    def shard(self) -> tuple[int, int]:
        """``(shard_id, num_shards)``: the global rank and the world size."""
        return self.rank, self.world_size


def placement_from(
    rank: int, world_size: int, gpus: int, environ: Mapping[str, str] | None = None
) -> Placement:
    """The Placement of global ``rank`` of ``world_size`` on a node that shows ``gpus`` GPUs.

    The local rank comes from the launcher's variables (:data:`LOCAL_RANK_VARIABLES`);
    without them, from ``rank % gpus`` (every node runs one process per GPU, ranks
    numbered node after node, as torchrun and Slurm number them).
    """
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is outside the world of {world_size} processes")
    local_rank = env_int(LOCAL_RANK_VARIABLES, environ)
    local_world = env_int(LOCAL_WORLD_SIZE_VARIABLES, environ)
    if local_rank is not None and local_world is not None and local_rank >= local_world:
        raise ValueError(
            f"local rank {local_rank} is outside the {local_world} processes of its node "
            "(LOCAL_RANK, LOCAL_WORLD_SIZE)"
        )
    device_id = None
    if gpus > 0:
        device_id = device_for_local_rank(rank % gpus if local_rank is None else local_rank, gpus)
    return Placement(
        rank=rank,
        world_size=world_size,
        local_rank=local_rank,
        local_world_size=local_world,
        node_rank=env_int(NODE_RANK_VARIABLES, environ),
        device_id=device_id,
    )


def takes_argument(factory: Callable, name: str) -> bool:
    """Whether ``factory(name=...)`` is accepted: a parameter of that name, ``**kwargs``,
    or a pipeline argument of a ``@pipeline_def`` function (``device_id``, ...)."""
    inner = factory
    while isinstance(inner, functools.partial):  # partial(train_pipe, root) is still one
        inner = inner.func
    if name in PIPELINE_ARGS and getattr(inner, "takes_pipeline_args", False):
        return True
    try:
        params = inspect.signature(factory).parameters
    except (TypeError, ValueError):  # a builtin or C callable: no signature to read
        return False
    return name in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def pipelines_for_shard(
    pipelines: PipelineSource,
    shard: Callable[[], tuple[int, int]],
    device: Callable[[], int | None] | None = None,
) -> Pipeline | list[Pipeline]:
    """Pipelines as given, or ``pipelines(shard_id=..., num_shards=...[, device_id=...])``.

    ``shard`` is the framework's ``(shard_id, num_shards)`` of this process (its
    global rank and world size), asked only when ``pipelines`` is a callable;
    ``device``, when given and not None, is the GPU of this process, passed as
    ``device_id`` to a callable that takes it (every ``@pipeline_def`` function does).
    """
    if isinstance(pipelines, Pipeline):
        return pipelines
    if callable(pipelines):
        shard_id, num_shards = shard()
        kwargs: dict[str, int] = {"shard_id": shard_id, "num_shards": num_shards}
        device_id = device() if device is not None else None
        if device_id is not None and takes_argument(pipelines, "device_id"):
            kwargs["device_id"] = device_id
        return pipelines(**kwargs)
    return list(pipelines)
