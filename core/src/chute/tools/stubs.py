"""Write the ``.pyi`` stubs of ``chute.fn`` and ``chute.ops`` from the operator registry.

``chute.fn`` and ``chute.ops`` are filled at import time (:func:`chute.runtime.registry.populate`),
so editors and type checkers see their names only through these stubs::

    python -m chute.tools.stubs            # rewrite the committed stubs in core/src/chute
    python -m chute.tools.stubs OUT_DIR    # write them under OUT_DIR/chute/... instead

Each ``fn`` function gets its positional inputs (``DataNode``, positional-only), its
arguments as keyword-only parameters typed from the schema (``Arg.type``; a per-sample
argument also takes a ``DataNode``; a string with choices is a ``Literal``), the common
arguments, and the first line of its docstring. Each ``ops`` class gets the same keywords
on ``__init__``. A namespace with sub-namespaces (``fn.io``) is a package in the stub tree;
any other is a module (``fn/decoders.pyi``), or a package where the real one is one.
tests/core/test_stubs.py fails when the committed stubs differ from what this writes.
"""

from __future__ import annotations

import argparse
import enum
import inspect
import keyword
import pathlib
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any

from chute.graph.schema import COMMON_ARGS, REQUIRED, Arg, Schema
from chute.runtime.operator import Operator
from chute.runtime.registry import ops_entries
from chute.surface import fn_entries
from chute.types import DALIImageType, DALIInterpType

__all__ = ["ANNOTATION_MODULES", "COMMAND", "fn_stub", "main", "render", "write"]

COMMAND = "python -m chute.tools.stubs"
ROOT = pathlib.Path(__file__).resolve().parents[2]  # core/src: the committed stubs live here

# Arg.type -> the annotation of a constant value
_TYPES = {
    "float": "float",
    "int": "int",
    "bool": "bool",
    "str": "str",
    "dtype": "DTypeLike",
    "float_list": "float | Sequence[float] | NDArray[Any]",
    "int_list": "int | Sequence[int] | NDArray[Any]",
    "float_pair": "float | Sequence[float] | NDArray[Any]",
    "int_pair": "int | Sequence[int] | NDArray[Any]",
    "str_list": "Sequence[str]",
    "any": "Any",
}
# chute.types enums that string arguments take in place of their values (DALI's types.RGB)
_ENUMS: tuple[type[enum.Enum], ...] = (DALIImageType, DALIInterpType)
_COMMON_TYPES = {
    "device": "str | None",
    "name": "str | None",
    "seed": "int | None",
    "preserve": "bool | None",
    "bytes_per_sample_hint": "int | Sequence[int] | None",
    "on_error": 'Literal["raise", "skip", "warn"] | OnError | None',
}
# the names a stub may use, and where they come from (only those used are imported)
_IMPORTS = {  # name an annotation uses -> its module
    "Sequence": "collections.abc",
    "Any": "typing",
    "Literal": "typing",
    "DTypeLike": "numpy.typing",
    "NDArray": "numpy.typing",
    "DataNode": "chute.graph.node",
    "Operator": "chute.runtime.operator",
    "DALIImageType": "chute.types",
    "DALIInterpType": "chute.types",
    "OnError": "chute.types",
}
ANNOTATION_MODULES = _IMPORTS  # for chute.tools.plugin_stubs
_SECTIONS = ("collections.abc", "typing"), ("numpy.typing",), ("chute.",)
_ALIASABLE = {"Sequence"}  # generics an operator may be named after (ops.readers.Sequence)


def arg_type(arg: Arg) -> str:
    """The annotation of one schema argument."""
    if arg.choices:
        choices = list(dict.fromkeys(arg.choices))
        text = f"Literal[{', '.join(_literal(c) for c in choices)}]"
        text += "".join(
            f" | {e.__name__}"
            for e in _ENUMS
            if {getattr(m, "arg", m.value) for m in e} & set(map(str, choices))
        )
    else:
        text = _TYPES[arg.type]
    if arg.per_sample and arg.type != "any":
        text += " | DataNode"
    if arg.default is None and arg.type != "any":
        text += " | None"
    return text


