"""mkdocs hook: pages generated at build time, so they never fall behind the code.

- ``reference/*.md``: one page per ``chute.fn`` namespace, listing every operator of
  the registry (chute.surface.fn_entries) with its ``inspect.signature``, its
  ``__doc__`` (built from its schema) and its ``ops`` / legacy names.
- ``benchmarks.md``: the tables of ``bench/results/*.json``.

Run as a script to print a page instead: ``python docs/_hooks/generate.py benchmarks``.
"""

from __future__ import annotations

import glob
import inspect
import json
import os
import re
import sys
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# One argument line of chute.surface.describe(): "    name (type, default X, per-sample): doc"
ARG_LINE = re.compile(r"^    (\w+) \(([^,]+), (required|default .*?)(, per-sample)?\): (.*)$")


# ---- operator reference ----------------------------------------------------------------
def _namespaces() -> dict[str, list[tuple[str, Any]]]:
    """Namespace ("fn", "fn.decoders") -> its (name, function) pairs, from the registry.

    DALI's legacy names (``fn.image_decoder``) are listed beside the operator they alias
    (see :func:`_aliases`), not as sections of their own.
    """
    from chute.surface import fn_entries

    found: dict[str, list[tuple[str, Any]]] = {}
    for dotted, func in fn_entries():
        if getattr(func, "alias_of", None):
            continue
        namespace, _, name = f"fn.{dotted}".rpartition(".")
        found.setdefault(namespace, []).append((name, func))
    return dict(sorted(found.items(), key=lambda kv: (kv[0] != "fn", kv[0])))


def _aliases() -> dict[type, list[str]]:
    """Operator class -> its other public names: ``ops.X`` classes and legacy ``fn`` names."""
    from chute.runtime.registry import ops_entries
    from chute.surface import fn_entries

    names: dict[type, list[str]] = {}
    for dotted, cls in ops_entries():
        # a deprecated DALI name is a subclass of its operator that warns
        operator = cls.__bases__[0] if "deprecated" in vars(cls) else cls
        names.setdefault(operator, []).append(f"ops.{dotted}")
    for dotted, func in fn_entries():
        if getattr(func, "alias_of", None):
            names.setdefault(func.op_class, []).append(f"fn.{dotted}")
    return names


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("<", "&lt;")


def _signature(qualified: str, func: Any) -> str:
    """``fn.x(...)`` as Python, one parameter per line when it is long."""
    try:
        sig = inspect.signature(func).replace(return_annotation=inspect.Signature.empty)
    except (TypeError, ValueError):
        return f"{qualified}(...)"
    one_line = f"{qualified}{sig}"
    if len(one_line) <= 88:
        return one_line
    parts = [p.strip() for p in _split_top_level(str(sig)[1:-1])]
    return qualified + "(\n" + "".join(f"    {p},\n" for p in parts) + ")"


def _split_top_level(text: str) -> list[str]:
    """Split a parameter list at commas outside brackets and quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def operator_markdown(qualified: str, func: Any, aliases: list[str] = ()) -> str:
    """One operator's section: signature, other names, description, arguments table."""
    doc = inspect.cleandoc(func.__doc__ or "")
    prose, args = [], []
    for line in doc.splitlines():
        m = ARG_LINE.match(line)
        if m:
            name, type_, default, per_sample, text = m.groups()
            default = "required" if default == "required" else default[len("default ") :]
            args.append((name, type_, default, "yes" if per_sample else "", text))
        elif line.strip() != "Arguments:":
            prose.append(line)
    out = [f"## {qualified}", "", "```python", _signature(qualified, func), "```", ""]
    if aliases:
        out += ["Also: " + ", ".join(f"`{a}`" for a in aliases) + ".", ""]
    out.append(_cell("\n".join(prose).strip()))
    if args:
        out += [
            "",
            "| Argument | Type | Default | Per-sample | Description |",
            "|---|---|---|---|---|",
        ]
        for name, type_, default, per, text in args:
            out.append(
                f"| `{name}` | {_cell(type_)} | `{_cell(default)}` | {per} | {_cell(text)} |"
            )
    return "\n".join(out) + "\n"


