"""examples/dali_ports/automatic_augmentations.py (DALI's auto_aug guide, ported with only
the imports changed) runs and prints what it should."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_ported_automatic_augmentations_guide_runs():
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "dali_ports" / "automatic_augmentations.py")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    for expected in [
        "auto_augment (8, 64, 64, 3) uint8 labels 8",
        "rand_augment (8, 64, 64, 3) uint8 labels 8",
        "trivial_augment (8, 64, 64, 3) uint8 labels 8",
        "custom policy: CustomPolicy with ['darken', 'equalize', 'invert', 'posterize', "
        "'rotate', 'shear_x', 'solarize']",
        "custom (8, 64, 64, 3) uint8",
        "some samples augmented: True",
        "same seed, same images: True",
    ]:
        assert expected in lines, (expected, lines)
