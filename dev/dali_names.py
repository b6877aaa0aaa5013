"""Compare chute's operators with DALI 2.4's public names and write docs/operators.md.

    python dev/dali_names.py            # rewrite docs/operators.md from the registry
    python dev/dali_names.py --check    # exit 1 (naming the differences) when it is stale

DALI's names are dev/dali_2_4_names.txt (``name`` or ``alias -> name``, one a line).
chute's side comes from the operator registry (chute.surface.fn_entries and
chute.runtime.registry.ops_entries): whether ``fn.<name>`` exists, its ``ops`` class,
and the backends its schema declares. tests/core/test_operator_table.py fails when the
committed page differs from what this writes, so the table cannot drift from the code.
"""

from __future__ import annotations

import argparse
import difflib
import pathlib
import sys
from dataclasses import dataclass
from typing import Any

ROOT = pathlib.Path(__file__).resolve().parents[1]
NAMES = ROOT / "dev" / "dali_2_4_names.txt"
PAGE = ROOT / "docs" / "operators.md"
COMMAND = "python dev/dali_names.py"


@dataclass(frozen=True)
class DaliName:
    """One public DALI name; ``alias_of`` is set for a deprecated alias."""

    name: str
    alias_of: str | None = None

    @property
    def is_math(self) -> bool:
        return self.name.startswith("math.")


def read_names(path: pathlib.Path = NAMES) -> list[DaliName]:
    """The names of the data file, in its order; a ValueError for a repeated or bad line."""
    names: list[DaliName] = []
    seen: set[str] = set()
    for number, line in enumerate(path.read_text().splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        name, _, target = (part.strip() for part in text.partition("->"))
        if not name or " " in name or (target and " " in target):
            raise ValueError(f"{path.name}:{number}: expected 'name' or 'name -> target'")
        if name in seen:
            raise ValueError(f"{path.name}:{number}: {name} is listed twice")
        seen.add(name)
        names.append(DaliName(name, target or None))
    for entry in names:
        if entry.alias_of is not None and entry.alias_of not in seen:
            raise ValueError(f"{entry.name} -> {entry.alias_of}: the target is not listed")
    return names


@dataclass(frozen=True)
class Status:
    """What chute has for one DALI name."""

    fn: bool
    ops: str  # the ops class (dotted under chute.ops), "" if none
    cpu: bool
    gpu: str  # "gpu", "mixed", or ""
    note: str


def _chute_surface() -> tuple[dict[str, Any], dict[type, list[str]]]:
    from chute.runtime.registry import ops_entries
    from chute.surface import fn_entries

    ops_names: dict[type, list[str]] = {}
    for dotted, cls in ops_entries():
        # a deprecated name's class is a warning subclass of its operator's: listed under both
        for owner in cls.__mro__:
            if getattr(owner, "schema", None) is not None:
                ops_names.setdefault(owner, []).append(dotted)
    return dict(fn_entries()), ops_names


def _camel(name: str) -> str:
    from chute.runtime.registry import camel

    namespace, _, short = name.rpartition(".")
    return f"{namespace}.{camel(short)}" if namespace else camel(short)


def status_of(entry: DaliName, fns: dict[str, Any], ops: dict[type, list[str]]) -> Status:
    """chute's fn function, ops class and backends for one DALI name."""
    func = fns.get(entry.name)
    if func is None:
        note = f"missing (alias of fn.{entry.alias_of})" if entry.alias_of else "missing"
        return Status(False, "", False, "", note)
    if entry.is_math:
        from chute.ops.arithmetic import Arithmetic

        devices = Arithmetic.schema.devices
        return Status(True, "", "cpu" in devices, "gpu" if "gpu" in devices else "", "chute.math")
    cls = getattr(func, "op_class", None)
    devices = cls.schema.devices if cls is not None else ()
    names = ops.get(cls, [])
    # the ops class of this name: DALI's capitalization where chute has it (TFRecordReader
    # beside the plain CamelCase TfrecordReader), else the plain one
    wanted = _camel(entry.name)
    same = [n for n in names if n.lower() == wanted.lower()]
    ops_name = next((n for n in same if n != wanted), same[0] if same else "")
    gpu = "gpu" if "gpu" in devices else ("mixed" if "mixed" in devices else "")
    notes = []
    if entry.alias_of:
        notes.append(f"deprecated alias of fn.{entry.alias_of}")
    elif getattr(func, "alias_of", None):
        notes.append(f"chute: alias of fn.{func.alias_of}")
    return Status(True, ops_name, "cpu" in devices, gpu, "; ".join(notes))


def _yes(flag: Any) -> str:
    return "yes" if flag else ""


def render() -> str:
    """docs/operators.md: the status of every DALI 2.4 name and the list of missing ones."""
    names = read_names()
    fns, ops = _chute_surface()
    rows = [(entry, status_of(entry, fns, ops)) for entry in names]
    fn_rows = [(e, s) for e, s in rows if not e.is_math]
    math_rows = [(e, s) for e, s in rows if e.is_math]
    missing = [e for e, s in rows if not s.fn]
    dali = {e.name for e in names}
    extra = sorted(name for name in fns if name not in dali)
    lines = [
        "# DALI 2.4 operators in chute",
        "",
        f"<!-- Generated by `{COMMAND}` from the operator registry and "
        "dev/dali_2_4_names.txt; do not edit by hand. -->",
        "",
        "Every public name of DALI 2.4's `nvidia.dali.fn` (deprecated aliases included) and "
        "`nvidia.dali.math`, with what chute has under the same name: the `fn` function, "
        'the `ops` class and the backends (GPU: a `device="gpu"` backend; mixed: CPU in, '
        "GPU out). The page is written from chute's operator registry, so it moves with "
        "the code.",
        "",
        f"- DALI 2.4 `fn` names: {len(fn_rows)}; chute has {sum(s.fn for _, s in fn_rows)}, "
        f"with a CPU backend {sum(s.cpu for _, s in fn_rows)}, with a GPU backend "
        f"{sum(bool(s.gpu) for _, s in fn_rows)}.",
        f"- DALI 2.4 `math` functions: {len(math_rows)}; chute has "
        f"{sum(s.fn for _, s in math_rows)} (`chute.math` and `fn.math`).",
        f"- Missing: {len(missing)} (listed at the end).",
        "",
        "| DALI name | chute | ops class | CPU | GPU | notes |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for entry, status in rows:
        prefix = "" if entry.is_math else "fn."
        shown = f"`{prefix}{entry.name}`"
        ops_cell = f"`ops.{status.ops}`" if status.ops else ""
        lines.append(
            f"| {shown} | {_yes(status.fn)} | {ops_cell} | {_yes(status.cpu)} | "
            f"{status.gpu} | {status.note} |"
        )
    lines += ["", "## Missing DALI 2.4 names", ""]
    if missing:
        lines += [f"- `{'' if e.is_math else 'fn.'}{e.name}`" for e in missing]
    else:
        lines.append("None.")
    lines += ["", "## chute names beyond DALI 2.4", ""]
    lines += [f"- `fn.{name}`" for name in extra] if extra else ["None."]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if docs/operators.md is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        old = PAGE.read_text() if PAGE.exists() else ""
        if old != text:
            diff = difflib.unified_diff(
                old.splitlines(), text.splitlines(), "committed", "registry", lineterm=""
            )
            print("\n".join(diff))
            print(f"docs/operators.md is out of date: run `{COMMAND}`", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text)
    print(PAGE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
