"""The README's main job: `chute demo`, `chute bench`, `chute check`, end to end on small data."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from PIL import Image

import chute
from chute.gpu import runtime as gpu_runtime
from chute.tools import cli
from chute.tools.cli import main


def _one_line_error(capsys, argv: list[str], command: str) -> str:
    """Run ``chute argv`` expecting a usage error: status 2, one line on stderr, no output."""
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's errors exit from inside parse_args
        code = exc.code
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"chute {command}: error: ") and "Traceback" not in err
    return err


def test_demo_makes_data_runs_an_epoch_and_draws_a_labelled_grid(tmp_path, capsys, monkeypatch):
    # the epoch's clock: started before its first batch, read after its last (2 s)
    clock = iter([10.0, 12.0])
    monkeypatch.setattr(cli, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    png = tmp_path / "grid.png"
    assert (
        main(
            [
                "demo",
                "--n",
                "48",
                "--data",
                str(tmp_path / "data"),
                "--batch-size",
                "20",
                "--threads",
                "2",
                "--device",
                "cpu",
                "--out",
                str(png),
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "batch 20, 48 images in" in out
    # the rate is over exactly the images of the epoch: 20 + 20 + a partial batch of 8
    assert "48 images in 2.0 s: 24 img/s" in out
    grid = Image.open(png)
    assert grid.width > 8 * 224 and grid.height > 2 * 224  # 20 tiles, 8 per row, with captions
    classes = sorted(p.name for p in (tmp_path / "data").iterdir() if p.is_dir())
    assert len(classes) >= 10 and "landscape" in classes


def test_bench_prints_the_table_and_writes_json_and_png(tmp_path, capsys):
    from chute.tools.sample_data import make_imagenet_like

    data = make_imagenet_like(str(tmp_path / "data"), n=64, jobs=2)
    record = tmp_path / "r.json"
    chart = tmp_path / "r.png"
    assert (
        main(
            [
                "bench",
                "--data",
                data,
                "--preset",
                "val",
                "--systems",
                "chute,pil-threads,dali",
                "--device",
                "cpu",
                "--batch-size",
                "16",
                "--threads",
                "2",
                "--warmup",
                "1",
                "--iters",
                "2",
                "--reps",
                "1",
                "--json",
                str(record),
                "--png",
                str(chart),
            ]
        )
        == 0
    )
    result = json.loads(record.read_text())
    assert result["results"]["chute"]["img_per_s"] > 0
    assert result["results"]["pil-threads"]["img_per_s"] > 0
    assert "img_per_s" in result["results"]["dali"] or "skipped" in result["results"]["dali"]
    assert "val preset" in capsys.readouterr().out
    assert Image.open(chart).width == 640


def test_version_in_process_and_as_python_m_chute(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0 and capsys.readouterr().out.strip() == f"chute {chute.__version__}"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-m", "chute", "--version"], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0 and done.stdout.strip() == f"chute {chute.__version__}"
    done = subprocess.run(
        [sys.executable, "-m", "chute", "bench", "--systems", "nope"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_bench_rejects_an_unknown_system_in_one_line(capsys):
    err = _one_line_error(capsys, ["bench", "--systems", "chute,nope"], "bench")
    assert "'nope'" in err and "chute, chute-cpu, dali" in err


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["bench", "--iters", "0"], "--iters: must be >= 1"),
        (["bench", "--warmup", "-1"], "--warmup: must be >= 0"),
        (["bench", "--batch-size", "many"], "--batch-size: expected an integer"),
        (["bench", "--threads", "0"], "--threads: must be >= 1"),
        (["bench", "--preset", "fast"], "--preset: invalid choice"),
        (["bench", "--data", "/nonexistent/chute-data"], "--data /nonexistent/chute-data"),
        (["bench", "--systems", "chute", "--json", "/nonexistent/r.json"], "--json"),
        (["demo", "--n", "0"], "--n: must be >= 1"),
        (["demo", "--device", "tpu"], "--device: invalid choice"),
        (["demo", "--out", "/nonexistent/grid.png"], "folder /nonexistent does not exist"),
        (["check", "/nonexistent/chute-data"], "no such file or folder"),
        (["check", ".", "--jobs", "-2"], "--jobs/-j: must be >= 1"),
    ],
)
def test_every_command_validates_its_options(capsys, argv, fragment):
    assert fragment in _one_line_error(capsys, argv, argv[0])


def test_demo_device_gpu_without_a_gpu_names_the_problem_and_the_fix(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(gpu_runtime, "_import_cupy", lambda: None)  # as on a machine without
    data = tmp_path / "data"
    err = _one_line_error(capsys, ["demo", "--device", "gpu", "--data", str(data)], "demo")
    assert "needs CuPy" in err and "pip install" in err and "--device cpu" in err
    assert not data.exists()  # it stops before making the sample data
    err = _one_line_error(capsys, ["bench", "--device", "gpu", "--systems", "chute"], "bench")
    assert "--device cpu" in err


def _jpeg(seed: int) -> bytes:
    buf = io.BytesIO()
    pixels = np.random.default_rng(seed).integers(0, 255, (12, 16, 3), np.uint8)
    Image.fromarray(pixels).save(buf, "JPEG")
    return buf.getvalue()


def test_check_walks_class_folders_with_a_progress_bar_and_a_summary_table(tmp_path, capsys):
    """An ImageNet-style tree: root/<class>/<image>; checked without any flag."""
    for k, name in enumerate(["n01440764", "n01443537"]):
        (tmp_path / name).mkdir()
        for i in range(3):
            (tmp_path / name / f"{i}.JPEG").write_bytes(_jpeg(10 * k + i))
    Image.new("RGB", (8, 8)).save(tmp_path / "n01443537" / "extra.png")
    (tmp_path / "n01440764" / "cut.JPEG").write_bytes(_jpeg(99)[:200])
    assert main(["check", str(tmp_path)]) == 1
    out, err = capsys.readouterr()
    assert "8/8" in err and "file" in err  # tqdm's bar on stderr
    lines = out.strip().splitlines()
    assert lines[0].startswith(str(tmp_path / "n01440764" / "cut.JPEG") + ": ")
    table = {line.split()[0]: line.split()[1:] for line in lines[2:-1]}
    assert lines[1].split() == ["format", "files", "bad"]
    assert table == {"jpeg": ["7", "1"], "png": ["1", "0"], "total": ["8", "1"]}
    assert lines[-1].startswith("checked 8 files") and "1 bad (truncated 1)" in lines[-1]

    assert main(["check", str(tmp_path), "--json", "--no-progress"]) == 1
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert err == "" and report["files"] == 8 and report["formats"] == {"jpeg": 7, "png": 1}
    assert [(e["format"], e["category"]) for e in report["errors"]] == [("jpeg", "truncated")]


def test_bench_tuning_settings_parse_into_a_tuning():
    t = cli.tuning_from_strings(
        ["hw_load=0.65", "gpu_lanes=3", "decoder_options.cuda_backend=hybrid"]
    )
    assert t.hw_load == 0.65 and t.gpu_lanes == 3
    assert t.decoder_options == {"cuda_backend": "hybrid"}
    assert cli.tuning_from_strings([]) == chute.runtime.tuning.current()


@pytest.mark.parametrize(
    "item, fragment",
    [
        ("hw_lod=0.5", "no setting 'hw_lod'"),
        ("gpu_lanes", "expected NAME=VALUE"),
        ("gpu_lanes=0", "Tuning.gpu_lanes must be an int >= 1"),
    ],
)
def test_bench_rejects_a_bad_tuning_in_one_line(capsys, item, fragment):
    err = _one_line_error(capsys, ["bench", "--tuning", item], "bench")
    assert fragment in err


def test_bench_runs_chute_under_the_given_tuning(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(
        "chute.tools.benchmark.run_benchmark",
        lambda *a, **k: seen.append(chute.runtime.tuning.current()),
    )
    assert main(["bench", "--data", str(tmp_path), "--tuning", "cpu_lanes=3"]) == 0
    assert seen[0].cpu_lanes == 3
    assert chute.runtime.tuning.current() == chute.runtime.tuning.DEFAULTS  # restored after


def test_bench_dali_hw_system_sends_every_jpeg_to_the_hardware_decoder(monkeypatch):
    from chute.tools.benchmark import systems

    built = []

    class FakePipe:
        def build(self):
            pass

        def run(self):
            return "images", "labels"

    def fake_pipeline(*args, **kwargs):
        built.append((args, kwargs))
        return FakePipe()

    monkeypatch.setattr(systems, "dali_pipeline", fake_pipeline)
    batches = systems.SYSTEMS["dali-hw"]("train", "/data", 8, 4, "gpu")
    assert next(batches) == "images"
    args, kwargs = built[0]
    assert args == ("train", "/data", 8, 4, "gpu", False)
    assert kwargs == {"hw_decoder_load": 1.0}
    next(systems.SYSTEMS["dali"]("val", "/data", 8, 4, "gpu"))
    assert built[1][1] == {"hw_decoder_load": None}  # DALI's own default share
