"""Shared test configuration: the `gpu` / `multigpu` markers, the plugin suite's --framework
option, and the runner of the ported DALI examples (examples/dali_ports)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

DALI_PORTS = Path(__file__).resolve().parents[1] / "examples" / "dali_ports"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--framework",
        action="store",
        default=None,
        help="framework the plugin conformance suite runs against (torch, tf, paddle, jax)",
    )


def _gpu_count() -> int:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount()
    except Exception:
        return 0


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # get_closest_marker, not keywords: a folder named "gpu" is a keyword too
    if not any(
        item.get_closest_marker("gpu") or item.get_closest_marker("multigpu") for item in items
    ):
        return
    gpus = _gpu_count()
    for item in items:
        if item.get_closest_marker("gpu") and gpus < 1:
            item.add_marker(pytest.mark.skip(reason="needs an NVIDIA GPU and CuPy"))
        elif item.get_closest_marker("multigpu") and gpus < 2:
            item.add_marker(pytest.mark.skip(reason=f"needs 2 or more NVIDIA GPUs, found {gpus}"))


@pytest.fixture
def run_dali_port() -> Callable[..., list[str]]:
    """Run ``examples/dali_ports/<script>`` in a fresh interpreter (this one's ``sys.path``);
    return what it printed, line by line, after checking that it exited with 0."""

    def run(script: str, *args: str, timeout: float = 300) -> list[str]:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
        result = subprocess.run(
            [sys.executable, str(DALI_PORTS / script), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
        assert result.returncode == 0, (
            f"{script} exited with {result.returncode}:\n{result.stderr[-3000:]}"
        )
        return result.stdout.splitlines()

    return run
