"""examples/dali_ports/conditionals.py (DALI's conditionals tutorial with only the imports
changed) runs and prints what the tutorial shows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_ported_conditionals_tutorial_runs():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "dali_ports" / "conditionals.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert "output shapes [(400, 400, 3)]" in lines
    rotated = next(line for line in lines if line.startswith("rotated "))
    assert rotated.endswith(": True"), rotated  # some samples rotated, not all
    dali = lines.index("-- pipe_with_dali_conditional")
    python = lines.index("-- pipe_with_python_conditional")
    # an `if` on a DataNode traces both branches; one on a Python value only the one taken
    assert lines[dali + 1 : python] == ["Tracing True branch", "Tracing False branch"]
    assert lines[python + 1 :] in (["Tracing True branch"], ["Tracing False branch"])
