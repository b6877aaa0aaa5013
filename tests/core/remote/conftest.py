"""Remote-storage tests: each gets its own download cache."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CHUTE_CACHE_DIR", str(tmp_path / "cache"))
