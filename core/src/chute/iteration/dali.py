"""DALI's iterator signature, written once for the DALI-named iterators of every plugin.

DALI's ``DALIGenericIterator`` (torch, paddle, jax), ``DALIClassificationIterator`` and
``DALIRaggedIterator`` take ``pipelines``, maybe ``output_map``, then the same keywords in
the same order: those of :class:`chute.iteration.Iterator` (``size``, ``reader_name``,
``auto_reset``, ``fill_last_batch``, ``dynamic_shape``, ``last_batch_padded``,
``last_batch_policy``, ``prepare_first_batch``). :func:`dali_iterator` gives a plugin's
``__init__(self, *leading, **options)`` that signature, with DALI's defaults, so that
``help()`` and ``inspect.signature`` show it, positional arguments bind as in DALI, and a
misspelled keyword names the closest valid one.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from chute.pipeline.options import unknown_argument

__all__ = ["dali_iterator", "iterator_keywords", "iterator_parameters"]

F = TypeVar("F", bound=Callable[..., Any])


def iterator_keywords() -> list[inspect.Parameter]:
    """The keywords after ``output_map`` of :class:`chute.iteration.Iterator`, in order."""
    from chute.iteration import Iterator

    params = list(inspect.signature(Iterator.__init__).parameters.values())
    return params[3:]  # self, pipelines, output_map


def iterator_parameters(
    leading: Sequence[str],
    after: Mapping[str, Sequence[tuple[str, Any]]] | None = None,
    omit: Sequence[str] = (),
    keyword_only: Sequence[tuple[str, Any]] = (),
) -> list[inspect.Parameter]:
    """The parameters after ``self`` that :func:`dali_iterator` gives, in order.

    The arguments are :func:`dali_iterator`'s; ``chute.tools.plugin_stubs`` writes the
    plugins' ``.pyi`` stubs from the same list.
    """
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter(name, positional) for name in leading]
    for keyword in iterator_keywords():
        if keyword.name not in omit:
            params.append(keyword)
        for name, default in (after or {}).get(keyword.name, ()):
            params.append(inspect.Parameter(name, positional, default=default))
    params += [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
        for name, default in keyword_only
    ]
    return params


def dali_iterator(
    *leading: str,
    after: Mapping[str, Sequence[tuple[str, Any]]] | None = None,
    omit: Sequence[str] = (),
    keyword_only: Sequence[tuple[str, Any]] = (),
) -> Callable[[F], F]:
    """Give ``__init__(self, *leading, **options)`` DALI's iterator signature.

    ``leading``: the names before the keywords (``"pipelines", "output_map"``);
    ``after``: more arguments after one of the keywords, as DALI places them
    (``{"reader_name": [("output_types", None)]}``); ``omit``: keywords this iterator
    does not take (DALI's JAX iterator has no ``fill_last_batch``); ``keyword_only``:
    chute's own, after all of DALI's. The method receives every argument by name.
    """
    positional = inspect.Parameter.POSITIONAL_OR_KEYWORD
    params = [inspect.Parameter("self", positional)]
    params += iterator_parameters(leading, after, omit, keyword_only)
    signature = inspect.Signature(params)
    valid = [p.name for p in params[1:]]

    def decorate(init: F) -> F:
        owner = init.__qualname__.split(".")[0]

        @functools.wraps(init)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            for name in kwargs:
                if name not in valid:
                    raise unknown_argument(owner, name, valid)
            bound = signature.bind(self, *args, **kwargs)
            bound.apply_defaults()
            arguments = dict(bound.arguments)
            del arguments["self"]
            return init(self, **arguments)

        wrapper.__signature__ = signature  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
