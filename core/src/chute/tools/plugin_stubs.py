"""Write the ``.pyi`` stubs of the plugins' DALI-named iterators from DALI's iterator signature.

``DALIGenericIterator`` and its kin declare ``__init__(self, pipelines, ..., **options)`` and
get DALI's keywords at run time (:func:`chute.iteration.dali.dali_iterator`), so a type
checker sees only ``**options``. This writes, next to each plugin module that uses
``@dali_iterator`` (``plugins/<fw>/src/chute/<fw>/_dali.py``), a stub whose ``__init__``
spells every keyword with its type, from :func:`chute.iteration.dali.iterator_parameters`
(the list the run-time signature is built from), so the two cannot drift::

    python -m chute.tools.plugin_stubs     # rewrite the committed plugin stubs

A plugin operator, ``name = make_fn(Cls)`` where ``Cls`` subclasses a core operator and keeps
its arguments (``chute.torch``'s ``torch_python_function``), gets ``fn.<base>``'s typed
signature (:mod:`chute.tools.stubs`) under its own name.

The plugin's source is read, not imported (no framework is needed): the rest of the module
(imports, public functions, classes, other methods) is copied as declarations with ``...`` bodies.
tests/core/test_stubs.py fails when a committed stub differs from what this writes.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pathlib
import re
import sys
from collections.abc import Sequence
from typing import Any

from chute.iteration.dali import iterator_parameters
from chute.surface import make_fn
from chute.tools import stubs

__all__ = ["COMMAND", "PLUGINS", "main", "render", "render_module", "write"]

COMMAND = "python -m chute.tools.plugin_stubs"
REPO = pathlib.Path(__file__).resolve().parents[4]  # the source checkout (core/src/chute/tools)
PLUGINS = REPO / "plugins"
_DECORATOR = "dali_iterator"
_OPERATOR = "make_fn"
_DESCRIPTORS = {"staticmethod", "classmethod", "property"}
_ANNOTATION_IMPORTS = {
    "LastBatchPolicy": "from chute.types import LastBatchPolicy",
    "ClassVar": "from typing import ClassVar",
}


def _first_line(node: ast.AST) -> str | None:
    doc = ast.get_docstring(node)  # type: ignore[arg-type]
    if not doc:
        return None
    line = doc.strip().splitlines()[0].strip()
    return line.replace("\\", "\\\\").replace('"""', "'''").rstrip('"')


def _param(arg: ast.arg, default: bool, star: str = "") -> str:
    text = star + arg.arg
    if arg.annotation is not None:
        text += f": {ast.unparse(arg.annotation)}"
    return text + (" = ..." if default else "")


def _params(args: ast.arguments) -> list[str]:
    """A def's parameters as stub text (defaults become ``...``)."""
    positional = [*args.posonlyargs, *args.args]
    first_default = len(positional) - len(args.defaults)
    out = [_param(a, i >= first_default) for i, a in enumerate(positional)]
    if args.posonlyargs:
        out.insert(len(args.posonlyargs), "/")
    if args.vararg is not None:
        out.append(_param(args.vararg, False, "*"))
    elif args.kwonlyargs:
        out.append("*")
    out += [_param(a, d is not None) for a, d in zip(args.kwonlyargs, args.kw_defaults)]
    if args.kwarg is not None:
        out.append(_param(args.kwarg, False, "**"))
    return out


def _default_type(value: Any) -> str:
    return type(value).__name__ if isinstance(value, (bool, int, float, str)) else "Any"


