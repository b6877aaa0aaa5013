"""Shared test configuration: the `gpu` / `multigpu` markers and the plugin suite's --framework option."""

from __future__ import annotations

import pytest


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