def _literal(value: object) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _keywords(schema: Schema) -> list[str]:
    params = []
    for arg in schema.args:
        if keyword.iskeyword(arg.name):  # cannot be spelled as a parameter; passed by **dict
            continue
        default = "" if arg.default is REQUIRED else " = ..."
        params.append(f"{arg.name}: {arg_type(arg)}{default}")
    params += [f"{c}: {_COMMON_TYPES[c]} = ..." for c in COMMON_ARGS if c not in schema.arg_index]
    return params


def _summary(obj: Any, fallback: str) -> str:
    doc = inspect.cleandoc(getattr(obj, "__doc__", None) or fallback).strip()
    line = doc.splitlines()[0].strip() if doc else fallback
    return line.replace("\\", "\\\\").replace('"""', "'''").rstrip('"')


def _returns(op_class: type) -> str:
    """DataNode for one output; Any where there are more or their number depends on arguments."""
    fixed = getattr(op_class, "num_outputs", None) is Operator.num_outputs
    return "DataNode" if fixed and op_class.schema.num_outputs == 1 else "Any"  # type: ignore[attr-defined]


def _signature(params: list[str], returns: str, indent: str = "") -> str:
    """A def's parameters and return, one parameter a line (as ruff format writes it)."""
    if not params:
        return f"() -> {returns}:"
    inner = "".join(f"{indent}    {p},\n" for p in params)
    return f"(\n{inner}{indent}) -> {returns}:"


def fn_stub(short: str, func: Callable[..., Any], doc: str | None = None) -> str:
    """The stub def of ``fn.<short>`` (``func``); ``doc``: its doc line instead of the class's."""
    op_class = getattr(func, "op_class", None)
    if op_class is None:
        return _plain_fn_stub(short, func)
    schema = op_class.schema
    if schema.variadic:
        params = ["*inputs: DataNode"]
    else:
        required = schema.required_inputs
        params = [
            f"{name}: DataNode" + ("" if i < required else " = ...")
            for i, name in enumerate(schema.inputs)
        ]
        params += ["/"] if params else []
        params += ["*"] if schema.args or COMMON_ARGS else []
    params += _keywords(schema)
    alias_of = getattr(func, "alias_of", None)
    if doc is None:
        doc = f"Legacy alias of ``fn.{alias_of}``." if alias_of else _summary(op_class, schema.name)
    return f'def {short}{_signature(params, _returns(op_class))}\n    """{doc}"""\n'


_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9.]*")


def _annotation(text: object) -> str:
    """A source annotation kept where every name in it is one a stub imports, else Any."""
    if text is inspect.Parameter.empty:
        return "Any"
    text = text if isinstance(text, str) else getattr(text, "__name__", "Any")
    known = {*_IMPORTS, "None", "float", "int", "bool", "str"}
    return text if all(n in known for n in _NAME.findall(text)) else "Any"


def _plain_fn_stub(short: str, func: Callable[..., Any]) -> str:
    """A registered function that is not an operator class (fn.math.sqrt): its own signature."""
    sig = inspect.signature(func)
    params: list[str] = []
    kinds = inspect.Parameter
    for p in sig.parameters.values():
        if p.kind is kinds.KEYWORD_ONLY and not any(x.startswith("*") for x in params):
            params.append("*")
        star = {kinds.VAR_POSITIONAL: "*", kinds.VAR_KEYWORD: "**"}.get(p.kind, "")
        default = "" if p.default is kinds.empty else " = ..."
        params.append(f"{star}{p.name}: {_annotation(p.annotation)}{default}")
        if p.kind is kinds.POSITIONAL_ONLY and (
            len(params) == len(sig.parameters)
            or list(sig.parameters.values())[len(params)].kind is not kinds.POSITIONAL_ONLY
        ):
            params.append("/")
    returns = _annotation(sig.return_annotation)
    return f'def {short}{_signature(params, returns)}\n    """{_summary(func, short)}"""\n'


def _ops_stub(short: str, op_class: type) -> str:
    schema: Schema = op_class.schema  # type: ignore[attr-defined]
    init = _signature(["self", "*", *_keywords(schema)], "None", "    ")
    call = _signature(["self", "*inputs: DataNode", "**kwargs: Any"], _returns(op_class), "    ")
    return (
        f"class {short}(Operator):\n"
        f'    """{_summary(op_class, schema.name)}"""\n\n'
        f"    def __init__{init} ...\n"
        f"    def __call__{call} ...\n"
    )


