"""``enable_conditionals``: the pipeline function's source rewritten so that ``if`` on a
DataNode traces per-sample branches (what DALI does with its fork of TF's AutoGraph).

:func:`convert` parses a function's source and rewrites it (:class:`_Rewrite`):

- ``if t: A else: B`` becomes two nested functions, one per branch, that take and return
  the variables the branches assign, and ``x, y = __chute.if_stmt(t, body, orelse, ...)``;
- ``a if t else b``, ``a and b``, ``a or b``, ``not a`` and ``a < b < c`` become calls
  that evaluate lazily, as Python does;
- the conditions of ``while``, ``assert`` and of an ``if`` whose branches ``return``,
  ``break`` or ``continue`` must be Python values (``python_bool``), and ``for`` may not
  iterate over a DataNode: an error names the line when the pipeline is traced;
- every call ``f(...)`` becomes ``__chute.call(f, ...)``, which converts ``f`` first when
  it is a user function or method (not chute's, the standard library's or an installed
  package's, and not marked :func:`do_not_convert`).

Functions defined inside a converted function are converted with it. The helpers that
the rewritten code calls are in chute.pipeline.autograph_ops; the semantics and limits
are in docs/conditionals.md.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import sysconfig
import textwrap
import types
from collections.abc import Callable
from typing import Any, TypeVar

from chute.pipeline import autograph_ops

__all__ = ["convert", "do_not_convert", "is_converted"]

_F = TypeVar("_F", bound=Callable[..., Any])

HELPER = "__chute"
_MARK = "__chute_do_not_convert__"
_SKIP_MODULES = ("chute", "nvidia", "numpy", "cupy", "scipy", "cv2", "PIL", "torch")
_SKIP_MODULES += ("tensorflow", "jax", "paddle", "builtins", "functools", "typing")
_SKIP_PATHS = tuple(
    p for p in {sysconfig.get_paths().get(k) for k in ("stdlib", "purelib", "platlib")} if p
)
# Calls left as they are: they read the calling frame (or are the helper's own).
_DIRECT_CALLS = {"super", "locals", "globals", "vars", "eval", "exec", "dir"}


def do_not_convert(func: _F | None = None) -> _F:
    """Keep ``func`` as written when a pipeline with ``enable_conditionals`` calls it
    (DALI's ``nvidia.dali.pipeline.do_not_convert``): its ``if`` statements stay Python
    ``if`` statements. Use it for functions that do not use DataNodes."""
    if func is None:
        return do_not_convert  # type: ignore[return-value]
    if getattr(func, "_is_pipeline_def", False):
        raise ValueError("Pipeline definition cannot be marked with @do_not_convert.")
    try:
        setattr(func, _MARK, True)
    except (AttributeError, TypeError):  # a builtin or a slotted callable: never converted
        pass
    return func


def is_converted(func: Any) -> bool:
    """True for functions made by :func:`convert` (or defined inside one)."""
    code = getattr(func, "__code__", None)
    return code is not None and HELPER in code.co_freevars


# original code object -> converted code object (None: cannot be converted)
_cache: dict[types.CodeType, types.CodeType | None] = {}


def convert(func: Any, required: bool = False) -> Any:
    """``func`` with its control flow rewritten for per-sample conditionals (see the
    module docstring); ``func`` itself where it is not user code. ``required``: raise
    when the source cannot be had (the pipeline function itself), else call it as is."""
    if getattr(func, _MARK, False):
        return func
    if inspect.ismethod(func):
        inner = convert(func.__func__, required)
        return func if inner is func.__func__ else types.MethodType(inner, func.__self__)
    if isinstance(func, functools.partial):
        inner = convert(func.func)
        return func if inner is func.func else functools.partial(inner, *func.args, **func.keywords)
    if not isinstance(func, (type, types.FunctionType, types.BuiltinFunctionType)):
        # a callable object: the __call__ its class defines or inherits
        call = next(
            (k.__dict__["__call__"] for k in type(func).__mro__ if "__call__" in k.__dict__), None
        )
        if isinstance(call, types.FunctionType) and not getattr(func, _MARK, False):
            method = types.MethodType(call, func)
            converted = convert(method)
            return func if converted is method else converted
    if not isinstance(func, types.FunctionType) or is_converted(func):
        return func
    if not required and (func.__name__ == "<lambda>" or _library_code(func)):
        return func
    code = func.__code__
    if code not in _cache:
        _cache[code] = _converted_code(func, required)
    new_code = _cache[code]
    if new_code is None:
        return func
    cells = dict(zip(code.co_freevars, func.__closure__ or (), strict=True))
    cells[HELPER] = types.CellType(autograph_ops)
    closure = tuple(cells[name] for name in new_code.co_freevars)
    out = types.FunctionType(new_code, func.__globals__, func.__name__, func.__defaults__, closure)
    out.__kwdefaults__ = func.__kwdefaults__
    out.__dict__.update(func.__dict__)
    functools.update_wrapper(out, func, assigned=("__module__", "__qualname__", "__doc__"))
    return out


autograph_ops.converted_function = convert


def _library_code(func: types.FunctionType) -> bool:
    module = getattr(func, "__module__", None) or ""
    if module.split(".")[0] in _SKIP_MODULES:
        return True
    return func.__code__.co_filename.startswith(_SKIP_PATHS)


def _converted_code(func: types.FunctionType, required: bool) -> types.CodeType | None:
    try:
        source = textwrap.dedent(inspect.getsource(func))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, IndentationError) as exc:
        if required:
            raise RuntimeError(
                f"enable_conditionals: cannot read the source of {func.__qualname__} to "
                f"rewrite its `if` statements ({exc}); define it in a file"
            ) from None
        return None
    definition = tree.body[0] if tree.body else None
    if not isinstance(definition, (ast.FunctionDef, ast.AsyncFunctionDef)):
        if required:
            raise RuntimeError(
                f"enable_conditionals: {func.__qualname__} is not a `def` function; "
                "define the pipeline with `def`"
            )
        return None
    definition.decorator_list = []
    ast.increment_lineno(tree, func.__code__.co_firstlineno - 1)
    free = list(func.__code__.co_freevars)
    rewritten = _Rewrite(func.__qualname__, "__class__" in free).visit(definition)
    factory = ast.FunctionDef(
        name="__chute_factory",
        args=ast.arguments(
            posonlyargs=[],
            args=[ast.arg(arg=name) for name in [HELPER, *free]],
            kwonlyargs=[],
            kw_defaults=[],
            defaults=[],
        ),
        body=[rewritten, ast.Return(value=ast.Name(id=definition.name, ctx=ast.Load()))],
        decorator_list=[],
        returns=None,
        type_params=[],
    )
    module = ast.fix_missing_locations(ast.Module(body=[factory], type_ignores=[]))
    try:
        code = compile(module, func.__code__.co_filename, "exec")
    except SyntaxError as exc:  # e.g. `global x` inside a branch that assigns x
        if required:
            raise RuntimeError(
                f"enable_conditionals: {func.__qualname__} cannot be rewritten: {exc.msg} "
                f"(line {exc.lineno})"
            ) from None
        return None
    namespace: dict[str, Any] = {}
    exec(code, func.__globals__, namespace)
    made = namespace["__chute_factory"](autograph_ops, *[None] * len(free))
    return made.__code__


def _stores(statements: list[ast.stmt]) -> list[str]:
    """The variables that ``statements`` assign, in order of appearance (nested functions,
    classes, lambdas and comprehensions have scopes of their own and are not entered)."""
    names: dict[str, None] = {}

    def visit(node: ast.AST) -> None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names[node.name] = None
            return
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp)):
            return
        if isinstance(node, ast.GeneratorExp):
            return
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names[node.id] = None
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names[(alias.asname or alias.name).split(".")[0]] = None
        for child in ast.iter_child_nodes(node):
            visit(child)

    for statement in statements:
        visit(statement)
    return [n for n in names if not n.startswith(HELPER)]


def _jumps(statements: list[ast.stmt]) -> str | None:
    """The first ``return``/``break``/``continue``/``yield`` that would leave a branch
    (those inside nested functions, or loops for break/continue, stay inside it)."""

    def visit(node: ast.AST, in_loop: bool) -> str | None:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return None
        if isinstance(node, ast.Return):
            return "`return`"
        if isinstance(node, (ast.Yield, ast.YieldFrom, ast.Await)):
            return f"`{type(node).__name__.lower()}`"
        if isinstance(node, (ast.Break, ast.Continue)) and not in_loop:
            return f"`{type(node).__name__.lower()}`"
        loop = in_loop or isinstance(node, (ast.For, ast.AsyncFor, ast.While))
        for child in ast.iter_child_nodes(node):
            found = visit(child, loop)
            if found:
                return found
        return None

    for statement in statements:
        found = visit(statement, False)
        if found:
            return found
    return None


def _helper(attr: str) -> ast.Attribute:
    return ast.Attribute(value=ast.Name(id=HELPER, ctx=ast.Load()), attr=attr, ctx=ast.Load())


def _call(attr: str, *args: ast.expr, **kwargs: ast.expr) -> ast.Call:
    return ast.Call(
        func=_helper(attr),
        args=list(args),
        keywords=[ast.keyword(arg=k, value=v) for k, v in kwargs.items()],
    )


def _thunk(expr: ast.expr) -> ast.Lambda:
    empty = ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[])
    return ast.Lambda(args=empty, body=expr)


def _const(value: Any) -> ast.Constant:
    return ast.Constant(value=value)


class _Rewrite(ast.NodeTransformer):
    """The rewriting described in the module docstring, for one function's definition."""

    def __init__(self, function: str, has_class_cell: bool):
        self.function = function
        self.has_class_cell = has_class_cell
        self.counter = itertools.count()

    def where(self, node: ast.AST, what: str) -> str:
        return f"the {what} at line {node.lineno} of {self.function}()"

    # ---- statements --------------------------------------------------------------------------
    def visit_ClassDef(self, node: ast.ClassDef) -> ast.ClassDef:
        # a class body's own `if`s stay as they are (they run once, at definition); its
        # methods are converted
        node.body = [s if isinstance(s, ast.If) else self.visit(s) for s in node.body]
        return node

    def visit_If(self, node: ast.If) -> Any:
        where = self.where(node, "if")
        jump = _jumps([*node.body, *node.orelse])
        names = _stores([*node.body, *node.orelse])
        self.generic_visit(node)
        if jump:  # Python-valued conditions only
            node.test = _call(
                "python_bool", node.test, _const(where), _const(f"an `if` that has {jump}")
            )
            return node
        k = next(self.counter)
        params = ast.arguments(
            posonlyargs=[],
            args=[ast.arg(arg=n) for n in names],
            kwonlyargs=[],
            kw_defaults=[],
            defaults=[],
        )
        result = ast.Return(
            value=ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load()) for n in names], ctx=ast.Load())
        )
        body = ast.FunctionDef(
            name=f"{HELPER}_if_{k}",
            args=params,
            body=[*node.body, result],
            decorator_list=[],
            returns=None,
            type_params=[],
        )
        orelse = ast.FunctionDef(
            name=f"{HELPER}_else_{k}",
            args=params,
            body=[*node.orelse, result],
            decorator_list=[],
            returns=None,
            type_params=[],
        )
        values = ast.Tuple(
            elts=[_call("load", _thunk(ast.Name(id=n, ctx=ast.Load())), _const(n)) for n in names],
            ctx=ast.Load(),
        )
        branch = _call(
            "if_stmt",
            node.test,
            ast.Name(id=body.name, ctx=ast.Load()),
            ast.Name(id=orelse.name, ctx=ast.Load()),
            values,
            ast.Tuple(elts=[_const(n) for n in names], ctx=ast.Load()),
            _const(where),
        )
        if names:
            target = ast.Tuple(
                elts=[ast.Name(id=n, ctx=ast.Store()) for n in names], ctx=ast.Store()
            )
            assign: ast.stmt = ast.Assign(targets=[target], value=branch)
        else:
            assign = ast.Expr(value=branch)
        out = [body, orelse, assign]
        for statement in out:
            ast.copy_location(statement, node)
        return out

    def visit_While(self, node: ast.While) -> ast.While:
        self.generic_visit(node)
        where = self.where(node, "while")
        node.test = _call("python_bool", node.test, _const(where), _const("a `while` loop"))
        return node

    def visit_Assert(self, node: ast.Assert) -> ast.Assert:
        self.generic_visit(node)
        where = self.where(node, "assert")
        node.test = _call("python_bool", node.test, _const(where), _const("an `assert`"))
        return node

    def visit_For(self, node: ast.For) -> ast.For:
        self.generic_visit(node)
        node.iter = _call("iterable", node.iter, _const(self.where(node, "for")))
        return node

    # ---- expressions -------------------------------------------------------------------------
    def visit_IfExp(self, node: ast.IfExp) -> ast.Call:
        self.generic_visit(node)
        where = self.where(node, "conditional expression")
        return _call("if_exp", node.test, _thunk(node.body), _thunk(node.orelse), _const(where))

    def visit_BoolOp(self, node: ast.BoolOp) -> ast.Call:
        self.generic_visit(node)
        is_and = isinstance(node.op, ast.And)
        where = self.where(node, "`and`" if is_and else "`or`")
        first, *rest = node.values
        return _call(
            "and_" if is_and else "or_", first, *[_thunk(v) for v in rest], where=_const(where)
        )

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.expr:
        self.generic_visit(node)
        if isinstance(node.op, ast.Not):
            return _call("not_", node.operand)
        return node

    def visit_Compare(self, node: ast.Compare) -> ast.expr:
        self.generic_visit(node)
        if len(node.ops) == 1:
            return node
        ops = ast.Tuple(elts=[_const(type(op).__name__) for op in node.ops], ctx=ast.Load())
        operands = ast.Tuple(elts=[_thunk(c) for c in node.comparators], ctx=ast.Load())
        where = _const(self.where(node, "comparison"))
        return _call("compare_chain", node.left, ops, operands, where)

    def visit_Call(self, node: ast.Call) -> ast.Call:
        self.generic_visit(node)
        func = node.func
        if isinstance(func, ast.Name) and func.id in _DIRECT_CALLS:
            if func.id == "super" and not node.args and self.has_class_cell:
                node.args = [ast.Name(id="__class__", ctx=ast.Load()), self._first_arg()]
            return node
        return ast.Call(func=_helper("call"), args=[func, *node.args], keywords=node.keywords)

    def _first_arg(self) -> ast.expr:
        return ast.Name(id=self.first_arg or "self", ctx=ast.Load())

    first_arg: str | None = None

    def visit_FunctionDef(self, node: ast.FunctionDef) -> ast.FunctionDef:
        outer = self.first_arg
        args = [*node.args.posonlyargs, *node.args.args]
        self.first_arg = args[0].arg if args else None
        self.generic_visit(node)
        self.first_arg = outer
        return node

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]
