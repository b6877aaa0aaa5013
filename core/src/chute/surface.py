"""``chute.fn`` and ``chute.ops`` as generated from the operator registry.

Every operator class registered with :func:`chute.runtime.registry.register`
gets, from its schema name ("decoders.image"):

- ``fn.decoders.image``: a function with the schema's real signature and a
  docstring that lists the arguments (:func:`make_fn`, :func:`describe`);
- ``ops.decoders.Image``: the class itself, for DALI's legacy API;
- its DALI legacy names ("image_decoder"): ``fn.image_decoder`` and
  ``ops.ImageDecoder``.

:func:`fn_entries` and :func:`ops_entries` list the public names with what
they stand for (for stubs and the docs); :func:`populate` writes them into the
``chute.fn`` / ``chute.ops`` modules and their sub-namespaces (``__all__``
included), creating a namespace module where no module of that name exists.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from chute.graph.schema import COMMON_ARGS, REQUIRED
from chute.runtime.operator import Operator
from chute.runtime.registry import Entry, functions, operators

__all__ = ["describe", "fn_entries", "make_fn", "ops_entries", "ops_name", "populate"]


def make_fn(
    op_class: type[Operator], name: str | None = None, alias_of: str | None = None
) -> Callable[..., Any]:
    """Return ``fn.x`` for an operator class: a function with a real signature and docstring."""
    schema = op_class.schema
    public = name or schema.name

    def fn(*inputs: Any, **kwargs: Any) -> Any:
        init = {k: kwargs.pop(k) for k in list(kwargs) if k == "device"}
        return op_class(**init)(*inputs, **kwargs)

    params = [inspect.Parameter(n, inspect.Parameter.POSITIONAL_ONLY) for n in schema.inputs]
    if schema.variadic:
        params = [inspect.Parameter("inputs", inspect.Parameter.VAR_POSITIONAL)]
    for arg in schema.args:
        default = inspect.Parameter.empty if arg.default is REQUIRED else arg.default
        params.append(inspect.Parameter(arg.name, inspect.Parameter.KEYWORD_ONLY, default=default))
    for common in COMMON_ARGS:
        if common not in schema.arg_index:
            params.append(inspect.Parameter(common, inspect.Parameter.KEYWORD_ONLY, default=None))
    namespace, _, short = public.rpartition(".")
    fn.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    fn.__name__ = short
    fn.__qualname__ = short
    fn.__module__ = "chute.fn" + (f".{namespace}" if namespace else "")
    doc = describe(op_class)
    if alias_of:
        doc = f"Legacy alias of ``fn.{alias_of}`` (DALI's name before 1.0).\n\n{doc}"
    fn.__doc__ = doc
    fn.op_class = op_class  # type: ignore[attr-defined]
    fn.alias_of = alias_of  # type: ignore[attr-defined]
    return fn


def describe(op_class: type[Operator]) -> str:
    """The docstring of ``fn.x``: the class docstring plus one line per argument."""
    schema = op_class.schema
    lines = [inspect.cleandoc(op_class.__doc__ or schema.doc or schema.name), ""]
    lines.append(f"Backends: {', '.join(schema.devices)}.")
    if schema.inputs:
        lines.append(f"Inputs: {', '.join(schema.inputs)}.")
    if schema.args:
        lines += ["", "Arguments:"]
        for arg in schema.args:
            default = "required" if arg.default is REQUIRED else f"default {arg.default!r}"
            per = ", per-sample" if arg.per_sample else ""
            lines.append(f"    {arg.name} ({arg.type}, {default}{per}): {arg.doc}")
    return "\n".join(lines)


def camel(snake: str) -> str:
    """DALI's class name for a function name: "image_random_crop" -> "ImageRandomCrop"."""
    return "".join(part[:1].upper() + part[1:] for part in snake.split("_"))


def ops_name(entry: Entry) -> str:
    """The dotted ``ops`` name of an operator: "decoders.image" -> "decoders.Image"."""
    namespace, _, short = entry.name.rpartition(".")
    name = entry.ops_name or camel(short)
    return f"{namespace}.{name}" if namespace else name


_FN_ENTRIES: tuple[tuple[str, Callable[..., Any]], ...] | None = None


def fn_entries() -> tuple[tuple[str, Callable[..., Any]], ...]:
    """(dotted name under ``chute.fn``, function), sorted: operators, legacy names, functions.

    The functions are made once: these are the objects ``chute.fn`` holds.
    """
    global _FN_ENTRIES
    if _FN_ENTRIES is None:
        import chute.fn  # noqa: F401  (registers fn.math; it calls this function itself)

        if _FN_ENTRIES is None:
            _FN_ENTRIES = _make_fn_entries()
    return _FN_ENTRIES


def _make_fn_entries() -> tuple[tuple[str, Callable[..., Any]], ...]:
    found: dict[str, Callable[..., Any]] = {}
    for name, entry in operators().items():
        found[name] = make_fn(entry.op_class, name)
        for legacy in entry.legacy:
            found[legacy] = make_fn(entry.op_class, legacy, alias_of=name)
    for name, func in functions().items():
        found[name] = func
    return tuple(sorted(found.items()))


def ops_entries() -> tuple[tuple[str, type[Operator]], ...]:
    """(dotted name under ``chute.ops``, operator class), sorted; legacy names included."""
    import chute.ops  # noqa: F401  (its modules register the operators)

    found: dict[str, type[Operator]] = {}
    for entry in operators().values():
        names = [ops_name(entry), *(camel(n) for n in entry.legacy), *entry.ops_aliases]
        for name in names:
            known = found.setdefault(name, entry.op_class)
            if known is not entry.op_class:
                raise ValueError(f"ops.{name} names both {known.__name__} and {entry.name}")
    return tuple(sorted(found.items()))


def populate(root: ModuleType, entries: tuple[tuple[str, Any], ...]) -> list[str]:
    """Bind every dotted name of ``entries`` under ``root``; return root's sorted ``__all__``."""
    for dotted, value in entries:
        namespace, _, short = dotted.rpartition(".")
        module = _namespace(root, namespace) if namespace else root
        setattr(module, short, value)
        _publish(module, short)
    return sorted(root.__dict__.setdefault("__all__", []))


def _namespace(root: ModuleType, dotted: str) -> ModuleType:
    """The module ``root.<dotted>``: an existing one (``chute.ops.random``) or a new one."""
    module = root
    for part in dotted.split("."):
        full = f"{module.__name__}.{part}"
        child = sys.modules.get(full)
        if child is None:
            child = ModuleType(full, f"``{full.replace('chute.', '', 1)}.*`` operators.")
            child.__all__ = []  # type: ignore[attr-defined]
            sys.modules[full] = child
        if module.__dict__.get(part) is not child:
            setattr(module, part, child)
        _publish(module, part)
        module = child
    return module


def _publish(module: ModuleType, name: str) -> None:
    public = module.__dict__.setdefault("__all__", [])
    if name not in public:
        public.append(name)
        public.sort()
