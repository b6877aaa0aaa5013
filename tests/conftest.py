"""Shared test configuration: the `gpu` marker, the plugin suite's --framework option, and
the runner of the ported DALI examples (examples/dali_ports)."""

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


def _gpu_available() -> bool:
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # get_closest_marker, not keywords: a folder named "gpu" is a keyword too
    if any(item.get_closest_marker("gpu") for item in items) and not _gpu_available():
        skip = pytest.mark.skip(reason="needs an NVIDIA GPU and CuPy")
        for item in items:
            if item.get_closest_marker("gpu"):
                item.add_marker(skip)


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
