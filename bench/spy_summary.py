"""Summarise a py-spy raw profile: samples per thread, the hottest leaves, time per function.

    py-spy record --pid PID --duration 8 --rate 200 --threads --idle --format raw -o idle.txt
    py-spy record --pid PID --duration 6 --rate 200 --threads --gil --format raw -o gil.txt
    python bench/spy_summary.py gil.txt [--top 30] [--match chute-] [--skip-imports]

With ``--gil`` the samples are those of the thread holding the interpreter lock, so the
shares say what holds it; with ``--idle`` every thread's samples, waiting included. A line of
py-spy's raw format is ``thread (tid);frame;frame;... COUNT``, the outermost frame first.
``--match`` keeps the stacks containing a text (a thread name, a function); ``--skip-imports``
drops those inside the import system (a profile that began while modules loaded). "lines"
is self time per innermost line (function and file:line): where the held GIL is spent;
"functions" is inclusive time.
"""

from __future__ import annotations

import argparse
import collections
import re
from collections.abc import Iterable

_TID = re.compile(r"\s*\(\d+\)|\s*\(idle\)")


def read_raw(lines: Iterable[str]) -> list[tuple[list[str], int]]:
    """(frames, count) per line of py-spy's raw output, frames outermost first."""
    rows = []
    for line in lines:
        line = line.rstrip("\n")
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        rows.append((stack.split(";"), int(count)))
    return rows


def summarise(
    rows: list[tuple[list[str], int]], top: int = 25
) -> dict[str, list[tuple[str, int, float]]]:
    """Per thread, per leaf (the innermost three frames), per innermost line (self time)
    and per function (inclusive): (name, samples, percent of all samples), largest first."""
    threads: collections.Counter = collections.Counter()
    leaves: collections.Counter = collections.Counter()
    lines: collections.Counter = collections.Counter()
    functions: collections.Counter = collections.Counter()
    for frames, n in rows:
        thread = _TID.sub("", frames[0]).strip()
        threads[thread] += n
        leaf = " <- ".join(f[:70] for f in frames[-1:-4:-1] if f is not frames[0])
        leaves[f"{thread[:24]} | {leaf}"] += n
        if len(frames) > 1:  # the thread's own frame only: no Python line
            lines[frames[-1]] += n
        for name in {f.split(" (")[0] for f in frames[1:]}:
            functions[name] += n
    total = sum(threads.values()) or 1
    counters = (("threads", threads), ("leaves", leaves), ("lines", lines))
    return {
        key: [(name, n, round(100 * n / total, 1)) for name, n in counter.most_common(top)]
        for key, counter in (*counters, ("functions", functions))
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("raw", help="py-spy record --format raw output")
    p.add_argument("--top", type=int, default=25)
    p.add_argument("--match", default=None, help="keep stacks that contain this text")
    p.add_argument("--skip-imports", action="store_true", help="drop stacks inside imports")
    a = p.parse_args(argv)
    with open(a.raw) as f:
        rows = read_raw(f)
    if a.match:
        rows = [(fr, n) for fr, n in rows if any(a.match in x for x in fr)]
    if a.skip_imports:
        rows = [(fr, n) for fr, n in rows if not any("_find_and_load" in x for x in fr)]
    print(f"{sum(n for _, n in rows)} samples")
    for key, items in summarise(rows, a.top).items():
        print(f"--- {key}")
        for name, n, pct in items:
            print(f"{n:7d} {pct:5.1f}%  {name[:200]}")


if __name__ == "__main__":
    main()
