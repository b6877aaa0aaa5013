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
from collections.abc import Callable
from typing import Any

from chute.graph.schema import COMMON_ARGS, REQUIRED
from chute.runtime.deprecated import DEPRECATED, warn_deprecated
from chute.runtime.operator import Operator
from chute.runtime.registry import functions, operators

__all__ = ["describe", "fn_entries", "make_fn"]


def make_fn(
    op_class: type[Operator], name: str | None = None, alias_of: str | None = None
) -> Callable[..., Any]:
    """Return ``fn.x`` for an operator class: a function with a real signature and docstring."""
    schema = op_class.schema
    public = name or schema.name

    deprecated = DEPRECATED.get(public)

    def fn(*inputs: Any, **kwargs: Any) -> Any:
        if deprecated is not None:
            warn_deprecated(deprecated, "fn")
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
        doc = f"Legacy alias of ``fn.{alias_of}`` (a deprecated DALI name).\n\n{doc}"
    elif deprecated is not None:
        doc = f"{doc}\n\nDeprecated in DALI 2.4 (warns once when used): {deprecated.why}"
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
    registered = operators()
    for name, entry in registered.items():
        found[name] = make_fn(entry.op_class, name)
    for old in DEPRECATED.values():  # DALI's deprecated names, where chute has the operator
        target = old.use_instead
        if old.fn_name not in found and target in registered:
            found[old.fn_name] = make_fn(registered[target].op_class, old.fn_name, alias_of=target)
    for name, func in functions().items():
        found[name] = func
    return tuple(sorted(found.items()))
