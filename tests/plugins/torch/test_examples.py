"""examples/dali_ports/pytorch_getting_started.py (DALI's tutorial, ported) runs and prints what it should."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "examples" / "dali_ports" / "pytorch_getting_started.py"


def test_ported_tutorial_runs():
    pytest.importorskip("torch")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run(
        [sys.executable, str(SCRIPT)], capture_output=True, text=True, env=env, timeout=300
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    for expected in [
        "data (8, 3, 64, 64) torch.float32",
        "label (8, 1) torch.int32",
        "epoch 0: 20 samples in 2 steps",
        "epoch 1: 20 samples in 2 steps",
        "labels in range: True",
    ]:
        assert expected in lines, (expected, lines)
