"""bench/multigpu: the DDP training script's tiny CPU mode runs; scaling's summary arithmetic.

The GPU runs themselves are the lead's (docs/multi-gpu.md has the commands); here the
scripts must start, train, and write what they measured.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

BENCH = Path(__file__).resolve().parents[3] / "bench" / "multigpu"


def load(name: str):
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(
            f"bench_multigpu_{name}", BENCH / f"{name}.py"
        )
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))


def test_ddp_train_tiny_mode(tmp_path):
    """One CPU process, a tiny model, 3 steps: step times and waits are written per loader."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    out = subprocess.run(
        [sys.executable, str(BENCH / "ddp_train.py"), "--cpu", "--steps", "3", "--model", "tiny",
         "--loaders", "chute", "--data", str(tmp_path / "data"), "--out", str(tmp_path / "out"),
         "--name", "tiny"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    (path,) = (tmp_path / "out").glob("tiny_*.json")
    results = json.loads(path.read_text())
    assert results["world_size"] == 1 and results["config"]["batch_size"] == 4
    (report,) = results["reports"]
    assert report["loader"] == "chute" and report["rank"] == 0
    assert report["step_ms"] > 0 and report["gpu_idle_ms_per_step"] is None  # no GPU here
    assert all(math.isfinite(x) for x in report["loss_first_last"])
    summary = results["summary"]["chute"]
    assert summary["step_ms_rounds"] == [report["step_ms"]]
    assert summary["global_img_s_median"] == pytest.approx(4 * 1000 / report["step_ms"])
    assert sum(1 for _ in (tmp_path / "data").glob("class*/*.jpg")) == 32


def test_scaling_summary_ratios_per_round():
    scaling = load("scaling")
    runs = [
        {"system": s, "gpus": g, "round": k, "img_s": v}
        for (s, g, k), v in {
            ("chute", 1, 0): 100.0, ("chute", 2, 0): 190.0,
            ("chute", 1, 1): 110.0, ("chute", 2, 1): 198.0,
            ("chute", 1, 2): 90.0, ("chute", 2, 2): 180.0,
            ("dali", 1, 0): 100.0, ("dali", 2, 0): 150.0,
            ("dali", 1, 1): 100.0, ("dali", 2, 1): 160.0,
            ("dali", 1, 2): 100.0, ("dali", 2, 2): 120.0,
        }.items()
    ]  # fmt: skip
    out = scaling.summarize(runs, ["chute", "dali"], [1, 2], 3)
    assert out["img_s"]["chute"]["2"]["median"] == 190.0
    assert out["scaling"]["chute"]["rounds"] == [1.9, 1.8, 2.0]
    assert out["scaling"]["chute"]["median"] == 1.9
    assert (out["scaling"]["chute"]["min"], out["scaling"]["chute"]["max"]) == (1.8, 2.0)
    assert out["chute_over_dali"]["2"]["rounds"] == pytest.approx([190 / 150, 198 / 160, 1.5])
    assert out["chute_over_dali"]["2"]["median"] == pytest.approx(190 / 150)
    assert out["chute_over_dali"]["1"]["median"] == pytest.approx(1.0)
