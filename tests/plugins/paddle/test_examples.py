"""examples/dali_ports/paddle_getting_started.py (DALI's tutorial, ported) runs and prints what it should."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "examples" / "dali_ports" / "paddle_getting_started.py"


def test_ported_tutorial_runs():
    pytest.importorskip("paddle")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    for expected in [
        "data (8, 3, 24, 24) paddle.float32",
        "epoch 0: 2 steps of 8, len 2",
        "epoch 1: 2 steps of 8, len 2",
    ]:
        assert expected in lines, (expected, lines)
