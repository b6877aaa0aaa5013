"""Check that mypy rejects tests/typing/pipelines_bad.py with exactly its `# expect: CODE` errors.

Run from the repository root: ``python tests/typing/check_errors.py`` (``nox -s lint`` does).
The stubs of chute.fn / chute.ops come from core/src ([tool.mypy] in pyproject.toml).
"""

from __future__ import annotations

import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
BAD = pathlib.Path(__file__).with_name("pipelines_bad.py")
_ERROR = re.compile(r"^(?P<path>[^:]+):(?P<line>\d+): error: .*\[(?P<code>[a-z-]+)\]$")


def expected() -> set[tuple[int, str]]:
    """(line, error code) for every `# expect: CODE` comment of the bad file."""
    found = set()
    for number, line in enumerate(BAD.read_text().splitlines(), 1):
        match = re.search(r"# expect: ([a-z-]+)", line)
        if match:
            found.add((number, match.group(1)))
    return found


def reported() -> tuple[set[tuple[int, str]], str]:
    """(line, error code) of each error mypy reports on the bad file, and mypy's output."""
    run = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", str(BAD.relative_to(ROOT))],
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
    want = expected()
    got, output = reported()
    if got != want:
        print(f"mypy's errors on {BAD.name} differ from its `# expect:` comments")
        print(f"missing: {sorted(want - got)}; unexpected: {sorted(got - want)}")
        print(output)
        return 1
    print(f"mypy reports the {len(want)} expected errors in {BAD.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
