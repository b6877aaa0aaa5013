"""``chute check``: decode every image of a dataset folder and report the files that fail.

Run it before training to find what ``on_error="skip"`` would skip: empty,
truncated, corrupt, unsupported or oversized files, and files that cannot be
read. Each file is decoded in full by the same CPU decoder the pipeline uses
(``fn.decoders.image``), on a pool of threads (the decoders release the GIL).
Class folders are searched like ``fn.readers.file`` would (ImageNet's tree), unless
``--no-recursive``; the report counts files by format and bad files by reason.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import sys
import time
from collections import Counter
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from chute.ops.decoders.image_codec import decode
from chute.ops.decoders.image_headers import detect_format
from chute.ops.readers.file import IMAGE_FILTERS
from chute.ops.readers.local_files import read_file

__all__ = ["BadFile", "CheckReport", "check", "check_file", "find_images"]

# Reason categories for the summary, matched in order against the decoder's message.
_CATEGORIES = (
    ("cannot read", "unreadable"),
    ("empty input", "empty file"),
    ("max_pixels", "too large"),
    ("unsupported format", "unsupported format"),
    ("not an image", "not an image"),
    ("truncated", "truncated"),
    ("premature end", "truncated"),
)


@dataclass(frozen=True)
class BadFile:
    """A file that failed: its path, the decoder's reason and a category for the summary."""

    path: str
    reason: str
    category: str
    format: str = "unknown"


@dataclass
class CheckReport:
    """What ``check`` found: how many files, which failed and why."""

    root: str
    files: int = 0
    bad: list[BadFile] = field(default_factory=list)
    seconds: float = 0.0
    formats: Counter = field(default_factory=Counter)  # files by format (magic bytes)

    def by_category(self) -> dict[str, int]:
        """Bad files per reason category, most frequent first."""
        return dict(Counter(b.category for b in self.bad).most_common())

    def table(self) -> str:
        """The summary table: files and bad files per format, then the total."""
        bad = Counter(b.format for b in self.bad)
        rows = [(name, n, bad[name]) for name, n in self.formats.most_common()]
        rows.append(("total", self.files, len(self.bad)))
        width = max(len("format"), *(len(r[0]) for r in rows))
        lines = [f"{'format':<{width}}  {'files':>7}  {'bad':>7}"]
        lines += [f"{name:<{width}}  {n:>7}  {b:>7}" for name, n, b in rows]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        """The report as plain data (what ``chute check --json`` prints)."""
        return {
            "root": self.root,
            "files": self.files,
            "bad": len(self.bad),
            "formats": dict(self.formats.most_common()),
            "by_reason": self.by_category(),
            "errors": [
                {"path": b.path, "reason": b.reason, "category": b.category, "format": b.format}
                for b in self.bad
            ],
            "seconds": round(self.seconds, 3),
        }


def category(reason: str) -> str:
    """A short name for the kind of failure, for the summary."""
    lowered = reason.lower()
    for fragment, name in _CATEGORIES:
        if fragment in lowered:
            return name
    return "corrupt"


def find_images(
    path: str,
    recursive: bool = True,
    all_files: bool = False,
    filters: Iterable[str] = IMAGE_FILTERS,
) -> list[str]:
    """Files under ``path`` matching the reader's image filters (any file with ``all_files``)."""
    if os.path.exists(path) and not os.path.isdir(path):
        return [path]  # a FIFO, socket or device too: check_file names it
    patterns = tuple(p.lower() for p in filters)

    def wanted(name: str) -> bool:
        return all_files or any(fnmatch.fnmatchcase(name.lower(), p) for p in patterns)

    found = []
    if recursive:
        for dirpath, dirnames, names in os.walk(path):
            dirnames.sort()
            found += [os.path.join(dirpath, n) for n in sorted(names) if wanted(n)]
    else:
        with os.scandir(path) as entries:
            found = sorted(e.path for e in entries if not e.is_dir() and wanted(e.name))
    return found


def check_file(path: str) -> tuple[str, str | None]:
    """Decode one file as ``fn.decoders.image`` would: (its format, None or why it fails)."""
    try:
        # as readers.file reads: a FIFO, socket or device is refused, not waited on
        data = read_file(path).tobytes()
    except OSError as exc:
        why = str(exc).removeprefix(f"cannot read {path!r}: ")
        return "unreadable", f"cannot read: {why}"
    try:
        kind = detect_format(data)
    except ValueError:  # empty, unsupported or unknown: decode() below says which
        kind = "unknown"
    try:
        decode(data)
    except ValueError as exc:  # DecodeError and bad headers
        return kind, str(exc)
    except Exception as exc:  # anything else a codec raises is also a bad file, not a crash
        return kind, f"{type(exc).__name__}: {exc}"
    return kind, None


def check(
    path: str,
    recursive: bool = True,
    jobs: int | None = None,
    all_files: bool = False,
    progress: bool = True,
) -> CheckReport:
    """Decode every image under ``path`` on ``jobs`` threads and return what failed."""
    start = time.perf_counter()
    files = find_images(path, recursive, all_files)
    report = CheckReport(root=path, files=len(files))
    jobs = jobs or os.cpu_count() or 1
    from tqdm import tqdm

    with (
        ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="chute-check") as pool,
        tqdm(total=len(files), unit="file", file=sys.stderr, disable=not progress) as bar,
    ):
        # map keeps the file order, so reports are stable whatever the thread count.
        for file, (kind, reason) in zip(files, pool.map(check_file, files)):
            bar.update()
            report.formats[kind] += 1
            if reason is not None:
                report.bad.append(BadFile(file, reason, category(reason), kind))
    report.seconds = time.perf_counter() - start
    return report


def add_parser(sub: Any) -> None:
    """Add the ``check`` sub-command to the ``chute`` command's sub-parsers."""
    parser = sub.add_parser(
        "check",
        help="decode every image of a folder and list the files that fail",
        description=__doc__.split("\n\n")[0],
    )
    parser.add_argument("path", help="folder (or file) to check")
    parser.add_argument(
        "--recursive",
        "-r",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="descend into class folders (default; --no-recursive: this folder only)",
    )
    parser.add_argument(
        "--jobs",
        "-j",
        type=positive_int,
        default=None,
        help="decoding threads (default: CPU count)",
    )
    parser.add_argument(
        "--all", dest="all_files", action="store_true", help="check every file, not only images"
    )
    parser.add_argument("--json", action="store_true", help="print a JSON report")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.set_defaults(run=main)


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def main(args: argparse.Namespace) -> int:
    """Run ``chute check``: 0 when every file decodes, 1 when some do not, 2 on usage errors."""
    if not os.path.exists(args.path):
        print(f"chute check: error: {args.path}: no such file or folder", file=sys.stderr)
        return 2
    report = check(args.path, args.recursive, args.jobs, args.all_files, not args.no_progress)
    if report.files == 0:
        hint = "" if args.recursive else " (subfolders are skipped with --no-recursive)"
        print(f"chute check: error: no image files in {args.path}{hint}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report.to_json(), indent=2))
    else:
        for bad in report.bad:
            print(f"{bad.path}: {bad.reason}")
        print(report.table())
        summary = ", ".join(f"{name} {n}" for name, n in report.by_category().items())
        print(
            f"checked {report.files} files in {report.seconds:.1f} s: {len(report.bad)} bad"
            + (f" ({summary})" if summary else "")
        )
    return 1 if report.bad else 0
