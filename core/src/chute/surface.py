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
import threading
import warnings
from collections.abc import Callable
from typing import Any

from chute.graph.schema import COMMON_ARGS, REQUIRED
from chute.runtime.operator import Operator
from chute.runtime.registry import functions, operators

__all__ = ["describe", "fn_entries", "make_fn", "warn_deprecated"]


def make_fn(
    op_class: type[Operator], name: str | None = None, alias_of: str | None = None
) -> Callable[..., Any]:
    """Return ``fn.x`` for an operator class: a function with a real signature and docstring."""
    schema = op_class.schema
    public = name or schema.name

    def fn(*inputs: Any, **kwargs: Any) -> Any:
        if alias_of:
            warn_deprecated(public, alias_of)
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
        when = "before 2.0" if public.startswith("experimental.") else "before 1.0"
        doc = f"Legacy alias of ``fn.{alias_of}`` (DALI's name {when}).\n\n{doc}"
    fn.__doc__ = doc
    fn.op_class = op_class  # type: ignore[attr-defined]
    fn.alias_of = alias_of  # type: ignore[attr-defined]
    return fn


_warned: set[str] = set()
_warned_lock = threading.Lock()


def warn_deprecated(name: str, in_favor_of: str) -> None:
    """DALI's warning for a pre-1.0 operator name, once per name per process.

    The text is DALI's first line ("WARNING: `file_reader` is now deprecated. Use
    `readers.file` instead.") and a line saying why; category DeprecationWarning.
    """
    with _warned_lock:
        if name in _warned:
            return
        _warned.add(name)
    family = in_favor_of.split(".", 1)[0] if "." in in_favor_of else None
    if name.startswith("experimental."):
        why = (
            f"DALI 2.0 moved the operator out of fn.experimental; fn.{name} stays as an "
            f"alias of fn.{in_favor_of}."
        )
    elif family:
        why = (
            f"DALI 1.0 moved these operators into the fn.{family} submodule under new names; "
            f"fn.{name} stays as an alias of fn.{in_favor_of}."
        )
    else:
        why = f"fn.{name} stays as an alias of fn.{in_favor_of}."
    with warnings.catch_warnings():
        warnings.simplefilter("default")  # shown even where DeprecationWarnings are ignored
        warnings.warn(
            f"WARNING: `{name}` is now deprecated. Use `{in_favor_of}` instead.\n{why}",
            DeprecationWarning,
            stacklevel=3,
        )


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


# DALI 2.4's deprecated pre-1.0 names -> the operator they stand for. Operators register
# their own (``@register(legacy=...)``); these fill in where one does not, when its
# operator exists in chute.
DALI_LEGACY_NAMES = {
    "audio_decoder": "decoders.audio",
    "caffe2_reader": "readers.caffe2",
    "caffe_reader": "readers.caffe",
    "coco_reader": "readers.coco",
    "coin_flip": "random.coin_flip",
    "file_reader": "readers.file",
    "image_decoder": "decoders.image",
    "image_decoder_crop": "decoders.image_crop",
    "image_decoder_random_crop": "decoders.image_random_crop",
    "image_decoder_slice": "decoders.image_slice",
    "mxnet_reader": "readers.mxnet",
    "nemo_asr_reader": "readers.nemo_asr",
    "normal_distribution": "random.normal",
    "numpy_reader": "readers.numpy",
    "sequence_reader": "readers.sequence",
    "tfrecord_reader": "readers.tfrecord",
    "uniform": "random.uniform",
    "video_reader": "readers.video",
    "video_reader_resize": "readers.video_resize",
}

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
    registered = operators()
    for legacy, name in DALI_LEGACY_NAMES.items():
        if legacy not in found and name in registered:
            found[legacy] = make_fn(registered[name].op_class, legacy, alias_of=name)
    for name, func in functions().items():
        found[name] = func
    return tuple(sorted(found.items()))
