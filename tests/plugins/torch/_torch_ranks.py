"""Start N ranks of a torch.distributed job as the test's own processes, as torchrun would.

Each rank gets torchrun's variables (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
GROUP_RANK, MASTER_ADDR, MASTER_PORT) for ``nodes`` x ``per_node`` processes, so the
rank / world logic is the multi-node one even though every process is on this host.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from typing import Any

import torch.multiprocessing


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def torchrun_env(rank: int, nodes: int, per_node: int, port: int) -> dict[str, str]:
    """The variables torchrun sets for global ``rank`` of ``nodes`` x ``per_node``."""
    return {
        "RANK": str(rank),
        "WORLD_SIZE": str(nodes * per_node),
        "LOCAL_RANK": str(rank % per_node),
        "LOCAL_WORLD_SIZE": str(per_node),
        "GROUP_RANK": str(rank // per_node),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
    }


def _enter(rank: int, main: Callable, nodes: int, per_node: int, port: int, args: tuple) -> None:
    os.environ.update(torchrun_env(rank, nodes, per_node, port))
    main(rank, *args)


def run_ranks(
    main: Callable[..., Any], nodes: int, per_node: int, args: tuple = (), timeout: float = 120
) -> None:
    """Run ``main(rank, *args)`` in ``nodes * per_node`` spawned processes; fail past ``timeout``.

    A rank that raises fails the call with its traceback; a job that hangs (a rank
    waiting in a collective that another never reaches) is stopped and fails.
    """
    context = torch.multiprocessing.start_processes(
        _enter,
        args=(main, nodes, per_node, free_port(), args),
        nprocs=nodes * per_node,
        join=False,
        start_method="spawn",
    )
    deadline = time.monotonic() + timeout
    while not context.join(timeout=1):
        if time.monotonic() > deadline:
            for process in context.processes:
                if process.is_alive():
                    process.kill()
            for process in context.processes:
                process.join(5)
            raise TimeoutError(f"the {nodes * per_node} ranks did not finish in {timeout} s")
