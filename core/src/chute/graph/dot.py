"""Drawing a traced graph: DOT text, and PNG/SVG/PDF through Graphviz (``Pipeline.graph``).

One box per operator (fn name, node name, device), a solid edge per data
input, a dashed edge per argument input (labelled with the argument), and an
``output k`` marker per pipeline output. Operators that no output needs are
drawn dotted: the executor skips them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence

from chute.graph.node import DataNode, OpNode

__all__ = ["RENDER_FORMATS", "graph_dot", "render_dot"]

RENDER_FORMATS = ("png", "svg", "pdf")
DEVICE_COLORS = {"cpu": "#dbe9f6", "gpu": "#d9f2d0", "mixed": "#fbeec1"}


def _quote(text: str) -> str:
    """A DOT string literal."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _port(node: DataNode) -> str:
    """The edge label naming which output of a multi-output producer is used."""
    return f"[{node.index}]" if len(node.producer.outputs) > 1 else ""


def _needed(outputs: Sequence[DataNode]) -> set[int]:
    """Ids of the nodes that ``outputs`` depend on, through data and argument inputs."""
    seen: set[int] = set()
    todo = [o.producer for o in outputs]
    while todo:
        node = todo.pop()
        if node.id not in seen:
            seen.add(node.id)
            todo.extend(d.producer for d in (*node.inputs, *node.arg_inputs.values()))
    return seen


def graph_dot(nodes: Sequence[OpNode], outputs: Sequence[DataNode], name: str = "pipeline") -> str:
    """The graph of ``nodes`` with ``outputs`` marked, as Graphviz DOT text."""
    used = _needed(outputs) if outputs else {n.id for n in nodes}
    lines = [
        f"digraph {_quote(name)} {{",
        "  rankdir=TB;",
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=11];',
        '  edge [fontname="Helvetica", fontsize=9];',
    ]
    for node in nodes:
        label = f"{node.schema.display_name}\n'{node.name}'\n{node.device}"
        style = '"rounded,filled"' if node.id in used else '"rounded,filled,dotted"'
        color = DEVICE_COLORS.get(node.device, "#eeeeee")
        lines.append(
            f"  n{node.id} [label={_quote(label)}, fillcolor={_quote(color)}, style={style}];"
        )
    for node in nodes:
        for k, src in enumerate(node.inputs):
            attrs = [f"label={_quote(_port(src))}"] if _port(src) else []
            if len(node.inputs) > 1:
                attrs.append(f"headlabel={_quote(str(k))}")
            extra = f" [{', '.join(attrs)}]" if attrs else ""
            lines.append(f"  n{src.producer.id} -> n{node.id}{extra};")
        for arg, src in node.arg_inputs.items():
            label = f"{arg}{_port(src)}"
            lines.append(
                f"  n{src.producer.id} -> n{node.id} [style=dashed, label={_quote(label)}];"
            )
    for k, out in enumerate(outputs):
        lines.append(f"  out{k} [label={_quote(f'output {k}')}, shape=oval, style=bold];")
        extra = f" [label={_quote(_port(out))}]" if _port(out) else ""
        lines.append(f"  n{out.producer.id} -> out{k}{extra};")
    lines.append("}")
    return "\n".join(lines) + "\n"


def render_dot(dot: str, path: str, format: str | None = None) -> None:
    """Write ``dot`` to ``path``: as text for .dot/.gv, else rendered by Graphviz."""
    ext = os.path.splitext(path)[1].lstrip(".").lower()
    fmt = (format or ext or "dot").lower()
    if fmt in ("dot", "gv"):
        with open(path, "w", encoding="utf-8") as f:
            f.write(dot)
        return
    if fmt not in RENDER_FORMATS:
        raise ValueError(
            f"graph: cannot write {path!r} as {fmt!r}; use a path ending in .dot, "
            f"{', '.join('.' + f for f in RENDER_FORMATS)}"
        )
    data = _render(dot, fmt)
    with open(path, "wb") as f:
        f.write(data)


def _render(dot: str, fmt: str) -> bytes:
    """Graphviz output: the ``graphviz`` package when installed, else the ``dot`` program."""
    try:
        import graphviz
    except ImportError:
        graphviz = None
    if graphviz is not None:
        try:
            return graphviz.Source(dot).pipe(format=fmt)
        except graphviz.ExecutableNotFound:
            pass  # the package is there but not the program; the message below says what to do
    exe = shutil.which("dot")
    if exe is None:
        raise RuntimeError(
            f"graph: rendering {fmt.upper()} needs Graphviz's `dot` program, which is not on "
            "PATH; install Graphviz (apt install graphviz, brew install graphviz or "
            "conda install graphviz), or call graph() without a path for the DOT text, or "
            "write a .dot file"
        )
    done = subprocess.run([exe, f"-T{fmt}"], input=dot.encode(), capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"graph: dot -T{fmt} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout
