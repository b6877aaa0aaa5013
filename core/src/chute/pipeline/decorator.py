"""``@pipeline_def``: a function that wires operators becomes a factory of Pipelines."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from chute.pipeline import Pipeline, _as_tuple
from chute.pipeline.options import DECORATOR_ONLY, DEFAULTS, closest_name, unknown_argument

__all__ = ["pipeline_def"]


def pipeline_def(fn: Callable | None = None, **pipeline_kwargs: Any) -> Callable:
    """Turn a function that wires operators into a factory of Pipelines.

    Pipeline arguments (batch_size, num_threads, device_id, seed, ... every
    argument of :class:`Pipeline`) may be given to the decorator and overridden
    when calling the factory; the other call arguments go to the function.
    ``debug=True`` gives a pipeline that runs the function eagerly on every
    ``run()`` (see :mod:`chute.debug`). ``enable_conditionals`` is accepted (DALI's
    ``if`` on DataNodes is not traced; use arithmetic or a ``mask``).
    A misspelled pipeline argument raises a TypeError naming the closest one.
    """
    for name in pipeline_kwargs:
        if name not in DEFAULTS and name not in DECORATOR_ONLY:
            raise unknown_argument("pipeline_def", name, [*DEFAULTS, *DECORATOR_ONLY])
    pipeline_kwargs.pop("enable_conditionals", None)
    debug_default = pipeline_kwargs.pop("debug", False)

    def decorate(func: Callable) -> Callable:
        sig = inspect.signature(func)
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in sig.parameters.values())

        @functools.wraps(func)
        def create(*args: Any, **kwargs: Any) -> Pipeline:
            debug = debug_default
            if "debug" in kwargs and "debug" not in sig.parameters:
                debug = kwargs.pop("debug")
            if "enable_conditionals" not in sig.parameters:
                kwargs.pop("enable_conditionals", None)
            ctor = {k: kwargs.pop(k) for k in list(kwargs) if k in DEFAULTS}
            if not takes_any:
                for name in kwargs:
                    if name not in sig.parameters and closest_name(name, list(DEFAULTS)):
                        raise unknown_argument(func.__name__, name, list(DEFAULTS))
            if debug:  # eager: operators run on each run(), see chute.debug
                from chute.debug import DebugPipeline

                return DebugPipeline(func, args, kwargs, **{**pipeline_kwargs, **ctor})
            pipe = Pipeline(**{**pipeline_kwargs, **ctor})
            with pipe:
                outputs = func(*args, **kwargs)
            pipe.set_outputs(*_as_tuple(outputs))
            return pipe

        create.__signature__ = sig  # type: ignore[attr-defined]
        # the signature shows the function's own arguments; callers that pass pipeline
        # arguments (device_id, ...) to a factory they were given look for this mark
        create.takes_pipeline_args = True  # type: ignore[attr-defined]
        return create

    return decorate(fn) if fn is not None else decorate
