"""The README's main job: `chute demo` and `chute bench`, end to end on small data."""

from __future__ import annotations

import json

import pytest
from PIL import Image

from chute.tools.cli import main

pytest.importorskip("skimage")  # the demo's photographs; installed by the nox core session


def test_demo_makes_data_runs_an_epoch_and_draws_a_labelled_grid(tmp_path, capsys):
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
                "16",
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
    assert "48 images in" in out and "img/s" in out
    grid = Image.open(png)
    assert grid.width > 8 * 224 and grid.height > 2 * 224  # 16 tiles, 8 per row, with captions
    classes = sorted(p.name for p in (tmp_path / "data").iterdir() if p.is_dir())
    assert len(classes) >= 10 and "astronaut" in classes


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