def reference_pages() -> dict[str, str]:
    """reference/<namespace>.md for every fn namespace, and reference/index.md."""
    spaces = _namespaces()
    aliases = _aliases()
    pages: dict[str, str] = {}
    index = [
        "# Operator reference",
        "",
        "Generated when the site is built, from each `fn.*` function's signature and",
        "docstring (the same text as `help(chute.fn.resize)`), for every operator in chute's",
        "registry. `ops.Resize(...)` takes the same arguments as `fn.resize`; each section",
        "names the operator's `ops` classes and DALI's legacy names for it (`fn.image_decoder`,",
        "`ops.ImageDecoder`). Every argument marked *per-sample* also accepts a",
        "DataNode: a different value for every sample.",
        "",
        "Every operator also takes `device` (`cpu`, `gpu`, `mixed`: see [GPU](../gpu.md)),",
        "`name` (the node's name, used by `reader_name`, `executor_statistics()` and",
        "`graph()`), `seed`, `preserve`, `bytes_per_sample_hint` and `on_error` (see",
        "[Errors](../errors.md)).",
        "",
        "| Namespace | Operators |",
        "|---|---|",
    ]
    for space, funcs in spaces.items():
        page = f"reference/{space}.md"
        names = ", ".join(f"[{n}]({space}.md#{_anchor(space + '.' + n)})" for n, _ in funcs)
        index.append(f"| [`{space}`]({space}.md) | {names} |")
        body = [f"# {space}", ""]
        body += [
            operator_markdown(f"{space}.{n}", f, aliases.get(getattr(f, "op_class", None), []))
            for n, f in funcs
        ]
        pages[page] = "\n".join(body)
    pages["reference/index.md"] = "\n".join(index) + "\n"
    return pages


def _anchor(heading: str) -> str:
    """The id mkdocs' toc extension gives a heading (its default slugify)."""
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", heading).strip().lower())


# ---- benchmarks ----------------------------------------------------------------------------
def benchmark_results(root: str = ROOT) -> list[tuple[str, dict[str, Any]]]:
    """The throughput results files (``results`` of systems with ``img_per_s``), by name."""
    found = []
    for path in sorted(glob.glob(os.path.join(root, "bench", "results", "*.json"))):
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        results = data.get("results")
        if isinstance(results, dict) and any(
            isinstance(v, dict) and ("img_per_s" in v or "error" in v) for v in results.values()
        ):
            found.append((os.path.basename(path), data))
    return found


def benchmark_markdown(root: str = ROOT, heading: str = "##") -> str:
    """One table per results file: images/s per system, with date, machine and command."""
    out = []
    for name, data in benchmark_results(root):
        machine = data.get("machine", {})
        where = machine.get("gpu") or machine.get("processor", "")
        cpus = machine.get("cpu_count")
        title = f"{data.get('preset', name)} preset, {data.get('device', '')}".strip(", ")
        out += [f"{heading} {title} — `{name}`", ""]
        out.append(
            f"Date {data.get('date', '?')}; machine: {where}"
            + (f", {cpus} CPUs" if cpus else "")
            + f"; batch {data.get('batch')}, {data.get('threads')} threads, median of"
            f" {data.get('reps')} runs of {data.get('iters')} batches."
        )
        out += ["", "```bash", data.get("command", "(command not recorded)"), "```", ""]
        out += ["| System | Images/s | Host RSS added (MB) | GPU memory added (MB) |"]
        out += ["|---|---:|---:|---:|"]
        for system, r in data["results"].items():
            if "img_per_s" in r:
                out.append(
                    f"| {system} | {r['img_per_s']:,.0f} | {r.get('rss_mb_added', '')} "
                    f"| {r.get('gpu_mb_added', '')} |"
                )
            else:
                out.append(f"| {system} | failed: `{_cell(str(r.get('error')))}` | | |")
        out.append("")
    return "\n".join(out)


def benchmarks_page(root: str = ROOT) -> str:
    intro = (
        "# Benchmarks\n\n"
        "Every number here comes from a file in `bench/results/` (this page is generated\n"
        "from them when the site is built). Throughput is images per second delivered by\n"
        "the pipeline, systems side by side in one run of `chute bench`. Systems:\n"
        "`chute` (GPU path), `chute-cpu`, `dali` (NVIDIA DALI, GPU), `dali-cpu`, `dali-hw`\n"
        "(DALI with every JPEG on the hardware decoder), `tv-gpu` (torchvision GPU decode),\n"
        "`pil-loader` (torchvision + Pillow in a DataLoader).\n"
        "A system that failed in a run shows its error instead of a number.\n\n"
        "Run your own: `chute bench --preset train --systems chute,dali --json out.json`.\n\n"
    )
    return intro + benchmark_markdown(root)


# ---- the hook ----------------------------------------------------------------------------
def on_files(files: Any, config: Any) -> Any:
    """Add the generated pages to the site (nothing is written into docs/)."""
    from mkdocs.structure.files import File

    src = os.path.join(os.path.dirname(config.config_file_path), "core", "src")
    if src not in sys.path:
        sys.path.insert(0, src)  # chute importable from a checkout too (mkdocs serve)
    pages = reference_pages()
    pages["benchmarks.md"] = benchmarks_page(os.path.dirname(config.config_file_path))
    for path, text in pages.items():
        files.append(File.generated(config, path, content=text))
    return files


if __name__ == "__main__":
    sys.path.insert(0, os.path.join(ROOT, "core", "src"))
    which = sys.argv[1] if len(sys.argv) > 1 else "benchmarks"
    if which == "benchmarks":
        print(benchmark_markdown(heading="###"))
    else:
        print(reference_pages()[f"reference/{which}.md"])
