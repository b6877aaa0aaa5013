"""examples/dali_ports/jax_getting_started.py (DALI's tutorial, ported) runs and prints what it should."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "examples" / "dali_ports" / "jax_getting_started.py"


def test_ported_tutorial_runs():
    pytest.importorskip("jax")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    for expected in [
        "images (8, 32, 32, 3) float32",
        "labels (8, 1) int32",
        "one epoch: 3 batches, len 3",
        "peek spec (4, 16, 16, 3) uint8",
        "peek equals next: True",
    ]:
        assert expected in lines, (expected, lines)
