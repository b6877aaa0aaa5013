"""Shared test configuration: the `gpu` marker and the plugin suite's --framework option."""

from __future__ import annotations

import pytest


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
