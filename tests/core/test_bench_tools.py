"""bench/vs_dali.py: the decoder-utilisation summary of nvidia-smi dmon, and a CPU run of the
script itself (DALI absent: chute's rows only); bench/spy_summary.py's py-spy shares."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SCRIPT = BENCH / "vs_dali.py"


def _module(path: Path = SCRIPT):
    spec = importlib.util.spec_from_file_location(f"bench_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


DMON = """\
# gpu    sm   mem   enc   dec   jpg   ofa
# Idx     %     %     %     %     %     %
    0     0     0     0     0     0     0
    0    27    10     0     0    75     0
    0    30    12     0     0    86     0
    0     3     0     0     0     0     0
    0     -     -     -     -     -     -
    0     0     0     0     0     0     0
"""


def test_dmon_summary_averages_the_busy_seconds():
    vs = _module()
    assert vs.dmon_summary(DMON) == {"jpg_pct": 53.7, "jpg_max": 86.0, "sm_pct": 20.0}
    timed = "#Time gpu sm mem enc dec jpg ofa\n#HH:MM:SS Idx % % % % % %\n"
    timed += " 14:45:20 0 44 9 0 0 100 0\n 14:45:21 0 40 9 0 0 66 0\n"
    assert vs.dmon_summary(timed) == {"jpg_pct": 83.0, "jpg_max": 100.0, "sm_pct": 42.0}
    idle = {"jpg_pct": None, "jpg_max": None, "sm_pct": None}
    assert vs.dmon_summary("# gpu sm mem\n 0 0 0\n") == idle  # no decoder column, all idle
    assert vs.dmon_summary("") == idle


def test_a_cpu_round_writes_each_systems_measurements(tmp_path):
    from chute.tools.sample_data import make_imagenet_like

    data = make_imagenet_like(str(tmp_path / "data"), n=16)
    out = tmp_path / "r.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    cmd = [sys.executable, str(SCRIPT), "--data", data, "--device", "cpu", "--rounds", "1"]
    cmd += ["--configs", "val:1", "--systems", "chute;chute+l1:--tuning cpu_lanes=1"]
    cmd += ["--batch", "4", "--warmup", "1", "--iters", "2", "--timeout", "120"]
    cmd += ["--json", str(out), "--dmon"]  # no GPU: nothing to record beside a CPU run
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    runs = json.loads(out.read_text())["results"]["val:1"]
    for name in ("chute", "chute+l1"):
        (one,) = runs[name]
        assert one["img_s"] > 0 and one["cpu_ms_per_img"] > 0, one
        assert "jpg_pct" not in one
    assert "NVJPG %" in done.stdout and "chute+l1" in done.stdout
    # without DALI the ratios are to the first system: its own row reads 1.00
    table = done.stdout[done.stdout.index("per-round") :].splitlines()
    assert "/chute" in done.stdout[: done.stdout.index("per-round")].splitlines()[-1]
    (own,) = [row for row in table if row.split()[1:2] == ["chute"]]
    assert own.split()[3] == "1.00", own


def test_spy_summary_shares_by_thread_leaf_and_function(tmp_path, capsys):
    spy = _module(BENCH / "spy_summary.py")
    raw = tmp_path / "gil.txt"
    raw.write_text(
        "thread (11): lane;run (a.py:1);decode (b.py:2) 6\n"
        "thread (12): lane;run (a.py:1);parse (c.py:3) 3\n"
        "thread (12): lane;_find_and_load (<frozen>:1);exec (d.py:4) 1\n"
        "not a sample line\n"
    )
    rows = spy.read_raw(raw.read_text().splitlines())
    assert len(rows) == 3 and rows[0] == (
        ["thread (11): lane", "run (a.py:1)", "decode (b.py:2)"],
        6,
    )
    shares = spy.summarise(rows)
    assert shares["threads"] == [("thread: lane", 10, 100.0)]  # ids dropped: one name
    assert shares["functions"][:2] == [("run", 9, 90.0), ("decode", 6, 60.0)]
    assert shares["leaves"][0] == ("thread: lane | decode (b.py:2) <- run (a.py:1)", 6, 60.0)
    lines = [("decode (b.py:2)", 6, 60.0), ("parse (c.py:3)", 3, 30.0), ("exec (d.py:4)", 1, 10.0)]
    assert shares["lines"] == lines  # self time per innermost line
    spy.main([str(raw), "--skip-imports", "--match", "parse"])
    out = capsys.readouterr().out
    assert out.startswith("3 samples") and "parse" in out and "decode" not in out


def test_host_paths_times_each_path_over_the_given_files(tmp_path):
    host = _module(BENCH / "host_paths.py")
    data = tmp_path / "data"
    data.mkdir()
    for i in range(12):
        (data / f"{i}.bin").write_bytes(bytes(70_000))
    out = tmp_path / "host.json"
    result = host.main(["--data", str(data), "--batch", "3", "--repeat", "2", "--json", str(out)])
    assert set(result) == {
        "read_files_ms",
        "epoch_plan_us",
        "sample_counters_us",
        "describe_inputs_us",
    }
    assert all(v > 0 for v in result.values())
    assert json.loads(out.read_text())["args"]["batch"] == 3
    with pytest.raises(SystemExit, match="needs at least"):
        host.main(["--data", str(data), "--batch", "13"])
