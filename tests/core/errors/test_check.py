"""``chute check`` on the bad-input corpus: every bad file named with its reason, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from _bad_corpus import build_corpus, encode, restore_permissions, rgb

from chute.tools import check as check_module
from chute.tools.cli import main


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    c = build_corpus(tmp_path_factory.mktemp("check") / "data")
    yield c
    restore_permissions(c)


def run_cli(capsys, *args: str) -> tuple[int, str, str]:
    code = main(["check", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_lists_each_bad_file_with_its_reason(corpus, capsys):
    code, out, _ = run_cli(capsys, str(corpus.root), "--recursive", "--no-progress")
    assert code == 1
    lines = out.strip().splitlines()
    bad_lines = [line for line in lines if line.startswith(str(corpus.root))]
    listed = {line.split(": ", 1)[0]: line.split(": ", 1)[1] for line in bad_lines}
    assert set(listed) == {str(corpus.root / n) for n in corpus.bad}
    for name, fragment in corpus.bad.items():
        assert fragment in listed[str(corpus.root / name)], name
    total = len(corpus.good) + len(corpus.bad)
    assert lines[-1].startswith(f"checked {total} files")
    assert f"{len(corpus.bad)} bad" in lines[-1] and "too large 2" in lines[-1]


def test_json_report(corpus, capsys):
    code, out, _ = run_cli(capsys, str(corpus.root), "-r", "--json", "--no-progress", "-j", "3")
    assert code == 1
    report = json.loads(out)
    assert report["files"] == len(corpus.good) + len(corpus.bad)
    assert report["bad"] == len(corpus.bad)
    errors = {os.path.relpath(e["path"], corpus.root): e for e in report["errors"]}
    assert set(errors) == set(corpus.bad)
    assert errors["a/empty.jpg"]["category"] == "empty file"
    assert errors["a/truncated.jpg"]["category"] == "truncated"
    assert errors["a/document.jpg"]["category"] == "unsupported format"
    assert errors["c/huge.png"]["category"] == "too large"
    assert sum(report["by_reason"].values()) == len(corpus.bad)


def test_thread_count_does_not_change_the_report(corpus):
    one = check_module.check(str(corpus.root), recursive=True, jobs=1, progress=False)
    four = check_module.check(str(corpus.root), recursive=True, jobs=4, progress=False)
    assert one.to_json()["errors"] == four.to_json()["errors"]


def test_all_files_includes_non_images(corpus, capsys):
    code, out, _ = run_cli(capsys, str(corpus.root), "-r", "--all", "--json", "--no-progress")
    errors = {os.path.relpath(e["path"], corpus.root) for e in json.loads(out)["errors"]}
    assert "b/notes.txt" in errors and code == 1


def test_good_folder_exits_zero(tmp_path, capsys):
    for i in range(3):
        (tmp_path / f"{i}.png").write_bytes(encode(rgb(i), "PNG"))
    code, out, _ = run_cli(capsys, str(tmp_path), "--no-progress")
    assert code == 0 and "checked 3 files" in out and "0 bad" in out


def test_single_file(corpus, capsys):
    code, out, _ = run_cli(capsys, str(corpus.root / "a" / "text.jpg"), "--no-progress")
    assert code == 1 and "text.jpg: not an image" in out


def test_usage_errors_exit_two(corpus, tmp_path, capsys):
    code, _, err = run_cli(capsys, str(tmp_path / "missing"))
    assert code == 2 and "no such file or folder" in err
    # The corpus keeps its images in class folders: with --no-recursive there is nothing.
    code, _, err = run_cli(capsys, str(corpus.root), "--no-progress", "--no-recursive")
    assert code == 2 and "--no-recursive" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(SystemExit) as info:
        run_cli(capsys, str(corpus.root), "--jobs", "0")
    err = capsys.readouterr().err
    assert info.value.code == 2 and "--jobs" in err and len(err.strip().splitlines()) == 1
    with pytest.raises(SystemExit) as info:
        main(["check"])  # no path at all: argparse's usage error
    assert info.value.code == 2


def test_command_line_with_progress_bar(corpus):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    result = subprocess.run(
        [sys.executable, "-m", "chute.tools.cli", "check", str(corpus.root), "-r", "-j", "2"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert result.returncode == 1, result.stderr
    assert "file/s" in result.stderr or "file]" in result.stderr  # tqdm's bar
    assert f"{len(corpus.bad)} bad" in result.stdout
