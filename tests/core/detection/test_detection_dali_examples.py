"""examples/dali_ports/ssd_training_pipeline.py and coco_detection_pipeline.py (DALI's SSD300
training pipeline and its COCO-reader-with-augmentations guide, ported with only the imports
changed) run on a tiny COCO dataset in DALI_extra's layout and print their checks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from coco_tiny import write_coco

ROOT = Path(__file__).resolve().parents[3]


def _run(script: str, data_root: Path, *argv: str) -> list[str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), DALI_EXTRA_PATH=str(data_root))
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "dali_ports" / script), *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout.splitlines()


def test_ported_ssd_training_pipeline(tmp_path):
    write_coco(tmp_path)
    lines = _run("ssd_training_pipeline.py", tmp_path, "8")
    assert lines[0] == "default boxes 8732"
    assert "shapes [((3, 300, 300), (8732, 4), (8732,))]" in lines
    assert "dtypes [('float32', 'float32')]" in lines
    checks = [line for line in lines[3:] if ": " in line]
    assert len(checks) == 6 and all(line.endswith(": True") for line in checks), lines


def test_ported_coco_detection_guide(tmp_path):
    write_coco(tmp_path)
    lines = _run("coco_detection_pipeline.py", tmp_path)
    sections = [line for line in lines if line.startswith("-- ")]
    assert sections == [
        "-- coco reader",
        "-- random bbox crop",
        "-- paste and flip",
        "-- random mask pixel",
    ]
    checks = [line for line in lines if not line.startswith("-- ")]
    assert len(checks) == 12 and all(line.endswith(": True") for line in checks), lines