def _tree(entries: Sequence[tuple[str, Any]]) -> dict[str, dict[str, Any]]:
    """Namespace ("" for the root, "io.file") -> its names: values, or None for a child namespace."""
    tree: dict[str, dict[str, Any]] = {"": {}}
    for dotted, value in entries:
        namespace, _, short = dotted.rpartition(".")
        tree.setdefault(namespace, {})[short] = value
        parts = namespace.split(".") if namespace else []
        for i in range(len(parts)):
            parent = ".".join(parts[:i])
            tree.setdefault(parent, {}).setdefault(parts[i], None)
            tree.setdefault(".".join(parts[: i + 1]), {})
    return tree


def _module_text(package: str, namespace: str, names: dict[str, Any], kind: str) -> str:
    full = f"{package}.{namespace}" if namespace else package
    body: list[str] = []
    children = sorted(n for n, v in names.items() if v is None)
    # an operator named like a generic the annotations use (ops.readers.Sequence): the
    # annotations take the generic under an alias (_Sequence[int])
    shadowed = {n for n, v in names.items() if v is not None and n in _IMPORTS}
    if shadowed - _ALIASABLE:
        raise ValueError(
            f"{full}.{sorted(shadowed - _ALIASABLE)[0]} shadows the name a stub imports "
            "for annotations"
        )
    for name, value in sorted(names.items()):
        if value is None:
            continue
        body.append(fn_stub(name, value) if kind == "fn" else _ops_stub(name, value))
    code = "\n".join(body)
    for name in shadowed:
        code = re.sub(rf"\b{name}\[", f"_{name}[", code)
    body = [code] if body else []

    def imported(n: str) -> str:
        return f"{n} as _{n}" if n in shadowed else n

    used = sorted(
        n for n in _IMPORTS if re.search(rf"\b_{n}\[" if n in shadowed else rf"\b{n}\b", code)
    )
    blocks = []
    for section in _SECTIONS:
        modules = sorted({_IMPORTS[n] for n in used if _IMPORTS[n].startswith(section)})
        lines = [
            f"from {m} import {', '.join(imported(n) for n in used if _IMPORTS[n] == m)}"
            for m in modules
        ]
        if section == ("chute.",):
            lines += [f"from {full} import {c} as {c}" for c in children]
            lines.sort(key=lambda line: line.split(" import ")[0])
        if lines:
            blocks.append("\n".join(lines))
    title = f"# Generated by `{COMMAND}` from the operator registry: do not edit.\n"
    doc = f'"""``{full.replace("chute.", "", 1)}``: operators generated from the registry."""'
    text = "\n\n".join([title + doc, *blocks]) + "\n"
    if body:
        text += "\n" + "\n".join(body)
    return text


def _stub_path(package: str, namespace: str, tree: dict[str, dict[str, Any]]) -> str:
    full = f"{package}.{namespace}" if namespace else package
    real = sys.modules.get(full)
    is_package = (
        not namespace
        or any(v is None for v in tree[namespace].values())
        or str(getattr(real, "__file__", None) or "").endswith("__init__.py")
    )
    path = full.replace(".", "/")
    return f"{path}/__init__.pyi" if is_package else f"{path}.pyi"


def render() -> dict[str, str]:
    """Relative path ("chute/fn/__init__.pyi") -> stub text, for chute.fn and chute.ops."""
    import chute.fn  # noqa: F401  (registers every operator and fn.math)

    out: dict[str, str] = {}
    for package, kind, entries in (
        ("chute.fn", "fn", fn_entries()),
        ("chute.ops", "ops", ops_entries()),
    ):
        tree = _tree(entries)
        for namespace, names in tree.items():
            path = _stub_path(package, namespace, tree)
            out[path] = _module_text(package, namespace, names, kind)
    return dict(sorted(out.items()))


def write(out_dir: pathlib.Path | str = ROOT) -> list[pathlib.Path]:
    """Write every stub under ``out_dir`` (core/src by default); return the paths written."""
    written = []
    for relative, text in render().items():
        path = pathlib.Path(out_dir) / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m chute.tools.stubs [OUT_DIR]``: write the stubs, list what was written."""
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.splitlines()[0])
    parser.add_argument(
        "out_dir", nargs="?", default=str(ROOT), help="where chute/... goes (default: core/src)"
    )
    args = parser.parse_args(argv)
    for path in write(args.out_dir):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
