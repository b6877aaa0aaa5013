"""Check that mypy rejects each bad file of tests/typing with exactly its `# expect: CODE` errors.

The bad files: pipelines_bad.py (chute.fn / chute.ops stubs in core/src) and plugins_bad.py
(the plugins' stubs, chute.tools.plugin_stubs). Run from the repository root:
``python tests/typing/check_errors.py`` (``nox -s lint`` does); [tool.mypy] in pyproject.toml
tells mypy where the stubs are.
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
BAD = pathlib.Path(__file__).with_name("pipelines_bad.py")
BAD_FILES = (BAD, pathlib.Path(__file__).with_name("plugins_bad.py"))
_ERROR = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: .*\[(?P<code>[a-z-]+)\]$")


def expected(bad: pathlib.Path = BAD) -> set[tuple[int, str]]:
    """(line, error code) for every `# expect: CODE` comment of a bad file."""
    found = set()
    for number, line in enumerate(bad.read_text().splitlines(), 1):
        match = re.search(r"# expect: ([a-z-]+)", line)
        if match:
            found.add((number, match.group(1)))
    return found


def reported(bad: pathlib.Path = BAD) -> tuple[set[tuple[int, str]], str]:
    """(line, error code) of each error mypy reports on a bad file, and mypy's output."""
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", str(bad.relative_to(ROOT))],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    errors = set()
    for line in run.stdout.splitlines():
        match = _ERROR.match(line)
        if match:
            errors.add((int(match["line"]), match["code"]))
    return errors, run.stdout + run.stderr


def main() -> int:
    failed = 0
    for bad in BAD_FILES:
        want = expected(bad)
        got, output = reported(bad)
        if got != want:
            print(f"mypy's errors on {bad.name} differ from its `# expect:` comments")
            print(f"missing: {sorted(want - got)}; unexpected: {sorted(got - want)}")
            print(output)
            failed = 1
        else:
            print(f"mypy reports the {len(want)} expected errors in {bad.name}")
    return failed


if __name__ == "__main__":
    sys.exit(main())