def _dali_params(func: ast.FunctionDef, call: ast.Call) -> list[str]:
    """``self`` and the parameters ``@dali_iterator(...)`` gives, typed.

    DALI's keywords take :class:`chute.iteration.Iterator`'s annotations; the others the
    annotation ``func`` gives them, else the type of their default.
    """
    leading = [ast.literal_eval(a) for a in call.args]
    options = {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
    declared = {a.arg: a.annotation for a in [*func.args.args, *func.args.kwonlyargs]}
    out = ["self"]
    keyword_only = False
    for p in iterator_parameters(leading, **options):
        if p.kind is inspect.Parameter.KEYWORD_ONLY and not keyword_only:
            out.append("*")
            keyword_only = True
        if declared.get(p.name) is not None:
            annotation = ast.unparse(declared[p.name])  # type: ignore[arg-type]
        elif p.annotation is not inspect.Parameter.empty:
            annotation = str(p.annotation)
        else:
            annotation = _default_type(p.default)
            annotation += " | None" if p.default is None and annotation != "Any" else ""
        default = "" if p.default is inspect.Parameter.empty else " = ..."
        out.append(f"{p.name}: {annotation}{default}")
    return out


def _dali_call(func: ast.FunctionDef) -> ast.Call | None:
    for decorator in func.decorator_list:
        if isinstance(decorator, ast.Call) and ast.unparse(decorator.func) == _DECORATOR:
            return decorator
    return None


def _passes_through(func: ast.FunctionDef) -> bool:
    """``__init__(self, *args, **kwargs)``: it takes what the base class takes (stub: inherit)."""
    a = func.args
    return (
        func.name == "__init__"
        and [x.arg for x in a.args] == ["self"]
        and a.vararg is not None
        and a.kwarg is not None
        and not a.kwonlyargs
    )


def _def(func: ast.FunctionDef | ast.AsyncFunctionDef, indent: str) -> list[str]:
    call = _dali_call(func) if isinstance(func, ast.FunctionDef) else None
    params = _dali_params(func, call) if call is not None else _params(func.args)  # type: ignore[arg-type]
    returns = ast.unparse(func.returns) if func.returns is not None else "Any"
    if func.name == "__init__":
        returns = "None"
    lines = [
        f"{indent}@{ast.unparse(d)}"
        for d in func.decorator_list
        if isinstance(d, (ast.Name, ast.Attribute))  # staticmethod, property, ...
    ]
    prefix = "async def" if isinstance(func, ast.AsyncFunctionDef) else "def"
    inner = "".join(f"{indent}    {p},\n" for p in params)
    lines.append(f"{indent}{prefix} {func.name}(\n{inner}{indent}) -> {returns}:")
    doc = _first_line(func)
    lines.append(f'{indent}    """{doc}"""' if doc else f"{indent}    ...")
    return lines


def _class_assign(node: ast.Assign) -> str:
    """A class attribute as a declaration: ``schema = Schema(...)`` becomes
    ``schema: ClassVar[Schema]``, another computed value ``ClassVar[Any]`` (its value may
    need the module's private helpers); ``staticmethod(...)`` and constants are copied."""
    value = node.value
    if (
        len(node.targets) == 1
        and isinstance(value, ast.Call)
        and ast.unparse(value.func) not in _DESCRIPTORS
    ):
        callee = value.func.id if isinstance(value.func, ast.Name) else ""
        kind = callee if callee[:1].isupper() else "Any"
        return f"{ast.unparse(node.targets[0])}: ClassVar[{kind}]"
    return ast.unparse(node)


def _operator(node: ast.Assign, tree: ast.Module) -> str | None:
    """The stub def of ``name = make_fn(Cls)``: ``fn.<base>``'s signature under ``name``.

    ``Cls`` is a class of the module whose first base is a core operator class imported by
    the module; the doc line is ``Cls``'s. None where the assignment is not of that form.
    """
    value = node.value
    if not (
        len(node.targets) == 1
        and isinstance(node.targets[0], ast.Name)
        and isinstance(value, ast.Call)
        and ast.unparse(value.func) == _OPERATOR
        and len(value.args) == 1
        and isinstance(value.args[0], ast.Name)
    ):
        return None
    classes = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
    cls = classes.get(value.args[0].id)
    if cls is None or not cls.bases or not isinstance(cls.bases[0], ast.Name):
        return None
    base_name = cls.bases[0].id
    origin = next(
        (
            n.module
            for n in tree.body
            if isinstance(n, ast.ImportFrom)
            and n.module
            and any((a.asname or a.name) == base_name for a in n.names)
        ),
        None,
    )
    if origin is None:
        return None
    base = getattr(importlib.import_module(origin), base_name)
    return stubs.fn_stub(node.targets[0].id, make_fn(base), doc=_first_line(cls))


def _class(cls: ast.ClassDef) -> list[str]:
    bases = [ast.unparse(b) for b in [*cls.bases, *cls.keywords]]
    lines = [f"class {cls.name}({', '.join(bases)}):" if bases else f"class {cls.name}:"]
    doc = _first_line(cls)
    body: list[str] = [f'    """{doc}"""'] if doc else []
    for node in cls.body:
        if isinstance(node, ast.AnnAssign):
            body.append(f"    {ast.unparse(node.target)}: {ast.unparse(node.annotation)}")
        elif isinstance(node, ast.Assign):
            body.append(f"    {_class_assign(node)}")
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not _passes_through(
            node  # type: ignore[arg-type]
        ):
            body += ["", *_def(node, "    ")]
    return lines + (body or ["    ..."])


def _used_import(node: ast.Import | ast.ImportFrom, body: str) -> str:
    """The import statement with only the names ``body`` uses ("" when none is)."""
    names = [
        a
        for a in node.names
        if re.search(rf"\b{re.escape(a.asname or a.name.split('.')[0])}\b", body)
    ]
    if not names:
        return ""
    return ast.unparse(
        ast.ImportFrom(node.module, names, node.level)
        if isinstance(node, ast.ImportFrom)
        else ast.Import(names)
    )


def render_module(source: str, module: str) -> str:
    """The stub text of one plugin module's source (``module``: its dotted name, for the title)."""
    tree = ast.parse(source)
    imported: list[ast.Import | ast.ImportFrom] = []
    code: list[str] = []
    operators: list[str] = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if node.module != "__future__" if isinstance(node, ast.ImportFrom) else True:
                imported.append(node)
        elif isinstance(node, ast.Assign) and (operator := _operator(node, tree)) is not None:
            operators.append(operator)
            code += ["", "", operator.rstrip("\n")]
        elif isinstance(node, ast.Assign) and not all(
            isinstance(t, ast.Name) for t in node.targets
        ):
            continue  # name.attribute = ... (a run-time detail, no declaration)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            code += ["", ast.unparse(node)]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if not node.name.startswith("_"):  # a private helper is no part of the surface
                code += ["", "", *_def(node, "")]
        elif isinstance(node, ast.ClassDef):
            code += ["", "", *_class(node)]
    body = "\n".join(code)
    imports = [text for node in imported if (text := _used_import(node, body))]
    for name, line in _ANNOTATION_IMPORTS.items():
        if name in body and not any(name in i for i in imports):
            imports.append(line)
    operator_text = "\n".join(operators)
    for name, module_name in stubs.ANNOTATION_MODULES.items():  # what fn stubs annotate with
        if re.search(rf"\b{name}\b", operator_text) and not any(
            re.search(rf"\b{name}\b", i) for i in imports
        ):
            imports.append(f"from {module_name} import {name}")
    title = (
        f"# Generated by `{COMMAND}` from {module}'s source and chute.iteration.dali: "
        "do not edit.\n"
    )
    doc = f'"""``{module}``: typed signatures of its DALI-named iterators and operators."""'
    return (
        f"{title}{doc}\n\nfrom __future__ import annotations\n\n"
        + "\n".join(imports)
        + (f"\n{body}\n")
    )


def sources(plugins: pathlib.Path = PLUGINS) -> list[pathlib.Path]:
    """The plugin modules that use ``@dali_iterator`` or ``make_fn`` (each gets a stub beside it)."""
    found = []
    for path in sorted(plugins.glob("*/src/chute/*/*.py")):
        text = path.read_text()
        if f"@{_DECORATOR}(" in text or f"= {_OPERATOR}(" in text:
            found.append(path)
    return found


def render(plugins: pathlib.Path = PLUGINS) -> dict[pathlib.Path, str]:
    """Stub path (beside its module) -> stub text, for every module :func:`sources` lists."""
    out = {}
    for path in sources(plugins):
        src = path.parents[2]  # plugins/<fw>/src
        module = ".".join(path.relative_to(src).with_suffix("").parts)
        out[path.with_suffix(".pyi")] = render_module(path.read_text(), module)
    return out


def write(plugins: pathlib.Path = PLUGINS) -> list[pathlib.Path]:
    """Write every plugin stub beside its module; return the paths written."""
    written = []
    for path, text in render(plugins).items():
        path.write_text(text)
        written.append(path)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m chute.tools.plugin_stubs``: write the plugin stubs, list what was written."""
    if argv:
        print(f"usage: {COMMAND}", file=sys.stderr)
        return 2
    if not PLUGINS.is_dir():
        print(f"{COMMAND}: no plugins/ folder at {REPO} (run it from a source checkout)")
        return 2
    for path in write():
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
